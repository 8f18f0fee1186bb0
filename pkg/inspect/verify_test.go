package inspect

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

// countingExecutor wraps an executor and records concurrency.
type countingExecutor struct {
	inner        containerread.Executor
	mu           sync.Mutex
	perContainer map[string]int
	running, max int32
	delay        time.Duration
}

func (c *countingExecutor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	n := atomic.AddInt32(&c.running, 1)
	defer atomic.AddInt32(&c.running, -1)
	c.mu.Lock()
	c.perContainer[t.Pod+"/"+t.Container]++
	if n > c.max {
		c.max = n
	}
	c.mu.Unlock()
	time.Sleep(c.delay)
	return c.inner.Exec(ctx, t, argv, stdout, stderr)
}

// TestVerifyWithScript runs the real script (dash or busybox) against
// volumes laid out as the kubelet does, through Verify.
func TestVerifyWithScript(t *testing.T) {
	sets := readtest.Shells(t)
	tools := sets["busybox"]
	if tools == nil {
		for _, s := range sets {
			tools = s
		}
	}
	root := t.TempDir()
	syncVol := filepath.Join(root, "in sync")
	staleVol := filepath.Join(root, "etc", "x;touch "+filepath.Join(root, "pwned"))
	readtest.AtomicVolume(t, syncVol, readtest.TS, map[string][]byte{"a": []byte("1"), "with-dash": []byte("d"), "bin": {0, 0xff}}, nil)
	readtest.AtomicVolume(t, staleVol, readtest.TS, map[string][]byte{"a": []byte("0"), "bin": {0, 0xff}}, nil)
	subFile := filepath.Join(root, "app.conf")
	if err := os.WriteFile(subFile, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", CreationTimestamp: metav1.NewTime(testNow.Add(-time.Minute))},
		Data: map[string]string{"a": "1", "with-dash": "d"}, BinaryData: map[string][]byte{"bin": {0, 0xff}}}
	var pods []corev1.Pod
	var items []Use
	for i, mp := range []string{syncVol, staleVol} {
		name := []string{"p0", "p1"}[i]
		pods = append(pods, *runningPod(name, corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}))
		it := volItem(ModeVolume, mp)
		it.Pod.Name = name
		items = append(items, it)
		sp := volItem(ModeSubPath, subFile)
		sp.Pod.Name, sp.Volume.SubPath = name, "a"
		items = append(items, sp)
		env := volItem(ModeEnvFrom, "")
		env.Pod.Name, env.Volume = name, nil
		items = append(items, env)
	}
	unmounted := volItem(ModeUnmounted, "")
	unmounted.Container = nil
	items = append(items, unmounted)
	snap := &Snapshot{Pods: pods, ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: cm}}
	ex := &countingExecutor{inner: &readtest.LocalExecutor{BinDir: readtest.ToolDir(t, tools), Env: []string{"a=1", "with-dash=d"}},
		perContainer: map[string]int{}, delay: 50 * time.Millisecond}
	var progress bytes.Buffer
	got := Verify(context.Background(), items, snap, ex, VerifyOptions{Now: func() time.Time { return testNow }, Concurrency: 1, Progress: &progress})
	want := []State{StateInSync, StateStale, StateCurrent, StatePending, StateStale, StateCurrent, StateNA}
	for i, it := range got {
		if it.State != want[i] {
			t.Errorf("item %d (%s %s): %s (%s), want %s", i, it.Pod.Name, it.Mode, it.State, it.StateReason, want[i])
		}
	}
	if got[0].SyncedAt == nil || got[0].SyncedAt.UTC() != time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) {
		t.Errorf("syncedAt = %v", got[0].SyncedAt)
	}
	for c, n := range ex.perContainer {
		if n != 1 {
			t.Errorf("%s: %d execs, want 1", c, n)
		}
	}
	if ex.max != 1 {
		t.Errorf("concurrency reached %d with --concurrency 1", ex.max)
	}
	if _, err := os.Stat(filepath.Join(root, "pwned")); err == nil {
		t.Error("hostile mount path ran a command")
	}
	if progress.Len() != 0 {
		t.Errorf("progress printed for a short run: %q", progress.String())
	}
}

// TestVerifySecretOverrideNotStale: `refresh` and `status --verify` of a
// ConfigMap without --secrets go through Verify: the use must not be stale
// (refresh would restart the workload on every run).
func TestVerifySecretOverrideNotStale(t *testing.T) {
	for _, listed := range []bool{false, true} {
		snap := secretSnapshot(listed)
		snap.Pods = []corev1.Pod{*secretOverridePod()}
		items, err := Build(snap, BuildOptions{Names: []ObjectKey{{KindConfigMap, "ns", "cm"}}})
		if err != nil {
			t.Fatal(err)
		}
		ex := &scriptedEnv{env: "DB_PASSWORD=" + secretValue + "\x00HOST=db\x00a=1\x00shared=cm-shared\x00token=" + secretValue + "\x00"}
		checked := 0
		for _, r := range VerifyUses(context.Background(), items, snap, ex, VerifyOptions{Now: func() time.Time { return testNow }}) {
			if r.Use.Mode != ModeEnvFrom {
				continue
			}
			checked++
			if r.Use.State == StateStale || leaks(r.Comparison) {
				t.Errorf("listed %v: %s (%s) %+v", listed, r.Use.State, r.Use.StateReason, r.Comparison.Env)
			}
			if r.Pod == nil {
				t.Error("result without its pod")
			}
		}
		if checked != 1 {
			t.Errorf("listed %v: %d envFrom uses verified, want 1", listed, checked)
		}
	}
}

// scriptedEnv answers the observation script with an environment only.
type scriptedEnv struct{ env string }

func (s *scriptedEnv) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	nonce, paths := argv[5], argv[7:]
	for i := range paths {
		io.WriteString(stdout, "P\x00"+string(rune('0'+i))+"\x00K\x00n\x00Q\x00\x00")
	}
	if argv[6] == "1" {
		io.WriteString(stdout, "V\x00"+s.env+nonce+"\x00")
	}
	io.WriteString(stdout, "Z\x00"+nonce+"\x00")
	return nil
}
