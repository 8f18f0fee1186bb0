package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestRefreshValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *RefreshOptions)
		want   string
	}{
		{"bad strategy", func(o *RefreshOptions) { o.Strategy = "rolling" }, `invalid --strategy "rolling": must be one of auto, annotate, restart`},
		{"bad dry run", func(o *RefreshOptions) { o.DryRun = "yes" }, `invalid --dry-run "yes": must be "none", "client", or "server"`},
		{"bad output", func(o *RefreshOptions) { o.Output = "name" }, `unable to match a printer suitable for the output format "name", allowed formats are: wide,json,yaml`},
		{"zero timeout", func(o *RefreshOptions) { o.Timeout = 0 }, `--timeout must be positive, got 0s`},
		{"max restarts below -1", func(o *RefreshOptions) { o.MaxRestarts = -2 }, `--max-restarts must be -1 (no limit) or more, got -2`},
		{"bad restart-via", func(o *RefreshOptions) { o.RestartVia = "delete" }, `invalid --restart-via "delete": must be one of template, evict`},
		{"zero max-unavailable", func(o *RefreshOptions) { o.MaxUnavailable = 0 }, `--max-unavailable must be 1 or more, got 0`},
		{"bad selector", func(o *RefreshOptions) { o.Selector = "app in (" }, `invalid -l "app in (": unable to parse requirement: found '', expected: ',', ')' or identifier`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			tt.mutate(o)
			err := o.Validate()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
		})
	}
}

// countingPatcher records patches.
type countingPatcher struct {
	mu   sync.Mutex
	sent []string
}

func (p *countingPatcher) Patch(_ context.Context, t refresh.Target, _ types.PatchType, _ []byte, _ bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, t.Kind+"/"+t.Name)
	return nil
}

// staleEnvFixture: Deployment web, one pod whose env still has the old value.
func staleEnvFixture(t *testing.T) (*RefreshOptions, *countingPatcher, *bytes.Buffer) {
	t.Helper()
	ctrl := true
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &ctrl}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/web-1-a/app": {Env: map[string]string{"K": "old"}}}}
	p := &countingPatcher{}
	out := &bytes.Buffer{}
	o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &bytes.Buffer{}})
	o.Namespace, o.Client, o.Cluster.Executor, o.Cluster.Patcher = "ns", fake.NewClientset(cm, dep, rs, pod), ex, p
	o.Output = "json"
	return o, p, out
}

func TestRefreshRefusesRestartsWithoutATerminal(t *testing.T) {
	o, p, out := staleEnvFixture(t)
	err := o.Run(context.Background())
	if ExitCode(err) != ExitRefused || !strings.Contains(err.Error(), "add --yes to proceed") {
		t.Fatalf("Run() = %v (exit %d), want a refusal with exit 4", err, ExitCode(err))
	}
	if len(p.sent) != 0 {
		t.Fatalf("a refused plan sent patches: %v", p.sent)
	}
	if !strings.Contains(out.String(), `"kind": "RefreshPlan"`) || !strings.Contains(out.String(), `"action": "restart"`) {
		t.Errorf("the refused plan must still be printed:\n%s", out.String())
	}
}

func TestRefreshMaxRestartsAlsoInClientDryRun(t *testing.T) {
	o, p, _ := staleEnvFixture(t)
	o.DryRun, o.MaxRestarts, o.Yes = string(refresh.DryRunClient), 0, true
	err := o.Run(context.Background())
	if ExitCode(err) != ExitRefused || !strings.Contains(err.Error(), "more than --max-restarts=0") {
		t.Fatalf("Run() = %v, want the --max-restarts refusal", err)
	}
	if len(p.sent) != 0 {
		t.Fatalf("sent patches: %v", p.sent)
	}
}

func TestRefreshClientDryRunSendsNothing(t *testing.T) {
	o, p, out := staleEnvFixture(t)
	o.DryRun = string(refresh.DryRunClient)
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if len(p.sent) != 0 {
		t.Fatalf("client dry run sent patches: %v", p.sent)
	}
	if !strings.Contains(out.String(), `"name": "web"`) {
		t.Errorf("plan does not restart deployment web:\n%s", out.String())
	}
}

// Plan consumers name the mount path or the variable: three subPath mounts
// of one ConfigMap in one container are three distinct entries.
// A client dry run of --strategy restart reads nothing from the containers;
// with --strategy auto it observes (execs) but changes nothing.
func TestRefreshClientDryRunExecsOnlyWhenThePlanNeedsIt(t *testing.T) {
	for _, tt := range []struct {
		strategy  string
		wantExecs bool
	}{{"restart", false}, {"auto", true}} {
		t.Run(tt.strategy, func(t *testing.T) {
			o, p, out := staleEnvFixture(t)
			o.DryRun, o.Strategy = string(refresh.DryRunClient), tt.strategy
			if err := o.Run(context.Background()); err != nil {
				t.Fatalf("Run() = %v", err)
			}
			execs := len(o.Cluster.Executor.(*readtest.Executor).Calls)
			if (execs > 0) != tt.wantExecs {
				t.Errorf("--dry-run=client --strategy %s made %d execs, want execs: %v", tt.strategy, execs, tt.wantExecs)
			}
			if len(p.sent) != 0 {
				t.Errorf("client dry run sent patches: %v", p.sent)
			}
			if !strings.Contains(out.String(), `"action": "restart"`) {
				t.Errorf("plan does not restart deployment web:\n%s", out.String())
			}
		})
	}
}

// A second run over a consumer that cannot be verified sends nothing but
// does not claim success: exit 3 with the reason.
func TestRefreshResultUnverifiableNoneIsNotCurrent(t *testing.T) {
	r := refresh.Result{Action: refresh.Action{Action: refresh.ActionNone, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "p"},
		Reason:    "cannot be verified (no-shell: no shell: the container has no sh), and the pod was annotated at ...",
		Consumers: []refresh.Consumer{{Pod: "p", Mode: inspect.ModeVolume, State: inspect.StateUnverifiable}}}, Outcome: refresh.OutcomeNotApplied}
	err := resultError([]refresh.Result{r}, runInfo{DryRun: refresh.DryRunNone})
	if ExitCode(err) != ExitCheck || !strings.Contains(err.Error(), "pod/p: unverifiable: cannot be verified") {
		t.Fatalf("resultError = %v (exit %d), want exit 3 naming the unverifiable pod", err, ExitCode(err))
	}
	r.Consumers[0].State = inspect.StateInSync
	if err := resultError([]refresh.Result{r}, runInfo{DryRun: refresh.DryRunNone}); err != nil {
		t.Errorf("in-sync none: %v", err)
	}
}

// staleStatefulSetFixture: StatefulSet db with pods db-0..2, each with a
// stale env; -l selects db-2 only.
func staleStatefulSetFixture(t *testing.T) (*RefreshOptions, *countingPatcher, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ctrl := true
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "sts-uid"},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	objs := []runtime.Object{cm, sts}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{}}
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels:          map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}})
		ex.Containers["ns/"+name+"/app"] = &readtest.Container{Env: map[string]string{"K": "old"}}
	}
	p := &countingPatcher{}
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
	o.Namespace, o.Client, o.Cluster.Executor, o.Cluster.Patcher = "ns", fake.NewClientset(objs...), ex, p
	o.Selector, o.Output, o.Wait = "statefulset.kubernetes.io/pod-name=db-2", "json", false
	return o, p, out, errOut
}

// -l narrows what is observed, not what a restart replaces: a restart that
// replaces pods beyond -l is refused without --yes (exit 4, nothing sent),
// and sent with a warning with --yes.
func TestRefreshRefusesRestartsBeyondTheSelector(t *testing.T) {
	o, p, out, _ := staleStatefulSetFixture(t)
	o.StdinTerminal = true // even a person at a terminal must say --yes
	err := o.Run(context.Background())
	if ExitCode(err) != ExitRefused || !strings.Contains(err.Error(), "statefulset/db replaces db-0, db-1") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Run() = %v (exit %d), want a refusal naming db-0 and db-1", err, ExitCode(err))
	}
	if len(p.sent) != 0 {
		t.Fatalf("a refused plan sent patches: %v", p.sent)
	}
	for _, want := range []string{`"pods": [`, `"db-0",`, `"outsideSelector": [`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the refused plan lacks %s:\n%s", want, out.String())
		}
	}

	o, p, _, errOut := staleStatefulSetFixture(t)
	o.Yes = true
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("--yes: Run() = %v", err)
	}
	if strings.Join(p.sent, ",") != "StatefulSet/db" || !strings.Contains(errOut.String(), "Warning: restarting pods that -l statefulset.kubernetes.io/pod-name=db-2 does not select: statefulset/db replaces db-0, db-1") {
		t.Errorf("--yes: sent %v, stderr %q; want the restart and a warning", p.sent, errOut.String())
	}
}

// --restart-via=evict evicts only the pods of stale consumers (-l selects
// db-2: nothing beyond it is touched, so no --yes refusal for db-0, db-1),
// through the Eviction API with the pod's UID as precondition; a 429 of a
// PodDisruptionBudget is retried and said so; no patch is sent.
func TestRefreshEvictRetriesRefusalAndSendsNoPatch(t *testing.T) {
	o, p, out, errOut := staleStatefulSetFixture(t)
	o.RestartVia, o.Yes = string(refresh.RestartViaEvict), true
	cs := o.Client.(*fake.Clientset)
	o.Cluster.Evictor = refresh.ClientEvictor{Client: cs}
	var evictions []string
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		uid := "<none>"
		if pc := ev.DeleteOptions.Preconditions; pc != nil && pc.UID != nil {
			uid = string(*pc.UID)
		}
		evictions = append(evictions, ev.Name+"@"+uid)
		if len(evictions) == 1 {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		gvr := corev1.SchemeGroupVersion.WithResource("pods")
		old, err := cs.Tracker().Get(gvr, "ns", ev.Name)
		if err != nil {
			return true, nil, err
		}
		pod := old.(*corev1.Pod).DeepCopy()
		if err := cs.Tracker().Delete(gvr, "ns", ev.Name); err != nil {
			return true, nil, err
		}
		pod.UID = types.UID("new-" + ev.Name)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return true, nil, cs.Tracker().Add(pod)
	})
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, errOut.String())
	}
	if len(p.sent) != 0 {
		t.Errorf("evict sent patches: %v", p.sent)
	}
	if got := strings.Join(evictions, ","); got != "db-2@uid-db-2,db-2@uid-db-2" {
		t.Errorf("evictions %s, want db-2 (with its UID) refused once, then evicted", got)
	}
	if !strings.Contains(errOut.String(), "refused by a PodDisruptionBudget") || !strings.Contains(errOut.String(), "retrying in") {
		t.Errorf("stderr does not say the refusal is retried:\n%s", errOut.String())
	}
	for _, want := range []string{`"action": "evict"`, `"outcome": "applied"`, `"evicted": [`, `"replacements": [`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("result lacks %s:\n%s", want, out.String())
		}
	}
}

// signallingPatcher closes open at the first patch of pod name.
type signallingPatcher struct {
	countingPatcher
	name string
	open chan struct{}
	once sync.Once
}

func (p *signallingPatcher) Patch(ctx context.Context, t refresh.Target, pt types.PatchType, patch []byte, dry bool) error {
	err := p.countingPatcher.Patch(ctx, t, pt, patch, dry)
	if t.Kind == "Pod" && t.Name == p.name {
		p.once.Do(func() { close(p.open) })
	}
	return err
}

// With --yes, a pod whose every use is a mounted volume is annotated while
// the pod with an env use is still being observed (its exec is held until
// the volume pod's patch arrives); both results are reported, the volume
// pod as "state not observed before", and the env pod, current, is left
// alone. Without --yes (a restart may need confirming) nothing is sent
// before the plan is complete.
func TestRefreshAnnotatesVolumePodsWhileVerifyingTheOthers(t *testing.T) {
	for _, yes := range []bool{true, false} {
		t.Run(fmt.Sprintf("yes=%v", yes), func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "v1"}}
			running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
			vol := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vol", Namespace: "ns", UID: "u-vol"}, Spec: corev1.PodSpec{NodeName: "n1",
				Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}},
				Volumes:    []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
				Status: running}
			env := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "ns", UID: "u-env"}, Spec: corev1.PodSpec{NodeName: "n1",
				Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
				Status: running}
			containers := map[string]*readtest.Container{
				"ns/env/app": {Env: map[string]string{"K": "v1"}},
				"ns/vol/app": {Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: "..2026_01_01_00_00_00.1", Files: map[string][]byte{"K": []byte("v1")}}}},
			}
			// the observation's execs wait until the volume pod is patched
			// (open is closed), or a second
			open := make(chan struct{})
			var timedOut atomic.Bool
			ex := &readtest.Executor{Containers: containers, Before: func() {
				select {
				case <-open:
				case <-time.After(time.Second):
					timedOut.Store(true)
				}
			}}
			p := &signallingPatcher{name: "vol", open: open}
			out := &bytes.Buffer{}
			o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &bytes.Buffer{}})
			client := fake.NewClientset(cm, vol, env)
			o.Namespace, o.Client, o.Cluster.Executor, o.Cluster.Patcher, o.Yes, o.Output = "ns", client, ex, p, yes, "json"
			o.Cluster.Verifier = &refresh.ClusterVerifier{Client: client, Executor: &readtest.Executor{Containers: containers}, Verify: o.verifyOptions()}
			if err := o.Run(context.Background()); err != nil {
				t.Fatalf("Run() = %v\n%s", err, out.String())
			}
			if timedOut.Load() == yes {
				t.Errorf("--yes=%v: the observation exec waited for the volume pod's patch: %v (want %v)", yes, timedOut.Load(), !yes)
			}
			if len(p.sent) != 1 || p.sent[0] != "Pod/vol" {
				t.Errorf("patches %v, want only Pod/vol", p.sent)
			}
			for _, want := range []string{`"action": "annotate"`, `"outcome": "current"`, `"action": "none"`, `"name": "env"`} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("results lack %s:\n%s", want, out.String())
				}
			}
		})
	}
}

// The eviction order is read from the pods the snapshot keeps: a pod that
// is not Ready goes first (evicting it costs no availability), then the
// StatefulSet's ordinals from the highest down. The snapshot's pod trim
// must keep the Ready condition for this (it once dropped every condition,
// and every pod counted as not Ready).
func TestRefreshEvictPlanPutsNotReadyPodsFirst(t *testing.T) {
	o, p, out, errOut := staleStatefulSetFixture(t)
	o.Selector, o.RestartVia, o.Yes, o.DryRun = "", string(refresh.RestartViaEvict), true, string(refresh.DryRunClient)
	cs := o.Client.(*fake.Clientset)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	for name, ready := range map[string]corev1.ConditionStatus{"db-0": corev1.ConditionTrue, "db-1": corev1.ConditionFalse, "db-2": corev1.ConditionTrue} {
		obj, err := cs.Tracker().Get(gvr, "ns", name)
		if err != nil {
			t.Fatal(err)
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}}
		if err := cs.Tracker().Update(gvr, pod, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, errOut.String())
	}
	if len(p.sent) != 0 {
		t.Errorf("a dry run sent patches: %v", p.sent)
	}
	if want := "evicts pods in this order: db-1, then db-2, then db-0 (1 at a time"; !strings.Contains(out.String(), want) {
		t.Errorf("the plan does not say %q:\n%s", want, out.String())
	}
}
