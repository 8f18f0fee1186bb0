package reconcile

import (
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func TestDigest(t *testing.T) {
	secret := []byte("controller key")
	cfg := object(map[string]string{"a": "1", "b": "2"})
	other := object(map[string]string{"x": "9"})
	other.Name = "other"
	base := Digest(secret, []Read{{Object: cfg}, {Object: other, Keys: []string{"x"}}})
	if !strings.HasPrefix(base, "v1.") {
		t.Fatalf("digest %q lacks its version", base)
	}
	same := map[string][]Read{
		"the order of reads": {{Object: other, Keys: []string{"x"}}, {Object: cfg}},
		"repeated keys":      {{Object: cfg}, {Object: other, Keys: []string{"x", "x"}}},
		"a key not read":     {{Object: cfg}, {Object: withKey(other, "y", "new"), Keys: []string{"x"}}},
	}
	for name, reads := range same {
		if got := Digest(secret, reads); got != base {
			t.Errorf("%s changed the digest", name)
		}
	}
	differ := map[string]struct {
		secret []byte
		reads  []Read
	}{
		"another key":            {[]byte("other key"), []Read{{Object: cfg}, {Object: other, Keys: []string{"x"}}}},
		"a value read":           {secret, []Read{{Object: withKey(cfg, "a", "10")}, {Object: other, Keys: []string{"x"}}}},
		"a key added to a whole": {secret, []Read{{Object: withKey(cfg, "c", "3")}, {Object: other, Keys: []string{"x"}}}},
		"binary":                 {secret, []Read{{Object: binaryKey(cfg, "a")}, {Object: other, Keys: []string{"x"}}}},
		"absent":                 {secret, []Read{{Object: cfg}, {Object: inspect.Object{Kind: other.Kind, Namespace: "ns", Name: "other"}, Keys: []string{"x"}}}},
		"a key read, missing":    {secret, []Read{{Object: cfg}, {Object: other, Keys: []string{"x", "z"}}}},
		"boundary":               {secret, []Read{{Object: object(map[string]string{"a": "12"})}, {Object: other, Keys: []string{"x"}}}},
	}
	for name, tc := range differ {
		if got := Digest(tc.secret, tc.reads); got == base {
			t.Errorf("%s did not change the digest", name)
		}
	}
}

func withKey(o inspect.Object, k, v string) inspect.Object {
	c := o
	c.Data = map[string][]byte{}
	for kk, vv := range o.Data {
		c.Data[kk] = vv
	}
	c.Data[k] = []byte(v)
	return c
}

func binaryKey(o inspect.Object, k string) inspect.Object {
	c := o
	c.BinaryKeys = map[string]bool{k: true}
	return c
}

// TestDigestOfOneObjectReadTwice: a consumer that reads one object twice
// with different keys (an env var and a volume's items) has one digest,
// whatever order its reads were found in.
func TestDigestOfOneObjectReadTwice(t *testing.T) {
	secret := []byte("controller key")
	cfg := object(map[string]string{"a": "1", "b": "2", "c": "3"})
	reads := []Read{{Object: cfg, Keys: []string{"b"}}, {Object: cfg, Keys: []string{"c", "a"}}, {Object: cfg}}
	want := Digest(secret, reads)
	for _, order := range [][]int{{1, 0, 2}, {2, 1, 0}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}} {
		var rs []Read
		for _, i := range order {
			rs = append(rs, reads[i])
		}
		if got := Digest(secret, rs); got != want {
			t.Errorf("reads in order %v: digest %s, want %s", order, got, want)
		}
	}
}
