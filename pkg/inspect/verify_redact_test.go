package inspect

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// TestVerifyErrorRedacted: malformed output is quoted a few bytes long,
// and not at all for a Secret use.
func TestVerifyErrorRedacted(t *testing.T) {
	long := "AAAAAAAA" + secretValue
	ex := &rawExecutor{out: "P\x000\x00K\x00f\x00F\x00\x00-rw-r--r--\x00" + long + "\x00"}
	obs := containerread.ReadContainer(context.Background(), ex, containerread.ExecRequest{Paths: []containerread.PathRequest{{Path: "/f"}}}, containerread.Options{MaxBytes: 10})
	if obs.Err == nil {
		t.Fatal("malformed output accepted")
	}
	cm := CompareUse(volItem(ModeVolume, "/f"), nil, cmObject(nil, nil), obs, CompareOptions{})
	if !strings.Contains(cm.Reason, `bad size "AAAAAAAA..."`) || strings.Contains(cm.Reason, secretValue) {
		t.Errorf("configmap reason: %s", cm.Reason)
	}
	it := volItem(ModeVolume, "/f")
	it.Object.Kind = KindSecret
	sec := CompareUse(it, nil, Object{Kind: KindSecret, Exists: true}, obs, CompareOptions{})
	if !strings.Contains(sec.Reason, "bad size") || strings.Contains(sec.Reason, "AAAA") {
		t.Errorf("secret reason: %s", sec.Reason)
	}
}

type rawExecutor struct{ out string }

func (r *rawExecutor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	io.WriteString(stdout, r.out)
	return nil
}
