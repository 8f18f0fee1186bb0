//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func projectedVolume(name string, sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

func cmProjection(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}}
}

func secretProjection(name string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func labelsProjection(path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
		{Path: path, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}
}

// A projected volume of two whole ConfigMaps, a Secret and a downwardAPI
// item: after one ConfigMap changes, refresh's wait reads the pod with its
// sibling objects and ends current, with --secrets and without it (most
// users cannot read Secrets): the Secret's key is no ConfigMap's, so every
// expected file compares, and status --verify shows each ConfigMap's use
// in-sync, naming the Secret's file as not compared.
func TestRefreshWaitProjectedWithSiblings(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createConfigMap(configMap("extra", map[string]string{"colour": "blue"}))
	f.createSecret(secret("creds", map[string]string{"token": "s3cr3t-token-value"}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("all", "/etc/all"))),
		projectedVolume("all", cmProjection("app"), cmProjection("extra"), secretProjection("creds"), labelsProjection("labels")))))
	f.waitPodReady("web")

	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	doc, errOut, code := f.refreshJSON("app", "--secrets", "--timeout", "90s")
	if code != 0 || actionsOf(doc) != "annotate pod/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("refresh --secrets: exit %d plan %q, want 0 and annotate pod/web current: %+v\nstderr: %s", code, actionsOf(doc), doc.Items, errOut)
	}
	f.expectFile("web", "c", "/etc/all/greeting", "v1")

	f.patchConfigMapData("extra", map[string]string{"colour": "green"})
	doc, errOut, code = f.refreshJSON("extra", "--timeout", "90s")
	if code != 0 || actionsOf(doc) != "annotate pod/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("refresh without --secrets: exit %d plan %q, want 0 and annotate pod/web current (the Secret beside it writes none of the ConfigMaps' files): %+v\nstderr: %s",
			code, actionsOf(doc), doc.Items, errOut)
	}
	f.expectFile("web", "c", "/etc/all/colour", "green")
	rep, ok := f.status("--verify")
	if !ok {
		return
	}
	for _, name := range []string{"app", "extra"} {
		its := want{object: name, volume: "all"}.in(rep)
		if len(its) != 1 || its[0].State != inspect.StateInSync || !strings.Contains(its[0].StateReason, `"token" may come from Secret "creds", which was not read (add --secrets)`) {
			t.Errorf("status --verify, configmap %s: %+v, want one use in-sync naming the Secret's token as not compared", name, its)
		}
	}
}

// A Secret source shadows the files of the sources before it, never after:
// the kubelet writes the sources in order, a later one winning a path both
// write. Without --secrets, ConfigMap b's file "colour", which Secret s
// also holds, differs in volume "last" [b, s]: that use stays pending, its
// reason saying stale or shadowed by s, so refresh's wait goes on until its
// timeout, which says both. In volume "first" [s, b] b's file wins and the
// use is in-sync; diff shows the file as stale or shadowed, without content.
// With --secrets both are in-sync; no output holds s's value.
func TestProjectedUnreadSecretShadowsOnlyEarlierSources(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t-colour-value"
	const shadowed = `stale, or shadowed by Secret "s" (not read; --secrets reads it)`
	f := newFx(t)
	f.createConfigMap(configMap("b", map[string]string{"colour": "blue", "size": "m"}))
	f.createSecret(secret("s", map[string]string{"colour": value}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("last", "/last"), mount("first", "/first"))),
		projectedVolume("last", cmProjection("b"), secretProjection("s")),
		projectedVolume("first", secretProjection("s"), cmProjection("b")))))
	f.waitPodReady("web")
	f.expectFile("web", "c", "/last/colour", value)
	f.expectFile("web", "c", "/first/colour", "blue")

	f.patchConfigMapData("b", map[string]string{"size": "l"})
	doc, errOut, code := f.refreshJSON("b", "--timeout", "20s")
	if code != 3 || len(doc.Items) != 1 || doc.Items[0].Outcome != refresh.OutcomeTimeout || !strings.Contains(doc.Items[0].Detail, shadowed) {
		t.Errorf("refresh without --secrets: exit %d, want 3 and one annotate timed out naming %q: %+v\nstderr: %s", code, shadowed, doc.Items, errOut)
	}
	f.waitFile("web", "c", "/last/size", "l")
	f.waitFile("web", "c", "/first/size", "l")
	docJSON, _ := json.Marshal(doc)
	out, diffErr, code := f.pluginRun("diff", "-n", f.ns, "b")
	if code != 3 || !strings.Contains(out, `colour: differs: `+shadowed) {
		t.Errorf("diff without --secrets: exit %d, want 3 and colour named %q:\n%s\n%s", code, shadowed, out, diffErr)
	}
	outputs := []string{errOut, string(docJSON), out, diffErr}
	states := map[string]inspect.State{"last": inspect.StatePending, "first": inspect.StateInSync}
	for _, flags := range [][]string{{"--verify"}, {"--verify", "--secrets"}} {
		rep, ok := f.status(flags...)
		if !ok {
			return
		}
		b, _ := json.Marshal(rep)
		outputs = append(outputs, string(b))
		for volume, st := range states {
			its := want{object: "b", volume: volume}.in(rep)
			shadowNamed := len(its) == 1 && strings.Contains(its[0].StateReason, `"colour" differs from the API: `+shadowed)
			if len(its) != 1 || its[0].State != st || shadowNamed != (st == inspect.StatePending) {
				t.Errorf("status %v, volume %s: %+v, want one use %s (naming %q when pending)", flags, volume, its, st, shadowed)
			}
		}
		states["last"] = inspect.StateInSync // with --secrets: s's file is known to win
	}
	for _, out := range outputs {
		if strings.Contains(out, value) {
			t.Errorf("the Secret's value is in an output:\n%s", out)
		}
	}
}

// blockedFixture: a pod whose volumes each hold one source that is about
// to go missing or lose a required key, beside a source that changes.
//   - /p: projected [ConfigMap "a" whole, ConfigMap "b" items k -> b.txt]
//   - /i: configMap "c" with items x -> x, y -> y
//   - /s: projected [ConfigMap "e" whole, Secret "s" whole]
//   - /d: configMap "d" whole (the control: it has no broken source)
//
// It first breaks b (its key k goes), c (its key y goes) and the Secret s
// (deleted), and waits until the kubelet reports each of those volumes
// failing; only then does it change a, c's x, e and d and bump the pod.
// In that order a kubelet sync at any moment sees every volume already
// blocked, so no change can slip in before its volume breaks.
func blockedFixture(t *testing.T) *fx {
	f := newFx(t)
	f.createConfigMap(configMap("a", map[string]string{"greeting": "v0"}))
	f.createConfigMap(configMap("b", map[string]string{"k": "b0"}))
	f.createConfigMap(configMap("c", map[string]string{"x": "v0", "y": "y0"}))
	f.createConfigMap(configMap("d", map[string]string{"control": "v0"}))
	f.createConfigMap(configMap("e", map[string]string{"greeting": "v0"}))
	f.createSecret(secret("s", map[string]string{"token": "s3cr3t-token-value"}))
	c := withMounts(busybox("c"), mount("p", "/p"), mount("i", "/i"), mount("s", "/s"), mount("d", "/d"))
	f.createPod(pod("web", withVolumes(podSpec(c),
		projectedVolume("p", cmProjection("a"), cmProjection("b", corev1.KeyToPath{Key: "k", Path: "b.txt"})),
		cmItemsVolume("i", "c", corev1.KeyToPath{Key: "x", Path: "x"}, corev1.KeyToPath{Key: "y", Path: "y"}),
		projectedVolume("s", cmProjection("e"), secretProjection("s")),
		cmVolume("d", "d"))))
	f.waitPodReady("web")

	f.mergePatchConfigMap("b", map[string]any{"data": map[string]any{"k": nil, "other": "o"}})
	f.mergePatchConfigMap("c", map[string]any{"data": map[string]any{"y": nil}})
	if err := f.cs.CoreV1().Secrets(f.ns).Delete(f.ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting secret s: %v", err)
	}
	f.bumpPod("web")
	f.waitFailedMount("web", "p", "i", "s")

	f.patchConfigMapData("a", map[string]string{"greeting": "v1"})
	f.mergePatchConfigMap("c", map[string]any{"data": map[string]any{"x": "v1"}})
	f.patchConfigMapData("e", map[string]string{"greeting": "v1"})
	f.patchConfigMapData("d", map[string]string{"control": "v1"})
	f.bumpPod("web")
	// the control volume shows the kubelet re-synced the pod's volumes
	f.waitFile("web", "c", "/d/control", "v1")
	return f
}

// What the kubelet does when one required source of a volume is missing
// (a projected source's object, a required key of a source with items, a
// required key of a configMap volume with items): it fails the whole
// volume update, and every other source of that volume keeps its old
// contents; once the source is back, the volume updates.
func TestKubeletFailsWholeVolumeOnOneMissingSource(t *testing.T) {
	t.Parallel()
	f := blockedFixture(t)
	// past the kubelet's answer to an annotation (0.2-0.6 s)
	sleepSettle()
	f.expectFile("web", "c", "/p/greeting", "v0")
	f.expectFile("web", "c", "/i/x", "v0")
	f.expectFile("web", "c", "/s/greeting", "v0")

	// the missing pieces come back: each volume updates
	f.patchConfigMapData("b", map[string]string{"k": "b1"})
	f.patchConfigMapData("c", map[string]string{"y": "y1"})
	f.createSecret(secret("s", map[string]string{"token": "s3cr3t-token-value"}))
	f.bumpPod("web")
	f.waitFile("web", "c", "/p/greeting", "v1")
	f.waitFile("web", "c", "/p/b.txt", "b1")
	f.waitFile("web", "c", "/i/x", "v1")
	f.waitFile("web", "c", "/s/greeting", "v1")
}

// cmsync models it: the siblings of a missing required source are not
// predicted to hot-update (the reason names the source that blocks), and
// --verify shows them stale with that reason, not pending.
func TestStatusNamesTheSourceThatBlocksAVolume(t *testing.T) {
	t.Parallel()
	f := blockedFixture(t)
	sleepSettle()
	f.expectFile("web", "c", "/p/greeting", "v0")
	rep, ok := f.status("--verify", "--secrets")
	if !ok {
		return
	}
	// c's own listed key y is missing: that use is missing itself, and
	// its reason says the volume cannot update
	cases := []struct {
		object, volume, blocker string
		state                   inspect.State
	}{
		{"a", "p", `ConfigMap "b"`, inspect.StateStale},
		{"c", "i", "cannot update the volume", inspect.StateMissing},
		{"e", "s", `Secret "s"`, inspect.StateStale},
	}
	for _, tc := range cases {
		var found *inspect.Use
		for i, it := range rep.Items {
			if it.Object.Name == tc.object && it.Volume != nil && it.Volume.Name == tc.volume {
				found = &rep.Items[i]
			}
		}
		if found == nil {
			t.Errorf("no item for %s in volume %s", tc.object, tc.volume)
			continue
		}
		if found.Verdict != inspect.VerdictMissing || !strings.Contains(found.Reason, strings.TrimPrefix(tc.blocker, "cannot update the volume")) {
			t.Errorf("%s in volume %s: verdict %s reason %q, want no hot-update and a reason naming %s", tc.object, tc.volume, found.Verdict, found.Reason, tc.blocker)
		}
		if found.State != tc.state || !strings.Contains(found.StateReason, tc.blocker) {
			t.Errorf("%s in volume %s: state %s (%q), want %s naming %s", tc.object, tc.volume, found.State, found.StateReason, tc.state, tc.blocker)
		}
	}
	for _, it := range rep.Items {
		if it.Object.Name == "d" && (it.Verdict != inspect.VerdictHotUpdate || it.State != inspect.StateInSync) {
			t.Errorf("control d: verdict %s state %s, want hot-update in-sync", it.Verdict, it.State)
		}
	}
}

// sleepSettle waits past the kubelet's answer to an annotation bump.
func sleepSettle() { time.Sleep(settle) }

// The same ConfigMap twice in one projected volume, with different items:
// two uses with two identities (volume.source) in status, in the refresh
// plan and in its wait, each verified against its own items.
func TestRepeatedConfigMapInOneProjectedVolume(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"a": "a0", "b": "b0"}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("all", "/etc/all"))),
		projectedVolume("all", cmProjection("app", corev1.KeyToPath{Key: "a", Path: "a.txt"}),
			cmProjection("app", corev1.KeyToPath{Key: "b", Path: "b.txt"})))))
	f.waitPodReady("web")
	f.patchConfigMapData("app", map[string]string{"a": "a1", "b": "b1"})
	doc, errOut, code := f.refreshJSON("app", "--timeout", "90s")
	if code != 0 || len(doc.Items) != 1 || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("refresh: exit %d, want 0 and one annotate current: %+v\nstderr: %s", code, doc.Items, errOut)
	}
	cs := doc.Items[0].Consumers
	if len(cs) != 2 || cs[0].ID() == cs[1].ID() || cs[0].Source+cs[1].Source != 3 {
		t.Errorf("consumers %+v, want two with sources 1 and 2", cs)
	}
	rep, ok := f.status("--verify")
	if !ok {
		return
	}
	sources := 0
	for _, it := range rep.Items {
		if it.Object.Name != "app" {
			continue
		}
		sources += it.Volume.Source
		if it.State != inspect.StateInSync {
			t.Errorf("source %d: %s (%s), want in-sync", it.Volume.Source, it.State, it.StateReason)
		}
	}
	if sources != 3 {
		t.Errorf("status items of app: volume.source sum %d, want two items with sources 1 and 2: %+v", sources, rep.Items)
	}
	f.expectFile("web", "c", "/etc/all/a.txt", "a1")
	f.expectFile("web", "c", "/etc/all/b.txt", "b1")
}
