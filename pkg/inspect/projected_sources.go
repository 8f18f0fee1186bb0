package inspect

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// projectedSources is what the other sources of a use's projected volume
// write, as far as it is known. The zero value (not a projected volume)
// writes nothing.
type projectedSources struct {
	projected bool
	// claimed holds the paths the other sources write at fixed places
	// (downwardAPI, serviceAccountToken, clusterTrustBundle, podCertificate
	// and items of configMap and secret sources) and every directory above
	// them; whole holds the other whole configMap and secret sources read.
	claimed map[string]bool
	whole   []Object
	// unread names the other whole Secret sources that were not read: any
	// top-level name may be one of their keys.
	unread []string
	// The same for the sources after this use's own: they win a path both
	// write (the kubelet merges the sources in order, a later one
	// overwriting an earlier one's file).
	laterFixed  map[string]bool
	laterWhole  []Object
	laterUnread []string
	// writers says which source writes each fixed path (sourceDescription)
	writers map[string]string
	// unknown counts the sources of a kind this client does not know
	// (fields of a newer API): what they write is unknown.
	unknown int
}

// isOwnSource tells whether the i-th source of the projected volume is the
// use's own: by its position when the volume names the object more than
// once, else by kind, name and items.
func isOwnSource(it Use, i int, kind, name string, items []corev1.KeyToPath) bool {
	if kind != it.Object.Kind || name != it.Object.Name {
		return false
	}
	if it.Volume != nil && it.Volume.Source > 0 {
		return it.Volume.Source == i+1
	}
	return sameItems(items, it.KeyPaths)
}

// keepRepeatedPositions keeps the position of the sources whose object the
// volume names more than once, and clears the others': only repeated
// objects need it to tell their uses apart.
func keepRepeatedPositions(srcs []source) []source {
	n := map[[2]string]int{}
	for _, s := range srcs {
		n[[2]string{s.kind, s.name}]++
	}
	for i := range srcs {
		if n[[2]string{srcs[i].kind, srcs[i].name}] < 2 {
			srcs[i].position = 0
		}
	}
	return srcs
}

// knownProjection tells whether the source sets a field this client
// knows (an empty one is a field of a newer API, dropped when decoding).
func knownProjection(s corev1.VolumeProjection) bool {
	return s.ConfigMap != nil || s.Secret != nil || s.DownwardAPI != nil || s.ServiceAccountToken != nil ||
		s.ClusterTrustBundle != nil || s.PodCertificate != nil
}

// otherSources describes the other sources of the use's projected volume:
// configMap, secret, downwardAPI, serviceAccountToken, clusterTrustBundle
// and podCertificate. lookup reads the configMap and secret sources.
func otherSources(it Use, pod *corev1.Pod, lookup func(ObjectKey) Object) projectedSources {
	var v *corev1.Volume
	if it.Volume != nil {
		v = podVolume(pod, it.Volume.Name)
	}
	if v == nil || v.Projected == nil {
		return projectedSources{}
	}
	ps := projectedSources{projected: true, claimed: map[string]bool{}, laterFixed: map[string]bool{}}
	self, later := false, false
	for i, s := range v.Projected.Sources {
		kind, name, items, fixed := projectedSource(s)
		if !self && isOwnSource(it, i, kind, name, items) {
			self, later = true, true
			continue
		}
		if kind == "" && len(fixed) == 0 && !knownProjection(s) {
			// a source this client does not know (a newer API field):
			// any top-level name may be its
			ps.unknown++
		}
		for _, kp := range items {
			fixed = append(fixed, kp.Path)
		}
		if kind != "" && len(items) == 0 {
			ps.addWhole(ObjectKey{Kind: kind, Namespace: it.Object.Namespace, Name: name}, lookup, later)
		}
		ps.claim(fixed, later, sourceDescription(s))
	}
	return ps
}

// projectedSource is what one source of a projected volume is: a configMap
// or secret (kind, name and items), or the paths it writes at fixed places.
func projectedSource(s corev1.VolumeProjection) (kind, name string, items []corev1.KeyToPath, fixed []string) {
	switch {
	case s.ConfigMap != nil:
		kind, name, items = KindConfigMap, s.ConfigMap.Name, s.ConfigMap.Items
	case s.Secret != nil:
		kind, name, items = KindSecret, s.Secret.Name, s.Secret.Items
	case s.DownwardAPI != nil:
		for _, f := range s.DownwardAPI.Items {
			fixed = append(fixed, f.Path)
		}
	case s.ServiceAccountToken != nil:
		fixed = append(fixed, s.ServiceAccountToken.Path)
	case s.ClusterTrustBundle != nil:
		fixed = append(fixed, s.ClusterTrustBundle.Path)
	case s.PodCertificate != nil:
		fixed = append(fixed, s.PodCertificate.CredentialBundlePath, s.PodCertificate.KeyPath, s.PodCertificate.CertificateChainPath)
	}
	return kind, name, items, fixed
}

// addWhole records a whole configMap or secret source: its data when it
// was read, its name when not.
func (ps *projectedSources) addWhole(k ObjectKey, lookup func(ObjectKey) Object, later bool) {
	obj := Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	if lookup != nil {
		obj = lookup(k)
	} else {
		obj.Unread = true
	}
	if obj.Unread {
		what := fmt.Sprintf("%s %q", k.Kind, k.Name)
		ps.unread = append(ps.unread, what)
		if later {
			ps.laterUnread = append(ps.laterUnread, what)
		}
		return
	}
	ps.whole = append(ps.whole, obj)
	if later {
		ps.laterWhole = append(ps.laterWhole, obj)
	}
}

// claim records paths a source writes at fixed places, and the directories
// above them.
func (ps *projectedSources) claim(fixed []string, later bool, desc string) {
	for _, f := range fixed {
		if f == "" {
			continue
		}
		c := path.Clean(f)
		ps.claimed[c] = true
		if ps.writers == nil {
			ps.writers = map[string]string{}
		}
		ps.writers[c] = desc
		if later {
			ps.laterFixed[c] = true
		}
		for d := path.Dir(c); d != "." && d != "/"; d = path.Dir(d) {
			ps.claimed[d] = true
		}
	}
}

// writes reports whether another source writes the path p (cleaned,
// relative to the volume root) or something below it: known when a source
// that was read (or a fixed path) does, maybe naming the unread Secret
// sources that could (their keys are top-level names).
func (ps projectedSources) writes(p string) (known bool, maybe []string) {
	if !ps.projected {
		return false, nil
	}
	return sourcesWrite(p, ps.claimed, ps.whole, ps.unread)
}

// overrides reports whether a source after this use's own writes the file
// p, so that the container shows that source's file there, not this one's.
func (ps projectedSources) overrides(p string) (known bool, maybe []string) {
	if !ps.projected {
		return false, nil
	}
	return sourcesWrite(p, ps.laterFixed, ps.laterWhole, ps.laterUnread)
}

// sourcesWrite: p is written by a fixed path or a whole source that was
// read (known), or maybe by unread Secrets (their keys are top-level names).
func sourcesWrite(p string, fixed map[string]bool, whole []Object, unread []string) (known bool, maybe []string) {
	if fixed[p] {
		return true, nil
	}
	for _, w := range whole {
		if _, ok := w.Data[p]; ok {
			return true, nil
		}
	}
	if !strings.Contains(p, "/") {
		maybe = unread
	}
	return false, maybe
}

func sameItems(a []corev1.KeyToPath, b []KeyPath) bool {
	return slices.EqualFunc(a, b, func(x corev1.KeyToPath, y KeyPath) bool { return x.Key == y.Key && x.Path == y.Path })
}

// blockingSource names a required source of the use's projected volume,
// other than the use's own, whose object or listed key is missing: the
// kubelet then fails the whole volume's update, and every source of the
// volume keeps its old content (observed). "" when none is known to be
// (a source that was not read is not counted).
func blockingSource(it Use, pod *corev1.Pod, lookup func(ObjectKey) Object) string {
	if it.Volume == nil || it.Mode != ModeProjected || lookup == nil {
		return ""
	}
	v := podVolume(pod, it.Volume.Name)
	if v == nil || v.Projected == nil {
		return ""
	}
	for i, s := range v.Projected.Sources {
		kind, name, items, _ := projectedSource(s)
		if kind == "" || isOwnSource(it, i, kind, name, items) || projectionOptional(s) {
			continue
		}
		obj := lookup(ObjectKey{Kind: kind, Namespace: it.Object.Namespace, Name: name})
		if obj.Unread {
			continue
		}
		what := fmt.Sprintf("%s %q", kind, name)
		if !obj.Exists {
			return fmt.Sprintf("%s, a required source of projected volume %q, does not exist", what, v.Name)
		}
		for _, kp := range items {
			if _, ok := obj.Data[kp.Key]; !ok {
				return fmt.Sprintf("required key %q is not in %s, a source of projected volume %q", kp.Key, what, v.Name)
			}
		}
	}
	return ""
}

func projectionOptional(s corev1.VolumeProjection) bool {
	switch {
	case s.ConfigMap != nil:
		return isTrue(s.ConfigMap.Optional)
	case s.Secret != nil:
		return isTrue(s.Secret.Optional)
	}
	return false
}

// blockedReason is the reason of a use whose volume another source blocks.
func blockedReason(kind, blocker string) string {
	return fmt.Sprintf("blocked by another source: %s; the kubelet fails the whole volume's update, so this %s's files keep the content they had (and a new pod cannot start) until that is fixed",
		blocker, strings.ToLower(kind))
}

// snapLookup is the snapshot's object lookup, nil without a snapshot.
func snapLookup(snap *Snapshot) func(ObjectKey) Object {
	if snap == nil {
		return nil
	}
	return snap.Object
}

// sourceDescription names a source of a projected volume as what it is.
func sourceDescription(s corev1.VolumeProjection) string {
	switch {
	case s.ConfigMap != nil:
		return fmt.Sprintf("ConfigMap %q", s.ConfigMap.Name)
	case s.Secret != nil:
		return fmt.Sprintf("Secret %q", s.Secret.Name)
	case s.DownwardAPI != nil:
		return "the downwardAPI source"
	case s.ServiceAccountToken != nil:
		return "the serviceAccountToken source"
	case s.ClusterTrustBundle != nil:
		b := s.ClusterTrustBundle
		switch {
		case b.Name != nil:
			return fmt.Sprintf("ClusterTrustBundle %q", *b.Name)
		case b.SignerName != nil:
			return fmt.Sprintf("the ClusterTrustBundles of signer %q", *b.SignerName)
		}
		return "the clusterTrustBundle source"
	case s.PodCertificate != nil:
		if s.PodCertificate.SignerName == "" {
			return "the podCertificate source"
		}
		return fmt.Sprintf("the pod certificate of signer %q", s.PodCertificate.SignerName)
	}
	return "a source of a kind this client does not know"
}

// writer names the source that writes the fixed path p, "" when none does.
func (ps projectedSources) writer(p string) string {
	return ps.writers[p]
}
