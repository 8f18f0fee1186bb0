package inspect

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRedactor: every Secret value (whole, and each line of a multi-line
// one) is replaced; values too short or equal to a name the report prints
// anyway are left alone.
func TestRedactor(t *testing.T) {
	snap := &Snapshot{
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "postgres-0"}}},
		Secrets: map[ObjectKey]*corev1.Secret{{KindSecret, "ns", "s"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
			Data: map[string][]byte{"pw": []byte("hunter2-long"), "pem": []byte("-----BEGIN-----\nAAAAsecretline\n"), "short": []byte("yes"), "name": []byte("postgres-0")}}},
	}
	r := NewRedactor(snap)
	got := r.String(`subPath "hunter2-long/x" in pod postgres-0; line AAAAsecretline; yes`)
	want := `subPath "` + Redacted + `/x" in pod postgres-0; line ` + Redacted + `; yes`
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	items := r.Items([]Use{{Reason: "a hunter2-long", StateReason: "b hunter2-long"}})
	if strings.Contains(items[0].Reason+items[0].StateReason, "hunter2") {
		t.Errorf("Items left a value: %+v", items[0])
	}
	var nilR *Redactor
	if nilR.String("x") != "x" {
		t.Error("a nil Redactor must pass text through")
	}
}

// TestRedactorSharesValues: the redactor keeps the snapshot's Secret bytes,
// not a copy of them, so that it costs no memory in proportion to the
// Secrets' data (the controller builds one each round, status -A one for
// every Secret); a line of a multi-line value is a part of them too.
func TestRedactorSharesValues(t *testing.T) {
	big := []byte(strings.Repeat("A", 1<<20))
	pem := []byte("-----BEGIN KEY-----\nQUJDREVGR0hJSktMTU5PUA\n-----END KEY-----")
	snap := &Snapshot{Secrets: map[ObjectKey]*corev1.Secret{{KindSecret, "ns", "s"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
		Data: map[string][]byte{"big": big, "pem": pem}}}}
	r := NewRedactor(snap)
	within := func(v string, b []byte) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(v))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= start && p+uintptr(len(v)) <= start+uintptr(len(b))
	}
	found := 0
	for _, v := range r.values {
		if !within(v, big) && !within(v, pem) {
			t.Errorf("value %.20q... is a copy, not the snapshot's bytes", v)
		}
		if v == "QUJDREVGR0hJSktMTU5PUA" {
			found++
		}
	}
	if found != 1 || len(r.values) != 5 {
		t.Errorf("values: %d (want 5: big, pem whole and its 3 lines), the middle line %d times", len(r.values), found)
	}
	if got := r.String("x QUJDREVGR0hJSktMTU5PUA y"); got != "x "+Redacted+" y" {
		t.Errorf("a line of a multi-line value: got %q", got)
	}
	if got := r.String("a " + string(big) + " b"); got != "a "+Redacted+" b" {
		t.Errorf("the large value is not redacted (%d bytes back)", len(got))
	}
}

// TestSecretDerived: secretKeyRef, envFrom secretRef (by prefix) and
// literals that refer to them are Secret data; a later plain entry of the
// same name is not.
func TestSecretDerived(t *testing.T) {
	ref := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{}}},
		Env: []corev1.EnvVar{ref("T"), {Name: "D", Value: "a-$(T)"}, {Name: "E", Value: "$(S_X)"}, {Name: "P", Value: "plain"},
			ref("O"), {Name: "O", Value: "over"}, {Name: "S_Y", Value: "set"}}}}}}
	secret := secretDerived(pod, "c")
	for name, want := range map[string]bool{"T": true, "D": true, "E": true, "S_Z": true, "P": false, "O": false, "S_Y": false, "HOME": false} {
		if secret(name) != want {
			t.Errorf("%s: secret = %v, want %v", name, !want, want)
		}
	}
}
