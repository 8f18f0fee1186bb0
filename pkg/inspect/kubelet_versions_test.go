package inspect

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseKubeletVersion(t *testing.T) {
	for in, want := range map[string]int{"v1.37.2": 37, "v1.30.14": 30, "1.33.0": 33, "v1.31.4-eks-1234": 31, " v1.35.0+k3s1": 35} {
		v, ok := ParseKubeletVersion(in)
		if !ok || v.Minor != want {
			t.Errorf("ParseKubeletVersion(%q) = %+v %v, want minor %d", in, v, ok, want)
		}
	}
	for _, bad := range []string{"", "v2.0.0", "vx.y", "v1.", "v1.x.0", "kubelet"} {
		if v, ok := ParseKubeletVersion(bad); ok {
			t.Errorf("ParseKubeletVersion(%q) = %+v, want not ok", bad, v)
		}
	}
}

// TestKubeletFeatureByVersion: each feature from the node's version, an
// explicit gate of its configuration winning unless the version locks it.
func TestKubeletFeatureByVersion(t *testing.T) {
	kubelet := func(version string, gates map[string]bool) NodeKubelet {
		k := NodeKubelet{Node: "n"}
		k.Version, k.VersionKnown = ParseKubeletVersion(version)
		if gates != nil {
			k.Config = &KubeletTiming{Strategy: StrategyWatch, FeatureGates: gates}
		}
		return k
	}
	cases := []struct {
		version   string
		gates     map[string]bool
		feature   string
		on, known bool
		basis     string
	}{
		{"v1.30.14", nil, FeatureEnvFiles, false, false, "EnvFiles is new in v1.34"},
		{"v1.34.1", nil, FeatureEnvFiles, false, true, "off by default before v1.35"},
		{"v1.34.1", map[string]bool{"EnvFiles": true}, FeatureEnvFiles, true, true, "feature gate EnvFiles=true"},
		{"v1.35.0", nil, FeatureEnvFiles, true, true, "on by default from v1.35"},
		{"v1.37.2", map[string]bool{"EnvFiles": false}, FeatureEnvFiles, false, true, "EnvFiles=false"},
		{"", nil, FeatureEnvFiles, true, true, "unknown: v1.37 assumed"},
		{"v1.30.14", nil, FeatureClusterTrustBundleProjection, false, true, "off by default before v1.37"},
		{"v1.37.2", nil, FeatureClusterTrustBundleProjection, true, true, "on by default from v1.37"},
		{"v1.30.14", nil, FeaturePodCertificateProjection, false, false, "new in v1.34"},
		{"v1.35.0", nil, FeaturePodCertificateProjection, false, true, "off by default"},
		{"v1.30.14", nil, FeatureSidecarContainers, true, true, "on by default from v1.29"},
		{"v1.30.14", map[string]bool{"SidecarContainers": false}, FeatureSidecarContainers, false, true, "SidecarContainers=false"},
		{"v1.37.2", map[string]bool{"SidecarContainers": false}, FeatureSidecarContainers, true, true, "always on"},
	}
	for _, c := range cases {
		got := kubelet(c.version, c.gates).Feature(c.feature)
		if got.On != c.on || got.Known != c.known || !strings.Contains(got.Basis, c.basis) {
			t.Errorf("%s %v %s: %+v, want on=%v known=%v basis ~ %q", c.version, c.gates, c.feature, got, c.on, c.known, c.basis)
		}
	}
}

// mixedSnapshot is a cluster of two nodes, old (kubelet v1.30.14) and new
// (v1.37.2), each running the same pod: a projected volume of a ConfigMap
// and a clusterTrustBundle, and a subPathExpr built from a fileKeyRef
// variable.
func mixedSnapshot() *Snapshot {
	node := func(name, version string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version}}}
	}
	signer := "example.com/signer"
	podOn := func(name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "u-" + "name"}, Spec: corev1.PodSpec{
			NodeName: node,
			Volumes: []corev1.Volume{
				{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
					{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{SignerName: &signer, Path: "ca.pem"}},
				}}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{Name: "c",
				Env: []corev1.EnvVar{{Name: "DIR", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{
					VolumeName: "scratch", Path: "vars.env", Key: "DIR"}}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "bundle", MountPath: "/etc/bundle"},
					{Name: "conf", MountPath: "/etc/conf", SubPathExpr: "$(DIR)"},
					{Name: "scratch", MountPath: "/scratch"},
				}}},
		}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	return &Snapshot{
		Pods:       []corev1.Pod{podOn("on-old", "old"), podOn("on-new", "new")},
		ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "app"}: {ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"}, Data: map[string]string{"a": "1"}}},
		Nodes:      map[string]*corev1.Node{"old": node("old", "v1.30.14"), "new": node("new", "v1.37.2")},
	}
}

// TestMixedVersionNodesPredictPerNode: the same pod spec on a v1.30.14 and
// a v1.37.2 kubelet gets each node's verdict: the old kubelet fails the
// whole projected volume on the clusterTrustBundle source (its gate is off
// by default before v1.37) and sets a fileKeyRef variable to the empty
// string (no EnvFiles before v1.34); the new one writes the ConfigMap and
// reads the variable from the emptyDir file.
func TestMixedVersionNodesPredictPerNode(t *testing.T) {
	items, err := Build(mixedSnapshot(), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Use{}
	for _, it := range items {
		got[it.Pod.Name+" "+it.Volume.MountPath] = it
	}
	want := []struct {
		key     string
		verdict Verdict
		reason  string
	}{
		{"on-old /etc/bundle", VerdictMissing, `projected volume "bundle" also has a clusterTrustBundle source, which this kubelet has not enabled (kubelet v1.30.14 on node "old": ClusterTrustBundleProjection is off by default before v1.37)`},
		{"on-new /etc/bundle", VerdictHotUpdate, "mounted volume: the kubelet rewrites it"},
		{"on-old /etc/conf", VerdictRestartNeeded, `DIR is a fileKeyRef variable and this kubelet lacks EnvFiles (kubelet v1.30.14 on node "old": EnvFiles is new in v1.34): it sets the variable to the empty string`},
		{"on-new /etc/conf", VerdictRestartNeeded, `DIR is read from key "DIR" of file "vars.env" in emptyDir volume "scratch" when the container starts (fileKeyRef; kubelet v1.37.2 on node "new": EnvFiles is on by default from v1.35)`},
	}
	for _, w := range want {
		it, ok := got[w.key]
		if !ok {
			t.Errorf("no use %q in %v", w.key, items)
			continue
		}
		if it.Verdict != w.verdict || !strings.Contains(it.Reason, w.reason) {
			t.Errorf("%s: %s %q\nwant %s containing %q", w.key, it.Verdict, it.Reason, w.verdict, w.reason)
		}
	}
	if len(items) != 4 {
		t.Errorf("%d uses, want 4 (a fileKeyRef reads no ConfigMap or Secret)", len(items))
	}
}

// TestRecreatedImmutableByStrategy: what a deleted and re-created immutable
// object does, from the node's change-detection strategy; unknown, the
// Watch default is assumed and said.
func TestRecreatedImmutableByStrategy(t *testing.T) {
	snap := &Snapshot{
		Nodes: map[string]*corev1.Node{
			"watch": {ObjectMeta: metav1.ObjectMeta{Name: "watch"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}}},
			"cache": {ObjectMeta: metav1.ObjectMeta{Name: "cache", Annotations: map[string]string{NodeTTLAnnotation: "15"}}},
			"old":   {ObjectMeta: metav1.ObjectMeta{Name: "old"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.25.0"}}},
		},
		KubeletConfigs: map[string]KubeletTiming{
			"watch": {SyncFrequency: time.Minute, Strategy: StrategyWatch},
			"cache": {SyncFrequency: time.Minute, Strategy: StrategyCache},
			"get":   {SyncFrequency: time.Minute, Strategy: StrategyGet},
		},
	}
	obj := Object{Kind: KindConfigMap, Namespace: "ns", Name: "frozen", Exists: true, Immutable: true, Data: map[string][]byte{"k": []byte("v")}}
	cases := []struct {
		node string
		mode Mode
		want string
	}{
		{"watch", ModeVolume, `with the Watch strategy of node "watch"'s kubelet configuration a deleted and re-created one is not picked up by running pods`},
		{"cache", ModeVolume, `with the Cache strategy of node "cache"'s kubelet configuration a deleted and re-created one is written into this volume within 0-105s`},
		{"get", ModeVolume, `with the Get strategy of node "get"'s kubelet configuration a deleted and re-created one is written into this volume within 0-90s`},
		{"get", ModeEnv, `a restarted container or a new pod reads a deleted and re-created one`},
		{"unknown", ModeVolume, "with the Watch strategy assumed (the kubelet default; --kubelet-config reads the node's) a deleted and re-created one is not picked up"},
		{"old", ModeVolume, `(kubelet v1.25.0 on node "old": this was checked on v1.30 to v1.37 only)`},
	}
	for _, c := range cases {
		it := Use{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "frozen"}, Pod: PodRef{Name: "p", Node: c.node},
			Container: &ContainerRef{Name: "c", Type: ContainerRegular}, Mode: c.mode, EnvName: "K", Keys: []string{"k"}}
		Predict(&it, nil, obj, snap)
		if it.Verdict != VerdictNeverChanges || !strings.Contains(it.Reason, c.want) {
			t.Errorf("%s %s: %s %q\nwant never-changes containing %q", c.node, c.mode, it.Verdict, it.Reason, c.want)
		}
	}
}

// TestSidecarOnAKubeletWithoutSidecars: a sidecar's use is predicted as a
// regular container's where the kubelet runs sidecars (every checked
// version by default), and as a pod the kubelet rejects where its
// configuration turns the gate off (v1.29 to v1.32 only).
func TestSidecarOnAKubeletWithoutSidecars(t *testing.T) {
	snap := &Snapshot{
		Nodes: map[string]*corev1.Node{
			"on":  {ObjectMeta: metav1.ObjectMeta{Name: "on"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.30.14"}}},
			"off": {ObjectMeta: metav1.ObjectMeta{Name: "off"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.30.14"}}},
		},
		KubeletConfigs: map[string]KubeletTiming{"off": {Strategy: StrategyWatch, FeatureGates: map[string]bool{"SidecarContainers": false}}},
	}
	obj := Object{Kind: KindConfigMap, Namespace: "ns", Name: "cm", Exists: true, Data: map[string][]byte{"k": []byte("v")}}
	for node, want := range map[string]string{
		"on":  "mounted volume: the kubelet rewrites it",
		"off": `sidecar container proxy (an init container with restartPolicy Always) on a kubelet without sidecar support (kubelet v1.30.14 on node "off": feature gate SidecarContainers=false in its configuration): it rejects the pod at admission`,
	} {
		it := Use{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "cm"}, Pod: PodRef{Name: "p", Node: node},
			Container: &ContainerRef{Name: "proxy", Type: ContainerSidecar}, Mode: ModeVolume, Volume: &VolumeRef{Name: "v", MountPath: "/etc/v"}}
		Predict(&it, nil, obj, snap)
		if !strings.Contains(it.Reason, want) {
			t.Errorf("node %s: %s %q\nwant %q", node, it.Verdict, it.Reason, want)
		}
	}
}
