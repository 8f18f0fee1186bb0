package render

import "testing"

// The same value gives the same fingerprint within a run, another value or
// another run's key another one.
func TestDiffFingerprint(t *testing.T) {
	r, other := Diff{HMACKey: []byte("k")}, Diff{HMACKey: []byte("l")}
	a := r.fingerprint("content", []byte("a"))
	if a != r.fingerprint("content", []byte("a")) || a == r.fingerprint("content", []byte("b")) || a == other.fingerprint("content", []byte("a")) {
		t.Error("fingerprint")
	}
}
