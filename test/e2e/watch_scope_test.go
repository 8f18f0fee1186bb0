//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestWatchNamespaceSelector: with -A --namespace-selector, a change in a
// namespace the selector does not select is reported ignored and its pod is
// not annotated; one in a selected namespace is refreshed; a namespace
// labelled into scope while the watch runs is handled from then on.
func TestWatchNamespaceSelector(t *testing.T) {
	t.Parallel()
	in, out, later := newFx(t), newFx(t), newFx(t)
	scopeLabel := "cmsync-e2e-scope"
	selector := scopeLabel + "=" + in.ns // this test's namespaces only
	in.labelNamespace(scopeLabel, in.ns)
	for _, f := range []*fx{in, out, later} {
		f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v0"}))
		f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/cfg"))), cmVolume("v", "cfg"))))
	}
	for _, f := range []*fx{in, out, later} {
		f.waitPodReady("p")
	}
	w := in.startWatchIn("-A", "--namespace-selector", selector, "--debounce", "1s", "--max-wait", "5s")

	out.patchConfigMapData("cfg", map[string]string{"greeting": "v1"})
	in.patchConfigMapData("cfg", map[string]string{"greeting": "v1"})
	if e := w.waitFor("pod p refreshed in "+in.ns, isResultIn(refresh.ActionAnnotate, in.ns, "pod/p")); e.Outcome != refresh.OutcomeCurrent {
		t.Errorf("annotate pod/p in %s: outcome %s (%s), want current", in.ns, e.Outcome, e.Message)
	}
	e := w.waitFor("the change in "+out.ns+" ignored", isIgnoredIn(out.ns))
	if want := "namespace " + out.ns + " is out of scope (its labels do not match --namespace-selector"; !strings.HasPrefix(e.Message, want) {
		t.Errorf("ignored: %q, want it to start with %q", e.Message, want)
	}
	if at := out.getPod("p").Annotations[refresh.RefreshedAtAnnotation]; at != "" {
		t.Errorf("pod p in %s, out of scope, was annotated (%s)", out.ns, at)
	}
	if n := w.count(func(e reconcile.Event) bool { return e.Action != nil && e.Action.Target.Namespace == out.ns }); n != 0 {
		t.Errorf("%d actions in %s, out of scope, want none", n, out.ns)
	}

	t.Log("a namespace labelled into scope while the watch runs is handled")
	later.labelNamespace(scopeLabel, in.ns)
	time.Sleep(time.Second) // the namespace informer sees the label
	later.patchConfigMapData("cfg", map[string]string{"greeting": "v1"})
	if e := w.waitFor("pod p refreshed in "+later.ns, isResultIn(refresh.ActionAnnotate, later.ns, "pod/p")); e.Outcome != refresh.OutcomeCurrent {
		t.Errorf("annotate pod/p in %s: outcome %s (%s), want current", later.ns, e.Outcome, e.Message)
	}
	w.stop()
}

// labelNamespace sets one label on the fixture's namespace.
func (f *fx) labelNamespace(key, value string) {
	f.t.Helper()
	patch := `{"metadata":{"labels":{"` + key + `":"` + value + `"}}}`
	if _, err := f.cs.CoreV1().Namespaces().Patch(f.ctx, f.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("labelling namespace %s: %v", f.ns, err)
	}
}

func isResultIn(kind refresh.ActionKind, ns, target string) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		return isResult(kind, target)(e) && e.Action.Target.Namespace == ns
	}
}

func isIgnoredIn(ns string) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventIgnored && e.Object != nil && e.Object.Namespace == ns
	}
}
