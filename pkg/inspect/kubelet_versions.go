package inspect

// What differs between kubelet versions, per node: the one table of the
// version facts this package models, and the pure decisions read from a
// node's status.nodeInfo.kubeletVersion and, where /configz was read, its
// explicit feature gates and change-detection strategy. The sources are
// those of kubelet v1.30.14 and v1.37.2 (docs/kubelet-facts.md).

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The oldest and newest kubelet minor versions the facts were checked on.
const (
	checkedOldestMinor = 30
	checkedNewestMinor = 37
)

// Kubelet features whose behaviour differs between the checked versions
// (named after their feature gates).
const (
	// FeatureEnvFiles: env valueFrom.fileKeyRef, a variable read from a
	// file in an emptyDir volume when the container is created.
	FeatureEnvFiles = "EnvFiles"
	// FeatureSidecarContainers: an init container with restartPolicy
	// Always runs beside the regular containers.
	FeatureSidecarContainers = "SidecarContainers"
	// FeatureClusterTrustBundleProjection: a clusterTrustBundle source of
	// a projected volume.
	FeatureClusterTrustBundleProjection = "ClusterTrustBundleProjection"
	// FeaturePodCertificateProjection: a podCertificate source of a
	// projected volume (the kubelet's gate is PodCertificateRequest).
	FeaturePodCertificateProjection = "PodCertificateRequest"
)

// kubeletFeature is one row of the table: from which 1.x minor the
// kubelet knows the API field, from which it is on by default, from which
// it can no longer be turned off, what a kubelet without it does, and
// where the source says so.
type kubeletFeature struct {
	known, onByDefault, locked int
	without                    string
	source                     string
}

// kubeletFeatures is the table (k8s.io/kubernetes pkg/features/kube_features.go
// for the gates' versions).
var kubeletFeatures = map[string]kubeletFeature{
	FeatureEnvFiles: {known: 34, onByDefault: 35,
		without: "sets the variable to the empty string (it matches no valueFrom case it handles)",
		source:  "pkg/kubelet/kubelet_pods.go makeEnvironmentVariables (v1.30.14: no fileKeyRef case; v1.37.2: read with envutil.ParseEnv)"},
	FeatureSidecarContainers: {known: 28, onByDefault: 29, locked: 37,
		without: "rejects the pod at admission (InitContainerRestartPolicyForbidden)",
		source:  "pkg/kubelet/lifecycle/predicate.go (v1.30.14); v1.37.2 has no such gate: always on"},
	FeatureClusterTrustBundleProjection: {known: 29, onByDefault: 37,
		without: "fails the whole projected volume (its no-op ClusterTrustBundle manager answers an error), so no source of it is written or updated",
		source:  "pkg/kubelet/clustertrustbundle NoopManager, pkg/volume/projected/projected.go collectData (v1.30.14, v1.37.2)"},
	FeaturePodCertificateProjection: {known: 34, onByDefault: 37,
		without: "fails the whole projected volume (its no-op pod certificate manager answers \"unimplemented\"); a kubelet older than v1.34 does not know the source and writes the others",
		source:  "pkg/kubelet/podcertificate NoOpManager, pkg/volume/projected/projected.go collectData (v1.37.2)"},
}

// KubeletVersion is a kubelet's minor version (major 1).
type KubeletVersion struct {
	Minor int
	// Text is the version as the node reports it ("v1.37.2").
	Text string
}

// ParseKubeletVersion reads a node's status.nodeInfo.kubeletVersion
// ("v1.37.2", "v1.30.14-eks-1234", "1.33.0"); false for anything else.
func ParseKubeletVersion(s string) (KubeletVersion, bool) {
	v := strings.TrimPrefix(strings.TrimSpace(s), "v")
	major, rest, ok := strings.Cut(v, ".")
	if !ok || major != "1" {
		return KubeletVersion{}, false
	}
	minorText, _, _ := strings.Cut(rest, ".")
	minor, err := strconv.Atoi(minorText)
	if err != nil || minor < 0 {
		return KubeletVersion{}, false
	}
	return KubeletVersion{Minor: minor, Text: "v1." + strings.TrimPrefix(v, "1.")}, true
}

// NodeKubelet is what is known of the kubelet of one node.
type NodeKubelet struct {
	Node string
	// Version is known when the node was read and reports a valid version.
	Version      KubeletVersion
	VersionKnown bool
	// Config is what /configz said, when it was read.
	Config *KubeletTiming
}

// nodeKubelet gathers what the snapshot knows of the node's kubelet.
func nodeKubelet(node string, snap *Snapshot) NodeKubelet {
	k := NodeKubelet{Node: node}
	if snap == nil {
		return k
	}
	if n, ok := snap.Nodes[node]; ok && n != nil {
		k.Version, k.VersionKnown = ParseKubeletVersion(n.Status.NodeInfo.KubeletVersion)
	}
	if kc, ok := snap.KubeletConfigs[node]; ok {
		k.Config = &kc
	}
	return k
}

// FeatureSupport says whether a kubelet has a feature, and on what basis.
type FeatureSupport struct {
	On bool
	// Known is false when the kubelet's version predates the API field:
	// it does not even decode it.
	Known bool
	// Basis names the kubelet and why ("kubelet v1.30.14 on node n1: on
	// by default from v1.35").
	Basis string
	// Without is what a kubelet without the feature does.
	Without string
}

// Feature decides whether the node's kubelet has the feature: an explicit
// gate of its configuration first (unless the version locks it on), then
// the default of its version; an unknown version is taken to be the newest
// checked one, and the basis says so.
func (k NodeKubelet) Feature(name string) FeatureSupport {
	f, ok := kubeletFeatures[name]
	if !ok {
		return FeatureSupport{On: true, Known: true, Basis: "not a version-dependent feature"}
	}
	minor, who := checkedNewestMinor, fmt.Sprintf("kubelet version of node %q unknown: v1.%d assumed", k.Node, checkedNewestMinor)
	if k.VersionKnown {
		minor, who = k.Version.Minor, fmt.Sprintf("kubelet %s on node %q", k.Version.Text, k.Node)
	}
	s := FeatureSupport{Known: minor >= f.known, Without: f.without}
	gate, explicit := false, false
	if k.Config != nil && k.Config.FeatureGates != nil {
		gate, explicit = k.Config.FeatureGates[name]
	}
	switch {
	case !s.Known:
		s.Basis = fmt.Sprintf("%s: %s is new in v1.%d", who, name, f.known)
	case f.locked > 0 && minor >= f.locked:
		s.On, s.Basis = true, fmt.Sprintf("%s: %s is always on from v1.%d", who, name, f.locked)
	case explicit:
		s.On, s.Basis = gate, fmt.Sprintf("%s: feature gate %s=%t in its configuration", who, name, gate)
	case f.onByDefault > 0 && minor >= f.onByDefault:
		s.On, s.Basis = true, fmt.Sprintf("%s: %s is on by default from v1.%d", who, name, f.onByDefault)
	default:
		s.Basis = fmt.Sprintf("%s: %s is off by default before v1.%d", who, name, f.onByDefault)
	}
	return s
}

// checkedNote is empty for a kubelet whose version the facts were checked
// on (or an unknown one), else a note that they were not.
func (k NodeKubelet) checkedNote() string {
	if !k.VersionKnown || (k.Version.Minor >= checkedOldestMinor && k.Version.Minor <= checkedNewestMinor) {
		return ""
	}
	return fmt.Sprintf(" (kubelet %s on node %q: this was checked on v1.%d to v1.%d only)", k.Version.Text, k.Node, checkedOldestMinor, checkedNewestMinor)
}

// Strategy is the node's change-detection strategy and how it is known.
func (k NodeKubelet) Strategy() (strategy string, known bool) {
	if k.Config != nil && k.Config.Strategy != "" {
		return k.Config.Strategy, true
	}
	return StrategyWatch, false
}

// recreatedImmutable says what the node's kubelet does with a deleted and
// re-created immutable object, by its change-detection strategy
// (pkg/kubelet/util/manager, the same in v1.30.14 and v1.37.2): Watch stops
// watching an object once it is seen immutable and keeps serving the old
// copy while any pod of the node references it; Cache re-fetches it once
// its TTL has passed (and at once for a new pod, whose registration drops
// the cached copy); Get reads it from the API server on every use.
func recreatedImmutable(it *Use, snap *Snapshot) string {
	k := nodeKubelet(it.Pod.Node, snap)
	strategy, known := k.Strategy()
	basis := fmt.Sprintf("the %s strategy of node %q's kubelet configuration", strategy, k.Node)
	if !known {
		basis = "the Watch strategy assumed (the kubelet default; --kubelet-config reads the node's)"
	}
	hot := it.Mode.HotUpdating() && (it.Container == nil || it.Container.Type != ContainerInit)
	switch strategy {
	case StrategyCache, StrategyGet:
		what := "a restarted container or a new pod reads a deleted and re-created one"
		if hot {
			d := EstimateDelay(it.Pod.Node, snap)
			what = fmt.Sprintf("a deleted and re-created one is written into this volume within %s", formatDelay(d))
		}
		return fmt.Sprintf("it never changes; with %s %s%s", basis, what, k.checkedNote())
	}
	return fmt.Sprintf("it never changes, and with %s a deleted and re-created one is not picked up by running pods, nor by new pods on a node where another pod still uses it; roll out a new name instead%s", basis, k.checkedNote())
}

// kubeletWithout decides a use that the node's kubelet cannot serve at all
// for lack of a feature the pod needs: a sidecar container where sidecars
// are off (the pod is rejected), a projected volume with a source the
// kubelet fails the whole volume on (the pod does not start). "" when the
// kubelet has what the use needs.
func kubeletWithout(it *Use, pod *corev1.Pod, snap *Snapshot) (Verdict, string) {
	if it.Container != nil && it.Container.Type == ContainerSidecar {
		if fs := nodeKubelet(it.Pod.Node, snap).Feature(FeatureSidecarContainers); !fs.On {
			return VerdictRestartNeeded, fmt.Sprintf("sidecar container %s (an init container with restartPolicy Always) on a kubelet without sidecar support (%s): it %s; nothing runs to read this %s",
				it.Container.Name, fs.Basis, fs.Without, strings.ToLower(it.Object.Kind))
		}
	}
	if why := projectionBlocker(it, pod, snap); why != "" {
		return VerdictMissing, why
	}
	return "", ""
}

// projectionBlocker names the source of the use's projected volume that
// the node's kubelet fails the whole volume on (a clusterTrustBundle or
// podCertificate source it has not enabled), and why; "" when none.
func projectionBlocker(it *Use, pod *corev1.Pod, snap *Snapshot) string {
	if it.Mode != ModeProjected || it.Volume == nil || pod == nil {
		return ""
	}
	k := nodeKubelet(it.Pod.Node, snap)
	for _, v := range pod.Spec.Volumes {
		if v.Name != it.Volume.Name || v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			var feature, what string
			switch {
			case src.ClusterTrustBundle != nil:
				feature, what = FeatureClusterTrustBundleProjection, "a clusterTrustBundle source"
			case src.PodCertificate != nil:
				feature, what = FeaturePodCertificateProjection, "a podCertificate source"
			default:
				continue
			}
			if fs := k.Feature(feature); fs.Known && !fs.On {
				return fmt.Sprintf("projected volume %q also has %s, which this kubelet has not enabled (%s); it %s: this %s is never written there and the pod cannot start",
					it.Volume.Name, what, fs.Basis, fs.Without, strings.ToLower(it.Object.Kind))
			}
		}
	}
	return ""
}

// fileEnvNote says what a kubelet does with the fileKeyRef variables a
// subPathExpr refers to, when it refers to any: read from a file of an
// emptyDir volume when the container starts (unknown from the spec), or,
// on a kubelet without EnvFiles, the empty string, which the expansion
// rejects. empty reports the latter.
func fileEnvNote(expr string, pod *corev1.Pod, container string, snap *Snapshot, node string) (note string, empty bool) {
	c, ok := findContainer(pod, container)
	if !ok {
		return "", false
	}
	refs := map[string]bool{}
	expand(expr, func(name string) (string, bool) {
		refs[name] = true
		return "", true
	})
	for _, e := range c.env {
		if !refs[e.Name] || e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil {
			continue
		}
		f := e.ValueFrom.FileKeyRef
		fs := nodeKubelet(node, snap).Feature(FeatureEnvFiles)
		if !fs.On {
			return fmt.Sprintf("%s is a fileKeyRef variable and this kubelet lacks EnvFiles (%s): it %s, so the expansion fails and the container cannot start", e.Name, fs.Basis, fs.Without), true
		}
		note = fmt.Sprintf("%s is read from key %q of file %q in emptyDir volume %q when the container starts (fileKeyRef; %s)", e.Name, f.Key, f.Path, f.VolumeName, fs.Basis)
	}
	return note, false
}
