package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func cmProj(name string, optional bool, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items: items, Optional: &optional}}
}

func projectedPod(sources ...corev1.VolumeProjection) *corev1.Pod {
	p := runningPod("p", corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c",
		VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/etc/cfg"}}}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}}})
	p.UID = "uid-p"
	return p
}

func snapOf(pod *corev1.Pod, cms ...*corev1.ConfigMap) *Snapshot {
	s := &Snapshot{Pods: []corev1.Pod{*pod}, ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}, Secrets: map[ObjectKey]*corev1.Secret{}, SecretsListed: true}
	for _, cm := range cms {
		cm.Namespace = "ns"
		s.ConfigMaps[ObjectKey{KindConfigMap, "ns", cm.Name}] = cm
	}
	return s
}

func cmNamed(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: data}
}

func predictedUse(t *testing.T, snap *Snapshot, name string) Use {
	t.Helper()
	items, err := Build(snap, BuildOptions{IncludeSystem: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Object.Name == name {
			return it
		}
	}
	t.Fatalf("no use of %s in %v", name, items)
	return Use{}
}

// A required source whose object or listed key is missing makes the
// kubelet fail the whole projected volume: its siblings do not hot-update,
// and the reason names the source that blocks. An optional one, or a
// Secret that was not read, blocks nothing that is known.
func TestPredictBlockedBySibling(t *testing.T) {
	a := cmNamed("a", map[string]string{"greeting": "v1"})
	cases := []struct {
		name    string
		sources []corev1.VolumeProjection
		cms     []*corev1.ConfigMap
		unread  bool
		want    Verdict
		reason  string
	}{
		{"sibling missing", []corev1.VolumeProjection{cmProj("a", false), cmProj("b", false)}, nil, false, VerdictMissing, `ConfigMap "b", a required source of projected volume "v", does not exist`},
		{"sibling key missing", []corev1.VolumeProjection{cmProj("a", false), cmProj("b", false, corev1.KeyToPath{Key: "k", Path: "b.txt"})},
			[]*corev1.ConfigMap{cmNamed("b", map[string]string{"other": "o"})}, false, VerdictMissing, `required key "k" is not in ConfigMap "b"`},
		{"optional sibling missing", []corev1.VolumeProjection{cmProj("a", false), cmProj("b", true)}, nil, false, VerdictHotUpdate, "mounted volume"},
		{"sibling present", []corev1.VolumeProjection{cmProj("a", false), cmProj("b", false)}, []*corev1.ConfigMap{cmNamed("b", nil)}, false, VerdictHotUpdate, "mounted volume"},
		{"unread Secret sibling", []corev1.VolumeProjection{cmProj("a", false),
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}, nil, true, VerdictHotUpdate, "mounted volume"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapOf(projectedPod(tc.sources...), append([]*corev1.ConfigMap{a.DeepCopy()}, tc.cms...)...)
			snap.SecretsListed = !tc.unread
			it := predictedUse(t, snap, "a")
			if it.Verdict != tc.want || !strings.Contains(it.Reason, tc.reason) {
				t.Errorf("verdict %s reason %q, want %s with %q", it.Verdict, it.Reason, tc.want, tc.reason)
			}
		})
	}
}

// --verify: a sibling of the missing source that differs is stale with
// the reason, not pending; the same files in-sync stay in-sync.
func TestCompareBlockedBySibling(t *testing.T) {
	pod := projectedPod(cmProj("cm", false), cmProj("b", false))
	lookup := func(k ObjectKey) Object { return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name} }
	it := volItem(ModeProjected, "/etc/cfg")
	c := CompareUse(it, pod, cmWith(map[string]string{"a": "new"}, testNow), atomicObs(map[string]string{"a": "old"}), CompareOptions{Now: testNow, Object: lookup})
	if c.State != StateStale || !strings.Contains(c.Reason, `ConfigMap "b", a required source of projected volume "v", does not exist`) {
		t.Errorf("differs: %s (%s), want stale naming ConfigMap b", c.State, c.Reason)
	}
	c = CompareUse(it, pod, cmWith(map[string]string{"a": "same"}, testNow), atomicObs(map[string]string{"a": "same"}), CompareOptions{Now: testNow, Object: lookup})
	if c.State != StateInSync {
		t.Errorf("equal: %s (%s), want in-sync", c.State, c.Reason)
	}
}

// The same ConfigMap twice in one projected volume with different items
// is two uses with two identities; each is compared with its own items.
func TestRepeatedProjectedSourceHasDistinctIDs(t *testing.T) {
	pod := projectedPod(cmProj("cm", false, corev1.KeyToPath{Key: "a", Path: "a.txt"}), cmProj("other", false),
		cmProj("cm", false, corev1.KeyToPath{Key: "b", Path: "b.txt"}))
	uses := Uses(pod)
	var cm []Use
	for _, u := range uses {
		if u.Object.Name == "cm" {
			cm = append(cm, u)
		}
		if u.Object.Name == "other" && u.Volume.Source != 0 {
			t.Errorf("a source named once has position %d, want 0", u.Volume.Source)
		}
	}
	if len(cm) != 2 || cm[0].ID() == cm[1].ID() {
		t.Fatalf("uses of cm: %d, IDs %+v, want 2 distinct", len(cm), cm)
	}
	if cm[0].Volume.Source != 1 || cm[1].Volume.Source != 3 {
		t.Errorf("positions %d, %d, want 1 and 3", cm[0].Volume.Source, cm[1].Volume.Source)
	}
	b, _ := json.Marshal(cm[1])
	if !strings.Contains(string(b), `"source":3`) {
		t.Errorf("JSON does not tell the use apart: %s", b)
	}
	snap := snapOf(pod, cmNamed("cm", map[string]string{"a": "1", "b": "2"}), cmNamed("other", map[string]string{"o": "x"}))
	items, err := Build(snap, BuildOptions{IncludeSystem: true})
	if err != nil {
		t.Fatal(err)
	}
	obs := atomicObs(map[string]string{"a.txt": "1", "b.txt": "2", "o": "x"})
	seen := map[UseID]bool{}
	for _, it := range items {
		c := CompareUse(it, pod, snap.Object(it.Key()), obs, CompareOptions{Now: testNow, Object: snap.Object})
		if c.State != StateInSync {
			t.Errorf("%s %+v: %s (%s), want in-sync", it.Object.Name, it.KeyPaths, c.State, c.Reason)
		}
		if seen[it.ID()] {
			t.Errorf("two uses with ID %+v", it.ID())
		}
		seen[it.ID()] = true
	}
}

// ClusterTrustBundle and PodCertificate sources share the volume: their
// files are theirs (never extra, never expected), and a source of a kind
// the client does not know (a newer API field, dropped when decoding)
// breaks nothing: its files are left out and said so.
func TestProjectedCertificateAndUnknownSources(t *testing.T) {
	pod := projectedPod(cmProj("cm", false),
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: ptrTo("example.com/signer"), Path: "ca.pem"}},
		corev1.VolumeProjection{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/signer", KeyType: "ED25519",
			CredentialBundlePath: "bundle.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt"}})
	it := volItem(ModeProjected, "/etc/cfg")
	files := map[string]string{"a": "1", "ca.pem": "CA", "bundle.pem": "B", "tls.key": "K", "tls.crt": "C"}
	c := CompareUse(it, pod, cmWith(map[string]string{"a": "1"}, testNow), atomicObs(files), CompareOptions{Now: testNow})
	if c.State != StateInSync || len(c.Files) != 1 {
		t.Errorf("with certificate sources: %s (%s), %d files compared, want in-sync over 1", c.State, c.Reason, len(c.Files))
	}
	prs, _ := requestFor(it, pod, inputsFor(it, cmWith(map[string]string{"a": "1"}, testNow)), nil)
	if len(prs) != 1 || strings.Join(prs[0].Expect, ",") != "a" {
		t.Errorf("expected files %+v, want only the ConfigMap's", prs)
	}

	// shown as what they are: a subPath onto the trust bundle names it
	sub := volItem(ModeSubPath, "/etc/ca.pem")
	sub.Volume.SubPath = "ca.pem"
	Predict(&sub, pod, cmWith(map[string]string{"a": "1"}, testNow), nil)
	if sub.Verdict != VerdictNotMounted || !strings.Contains(sub.Reason, `(the ClusterTrustBundles of signer "example.com/signer")`) {
		t.Errorf("subPath onto the trust bundle: %s (%s), want not-mounted naming the ClusterTrustBundle source", sub.Verdict, sub.Reason)
	}
	// the pod certificate's private key is treated as Secret data
	if e := SecretExposureOf(it, pod); !e.File("tls.key") || !e.File("bundle.pem") || e.File("a") {
		t.Errorf("secret exposure: key %v bundle %v a %v, want the key files only", e.File("tls.key"), e.File("bundle.pem"), e.File("a"))
	}

	// a pod from a newer server: the source's field is unknown to this client
	var decoded corev1.Pod
	raw := `{"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{"nodeName":"n","containers":[{"name":"c","volumeMounts":[{"name":"v","mountPath":"/etc/cfg"}]}],
		"volumes":[{"name":"v","projected":{"sources":[{"configMap":{"name":"cm"}},{"futureSource":{"path":"future.pem"}}]}}]},
		"status":{"phase":"Running","containerStatuses":[{"name":"c","state":{"running":{}}}]}}`
	if err := json.Unmarshal([]byte(raw), &decoded); err != nil {
		t.Fatal(err)
	}
	snap := snapOf(&decoded, cmNamed("cm", map[string]string{"a": "1"}))
	items, err := Build(snap, BuildOptions{IncludeSystem: true})
	if err != nil || len(items) != 1 || items[0].Verdict != VerdictHotUpdate {
		t.Fatalf("build: %v %+v, want one hot-update use", err, items)
	}
	c = CompareUse(items[0], &decoded, snap.Object(items[0].Key()), atomicObs(map[string]string{"a": "1", "future.pem": "F"}), CompareOptions{Now: testNow, Object: snap.Object})
	if c.State != StateInSync || !strings.Contains(c.Reason, "a kind this client does not know") {
		t.Errorf("unknown source: %s (%s), want in-sync saying a file was left to a source of an unknown kind", c.State, c.Reason)
	}
}

// A container that restarts gets one answer whichever moment the read
// meets: not running, with its restart state from the pod's status.
func TestRestartingContainerIsNotRunning(t *testing.T) {
	pod := configMapVolumePod()
	st := &pod.Status.ContainerStatuses[0]
	st.RestartCount = 3
	st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	it := volItem(ModeVolume, "/etc/cfg")
	obj := cmWith(map[string]string{"a": "1"}, testNow)

	// the status says running, the exec meets the container gone
	for _, msg := range []string{"error executing command in container: failed to exec in container: failed to start exec: task 123 not found", "container not found (\"c\")"} {
		obs := explainRestart(&containerread.Verified{Err: containerread.ClassifyExecError(context.Background(), errors.New(msg), nil)}, pod, it.Container)
		c := CompareUse(it, pod, obj, obs, CompareOptions{Now: testNow})
		if c.Cause != CauseNotRunning || !strings.HasPrefix(c.Reason, "not running: the container is restarting (") || !strings.Contains(c.Reason, "restart count 3; last exit: Error, code 1") {
			t.Errorf("exec %q: %s %s (%s), want not running with the restart state", msg, c.State, c.Cause, c.Reason)
		}
	}
	// the status says waiting between two runs
	st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	c, done := precheck(it, pod, inputsFor(it, obj))
	if !done || c.Cause != CauseNotRunning || !strings.HasPrefix(c.Reason, "not running: the container is restarting (waiting: CrashLoopBackOff; restart count 3; last exit: Error, code 1)") {
		t.Errorf("waiting: %s %s (%s), want not running with the restart state", c.State, c.Cause, c.Reason)
	}
	// killed as the container stops: the same answer; a read that failed
	// by itself keeps its own
	for code, want := range map[string]string{"exit code 137": containerread.VerifyNotRunning, "exit code 2: sh: bad": containerread.VerifyFailed} {
		obs := explainRestart(&containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: code}}, pod, it.Container)
		if obs.Err.Reason != want {
			t.Errorf("%s: %v, want %s", code, obs.Err, want)
		}
	}
	// a container running again after an earlier restart, whose read failed
	// for a reason of its own (the node reader's prefix before it), keeps it;
	// a kill reported through that prefix is still the container stopping
	running := configMapVolumePod()
	rs := &running.Status.ContainerStatuses[0]
	rs.RestartCount = 3
	rs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	rs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for msg, want := range map[string]string{"node reader ns/r: bad output": containerread.VerifyFailed, "node reader ns/r: exit code 2": containerread.VerifyFailed,
		"node reader ns/r: exit code 137": containerread.VerifyNotRunning} {
		obs := explainRestart(&containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: msg}}, running, it.Container)
		if obs.Err.Reason != want {
			t.Errorf("running after a restart, %q: %v, want %s", msg, obs.Err, want)
		}
	}
	// a container that never restarted keeps the exec's own answer; killed
	// (the status was read before its first run ended) it is not running
	fresh := configMapVolumePod()
	obs := explainRestart(&containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "exit code 2"}}, fresh, it.Container)
	if obs.Err.Reason != containerread.VerifyFailed {
		t.Errorf("no restart: %v, want the exec failure kept", obs.Err)
	}
	obs = explainRestart(&containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "exit code 137"}}, fresh, it.Container)
	if obs.Err.Reason != containerread.VerifyNotRunning || obs.Err.Message != "the container stopped while it was read (exit code 137)" {
		t.Errorf("killed in its first run: %v, want not running", obs.Err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func secretProj(name string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

// A projected volume of ConfigMaps a and cm and a Secret s that was not
// read (no --secrets). A file of cm equal to the API is current whichever
// source wrote it; one that differs may be stale or s's, and only where s
// comes after cm (a later source wins a path both write); a file cm lacks
// that s may write does not keep cm from in-sync, and is named.
func TestCompareWithUnreadSecretSource(t *testing.T) {
	after := projectedPod(cmProj("a", false), cmProj("cm", false), secretProj("s"))
	before := projectedPod(secretProj("s"), cmProj("a", false), cmProj("cm", false))
	blocked := projectedPod(cmProj("gone", false), cmProj("cm", false), secretProj("s"))
	lookup := func(k ObjectKey) Object {
		switch {
		case k.Kind == KindSecret:
			return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Unread: true}
		case k.Name == "gone":
			return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
		}
		return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Exists: true, Data: map[string][]byte{"greeting": []byte("hi")}}
	}
	cm := cmWith(map[string]string{"colour": "red", "size": "m"}, testNow.Add(-5*time.Second))
	immutable := cm
	immutable.Immutable = true
	longAgo := cmWith(map[string]string{"colour": "red", "size": "m"}, testNow.Add(-10*time.Minute))
	withNew := cmWith(map[string]string{"colour": "red", "size": "m", "new": "n"}, testNow)
	sizeRemoved := cmWith(map[string]string{"colour": "red"}, testNow)
	files := func(colour string, more ...string) map[string]string {
		m := map[string]string{"greeting": "hi", "colour": colour, "size": "m", "token": secretValue}
		for _, k := range more {
			delete(m, k)
		}
		return m
	}
	const shadowed = `"colour" differs from the API: stale, or shadowed by Secret "s" (not read; --secrets reads it)`
	const extras = `not compared: "token" may come from Secret "s", which was not read (add --secrets)`
	cases := []struct {
		name   string
		pod    *corev1.Pod
		obj    Object
		files  map[string]string
		want   State
		cause  StateCause
		reason []string
		not    string
	}{
		{"equal, the Secret after: in-sync", after, cm, files("red"), StateInSync, "", []string{"matches the API (2 files)", extras}, "shadowed"},
		{"differs, the Secret after: pending, both named", after, cm, files("blue"), StatePending, "", []string{shadowed, "changed 5s ago", extras}, ""},
		{"differs, the Secret before: a plain difference", before, cm, files("blue"), StatePending, "", []string{`differs from the API ("colour")`, extras}, "shadowed"},
		{"equal, the Secret before: in-sync", before, cm, files("red"), StateInSync, "", []string{"matches the API (2 files)", extras}, ""},
		{"a definite difference beside", after, withNew, files("blue"), StatePending, "",
			[]string{`differs from the API ("new" (not in the container yet)); ` + shadowed}, ""},
		{"a removed key's file the Secret may write: in-sync, named", after, sizeRemoved, files("red"), StateInSync, "",
			[]string{"matches the API (1 file)", `not compared: "size", "token" may come from Secret "s"`}, ""},
		{"a removed key's file and a difference: pending", after, sizeRemoved, files("blue"), StatePending, "",
			[]string{shadowed, `not compared: "size", "token" may come from Secret "s"`}, ""},
		{"differs, immutable: waiting cannot tell", after, immutable, files("blue"), StateUnverifiable, CauseSecretsNotRead,
			[]string{shadowed, "the kubelet does not rewrite the volume (the configmap is immutable)"}, ""},
		{"differs, blocked by another source: waiting cannot tell", blocked, cm, files("blue"), StateUnverifiable, CauseSecretsNotRead,
			[]string{shadowed, `the kubelet does not rewrite the volume (blocked by another source: ConfigMap "gone"`}, ""},
		{"differs long after the change: most likely the Secret's", after, longAgo, files("blue"), StateUnverifiable, CauseSecretsNotRead,
			[]string{shadowed, "longer ago than the kubelet takes to write a change", "most likely the Secret's"}, "failing to sync"},
		{"missing file: a plain difference", after, cm, files("red", "colour"), StatePending, "", []string{`differs from the API ("colour" (not in the container yet))`}, "shadowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareUse(volItem(ModeProjected, "/etc/cfg"), tc.pod, tc.obj, atomicObs(tc.files), CompareOptions{Now: testNow, Object: lookup})
			if got.State != tc.want || got.Cause != tc.cause {
				t.Fatalf("%s cause %q (%s), want %s cause %q", got.State, got.Cause, got.Reason, tc.want, tc.cause)
			}
			for _, r := range tc.reason {
				if !strings.Contains(got.Reason, r) {
					t.Errorf("reason %q lacks %q", got.Reason, r)
				}
			}
			if tc.not != "" && strings.Contains(got.Reason, tc.not) {
				t.Errorf("reason %q says %q", got.Reason, tc.not)
			}
			if leaks(got) {
				t.Errorf("what may be the Secret's file is in the comparison: %+v", got.Files)
			}
		})
	}
}

// The file that may be the Secret's carries the Secrets that may shadow it
// and no content; the others are compared as usual.
func TestShadowableFileKeepsNoContent(t *testing.T) {
	pod := projectedPod(cmProj("cm", false), secretProj("s"), secretProj("t"))
	obs := atomicObs(map[string]string{"colour": secretValue, "size": "m"})
	got := CompareUse(volItem(ModeProjected, "/etc/cfg"), pod, cmWith(map[string]string{"colour": "red", "size": "m"}, testNow), obs, CompareOptions{Now: testNow})
	byPath := map[string]FileComparison{}
	for _, f := range got.Files {
		byPath[f.Path] = f
	}
	c, s := byPath["colour"], byPath["size"]
	if c.Status != FileDiffers || c.Verified == nil || c.Verified.HasData || c.Verified.SHA256 != "" || c.Verified.Size != int64(len(secretValue)) {
		t.Errorf("colour: %+v, want differs with its size and no content", c)
	}
	if want := `stale, or shadowed by Secret "s" or Secret "t" (not read; --secrets reads them)`; c.ShadowReason() != want {
		t.Errorf("colour: shadow reason %q, want %q", c.ShadowReason(), want)
	}
	if s.Status != FileEqual || len(s.ShadowedBy) != 0 || s.ShadowReason() != "" || !s.Verified.HasData {
		t.Errorf("size: %+v, want equal, not shadowed, its content kept", s)
	}
}
