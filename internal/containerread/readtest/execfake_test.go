package readtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

const testTS = "..2024_05_06_07_08_09.123456789"

func runningPod(name string, spec corev1.PodSpec) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, c := range spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

// slowExecutor delays every exec, so that a run shows progress.
type slowExecutor struct {
	inner containerread.Executor
	delay time.Duration
}

func (s slowExecutor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	time.Sleep(s.delay)
	return s.inner.Exec(ctx, t, argv, stdout, stderr)
}

// TestVerifyFakeRoundTrip: what a Container holds comes back through
// ReadContainer unchanged, whatever bytes the files hold.
func TestVerifyFakeRoundTrip(t *testing.T) {
	files := map[string][]byte{
		"plain":        []byte("x"),
		"framing":      []byte("Z\x00cmsync-\x00Q\x00\x00P\x000\x00"),
		"dir/nested":   {0, 0, 0},
		"new\nline":    []byte("nl"),
		"big":          bytes.Repeat([]byte{0xfe}, 300),
		"empty":        {},
		"dir/sub/deep": []byte("deep"),
	}
	ex := &Executor{Containers: map[string]*Container{"ns/p/c": {
		Volumes: map[string]Volume{"/v": {Target: testTS, Files: files, Mode: 0o440}},
		Files:   map[string][]byte{"/f": []byte("file")},
		Dirs:    map[string]map[string][]byte{"/d": {}},
		Env:     map[string]string{"A": "1", "with-dash": "2"},
	}}}
	req := containerread.ExecRequest{Namespace: "ns", Pod: "p", Container: "c", Env: true,
		Paths: []containerread.PathRequest{{Path: "/v"}, {Path: "/f"}, {Path: "/d"}, {Path: "/nope"}}}
	obs := containerread.ReadContainer(context.Background(), ex, req, containerread.Options{MaxBytes: 100})
	if obs.Err != nil || obs.Execs != 1 {
		t.Fatalf("err %v, execs %d", obs.Err, obs.Execs)
	}
	v := obs.Paths["/v"]
	for p, want := range files {
		f := v.Files[p]
		sum := sha256.Sum256(want)
		switch {
		case f == nil:
			t.Errorf("%q missing", p)
		case len(want) > 100:
			if f.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%q: sha %q", p, f.SHA256)
			}
		case !bytes.Equal(f.Data, want) || f.Mode != 0o440:
			t.Errorf("%q: %q mode %o", p, f.Data, f.Mode)
		}
	}
	if string(obs.Paths["/f"].Files[""].Data) != "file" || obs.Paths["/d"].Kind != containerread.PathDir || obs.Paths["/nope"].Kind != containerread.PathMissing {
		t.Errorf("paths: %+v %+v %+v", obs.Paths["/f"], obs.Paths["/d"], obs.Paths["/nope"])
	}
	if obs.Env["with-dash"] != "2" {
		t.Errorf("env %v", obs.Env)
	}
}

// TestVerifyProgressAndFailures: through Verify, a container in sync, one
// without a shell, a forbidden exec and a container gone since the LIST.
func TestVerifyProgressAndFailures(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "1"}}
	snap := &inspect.Snapshot{ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cm"}: cm}}
	ex := &Executor{Containers: map[string]*Container{}}
	var items []inspect.Use
	for i, c := range []*Container{
		{Volumes: map[string]Volume{"/m": {Target: testTS, Files: map[string][]byte{"a": []byte("1")}}}},
		{NoShell: true},
		{Err: errors.New(`pods "p1" is forbidden: User "u" cannot create resource "pods/exec"`)},
		nil, // container gone since the LIST
	} {
		name := "p" + string(rune('0'+i))
		snap.Pods = append(snap.Pods, runningPod(name, spec))
		if c != nil {
			ex.Containers["ns/"+name+"/c"] = c
		}
		items = append(items, inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cm", Exists: true},
			Pod: inspect.PodRef{Name: name, Phase: "Running"}, Container: &inspect.ContainerRef{Name: "c", Type: inspect.ContainerRegular},
			Mode: inspect.ModeVolume, Volume: &inspect.VolumeRef{Name: "v", MountPath: "/m"}, Verdict: inspect.VerdictHotUpdate})
	}
	var progress bytes.Buffer
	slow := slowExecutor{inner: ex, delay: 150 * time.Millisecond}
	got := inspect.Verify(context.Background(), items, snap, slow, inspect.VerifyOptions{Progress: &progress, ProgressAfter: time.Nanosecond, Concurrency: 1})
	want := []struct {
		state  inspect.State
		reason string
	}{{inspect.StateInSync, ""}, {inspect.StateUnverifiable, "no shell"}, {inspect.StateUnverifiable, "forbidden"}, {inspect.StateUnverifiable, "not running"}}
	for i, w := range want {
		if got[i].State != w.state || !strings.Contains(got[i].StateReason, w.reason) {
			t.Errorf("%s: %s (%s), want %s %q", got[i].Pod.Name, got[i].State, got[i].StateReason, w.state, w.reason)
		}
	}
	if !strings.Contains(progress.String(), "/4 containers") || !strings.HasSuffix(progress.String(), "\r\033[K") {
		t.Errorf("progress = %q", progress.String())
	}
	if len(ex.Calls["ns/p0/c"]) != 1 {
		t.Errorf("calls %v", ex.Calls)
	}
}
