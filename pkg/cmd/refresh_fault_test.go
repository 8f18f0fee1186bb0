package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The API server goes away in the middle of `refresh --wait` (a fault
// test): the patch of api-1 went through, the one of api-2 did not, and
// nothing can be observed any more. The run fails (exit 1) with a
// per-consumer summary: stderr says which target was changed and which
// failed, the result document gives each action's outcome with its
// consumers. Run again once the API server is back, it finishes the job:
// it annotates api-2 only and changes nothing that is already current.
func TestRefreshWaitLosesTheAPIServerSaysWhatChanged(t *testing.T) {
	const refused = `Patch "https://127.0.0.1:6443/api/v1/namespaces/ns/pods/api-2": dial tcp 127.0.0.1:6443: connect: connection refused`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	objs := []runtime.Object{cm}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{}}
	old := readtest.Volume{Target: "..2024_05_06_06_10_00.1", Files: map[string][]byte{"K": []byte("old")}}
	current := readtest.Volume{Target: "..2024_05_06_07_10_00.2", Files: map[string][]byte{"K": []byte("new")}}
	for _, name := range []string{"api-1", "api-2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}})
		ex.Containers["ns/"+name+"/app"] = &readtest.Container{Volumes: map[string]readtest.Volume{"/etc/cfg": old}}
	}
	client := fake.NewClientset(objs...)
	// down: the API server answers nothing. With api2Fails, the patch of
	// api-2 finds it gone, and it is down once api-1 is patched too (the
	// patches are sent concurrently, in either order).
	var down, api2Fails, api1Patched, api2Refused atomic.Bool
	api2Fails.Store(true)
	var patched []string
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errors.New(`Get "https://127.0.0.1:6443/api/v1/namespaces/ns/pods": dial tcp 127.0.0.1:6443: connect: connection refused`)
		}
		if a.GetVerb() != "patch" || a.GetResource().Resource != "pods" {
			return false, nil, nil
		}
		name := a.(k8stesting.PatchAction).GetName()
		if name == "api-2" && api2Fails.Load() {
			api2Refused.Store(true)
			down.Store(api1Patched.Load())
			return true, nil, errors.New(refused)
		}
		if name == "api-1" && api2Fails.Load() {
			api1Patched.Store(true)
			down.Store(api2Refused.Load())
		}
		patched = append(patched, name) // the fake's lock is held: no race
		// the kubelet re-syncs the annotated pod
		ex.Update("ns/"+name+"/app", func(c *readtest.Container) { c.Volumes["/etc/cfg"] = current })
		return false, nil, nil
	})
	run := func() (string, string, error) {
		out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
		o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
		o.Client, o.Cluster.Executor = client, ex
		if err := o.Complete(nil); err != nil {
			t.Fatal(err)
		}
		o.Namespace, o.Cluster.Access, o.Output, o.Timeout = "ns", denyingReviewer{}, "json", 2*time.Second
		err := o.Run(context.Background())
		return out.String(), errOut.String() + ErrorText(err), err
	}

	out, stderr, err := run()
	if ExitCode(err) != ExitFailure {
		t.Fatalf("exit %d, want 1; stderr:\n%s", ExitCode(err), stderr)
	}
	for _, want := range []string{
		"error: 1 actions failed: pod/api-2 (" + refused + ")\n",
		"\nchanged: pod/api-1\n",
		"\nRunning the same command again observes the consumers first and acts only on those still not current (pods are annotated again, which is harmless).\n",
		"\nTo finish only what was not done:\n  kubectl annotate pod api-2 -n ns --overwrite kubectl-cmsync.io/refreshed-at=",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var doc struct {
		Kind  string           `json:"kind"`
		Items []refresh.Result `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "RefreshResult" || len(doc.Items) != 2 {
		t.Fatalf("want a RefreshResult of 2 actions (%v):\n%s", err, out)
	}
	byPod := map[string]refresh.Result{}
	for _, r := range doc.Items {
		byPod[r.Target.Name] = r
		if len(r.Consumers) != 1 || r.Consumers[0].Pod != r.Target.Name || r.Consumers[0].MountPath != "/etc/cfg" {
			t.Errorf("%s: consumers %+v, want its /etc/cfg mount", r.Target, r.Consumers)
		}
	}
	// api-1 was changed and could not be seen current: timed out, saying why
	if r := byPod["api-1"]; r.Outcome != refresh.OutcomeTimeout || r.AppliedAt == nil || !strings.Contains(r.Detail, "connection refused") {
		t.Errorf("api-1: outcome %s, appliedAt %v, detail %q; want timeout, applied, the observe error", r.Outcome, r.AppliedAt, r.Detail)
	}
	// api-2 was not changed
	if r := byPod["api-2"]; r.Outcome != refresh.OutcomeFailed || r.Error != refused || r.AppliedAt != nil {
		t.Errorf("api-2: outcome %s, error %q, appliedAt %v; want failed with the error, not applied", r.Outcome, r.Error, r.AppliedAt)
	}

	// the API server is back: a second run finishes the job
	down.Store(false)
	api2Fails.Store(false)
	patched = nil
	out, stderr, err = run()
	if err != nil {
		t.Fatalf("second run: %v\nstderr:\n%s\nstdout:\n%s", err, stderr, out)
	}
	// api-1 is current, but pods whose every use is a mounted volume are
	// annotated without a prior exec (harmless): it may be patched again,
	// and is then verified current again
	sort.Strings(patched)
	if p := strings.Join(patched, ","); p != "api-2" && p != "api-1,api-2" {
		t.Errorf("second run patched %v, want api-2 (and api-1 again, harmless)", patched)
	}
	if strings.Count(out, `"outcome": "current"`) != 2 {
		t.Errorf("second run: want api-1 and api-2 current:\n%s", out)
	}
}
