package inspect

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Predict fills the object fields, verdict, reason and delay of a use. pod
// is the consuming pod (for subPathExpr expansion); obj its object.
func Predict(it *Use, pod *corev1.Pod, obj Object, snap *Snapshot) {
	it.Object.Exists = obj.Exists
	it.Object.Immutable = obj.Immutable
	if obj.Exists {
		t := metav1.NewTime(obj.LastChange.UTC())
		it.Object.LastChange = &t
	}
	kind := strings.ToLower(it.Object.Kind)
	what := fmt.Sprintf("%s %q", it.Object.Kind, it.Object.Name)

	if it.Mode == ModeUnmounted {
		it.Verdict = VerdictNotMounted
		it.Reason = fmt.Sprintf("volume %q is declared but no container mounts it; the kubelet never writes it", it.Volume.Name)
		return
	}
	if !obj.Exists {
		it.Verdict = VerdictMissing
		if it.Optional {
			switch it.Mode {
			case ModeEnv, ModeEnvFrom:
				it.Reason = fmt.Sprintf("%s does not exist; optional, so the container runs without it and stays without it until restarted", what)
			case ModeSubPath, ModeSubPathExpr:
				it.Reason = fmt.Sprintf("%s does not exist; optional, so the container starts with an empty directory at the subPath and keeps it until restarted, even after it appears", what)
			default:
				it.Reason = fmt.Sprintf("%s does not exist; optional, so the volume is empty until it appears", what)
			}
		} else {
			it.Reason = fmt.Sprintf("%s does not exist; required, so the container cannot start until it is created", what)
		}
		return
	}
	skipped := ""
	if missing := missingKeys(it, obj); len(missing) > 0 && it.Optional && it.Mode.HotUpdating() && len(missing) < len(it.Keys) {
		// An optional volume skips the absent keys and still writes (and
		// hot-updates) the others.
		skipped = fmt.Sprintf("; key %s is not in %s (optional, so skipped until it is added)", strings.Join(quoteAll(missing), ", "), what)
	} else if len(missing) > 0 {
		it.Verdict = VerdictMissing
		keys := strings.Join(quoteAll(missing), ", ")
		if it.Mode == ModeEnv && obj.BinaryKeys[missing[0]] {
			what = fmt.Sprintf("the data of %s (it is in binaryData, which environment variables cannot read)", what)
		}
		switch {
		case it.Optional && it.Mode == ModeEnv:
			it.Reason = fmt.Sprintf("key %s is not in %s; optional, so the variable is unset and stays unset until the container restarts", keys, what)
		case it.Optional:
			it.Reason = fmt.Sprintf("key %s is not in %s; optional, so it is skipped", keys, what)
		default:
			it.Reason = fmt.Sprintf("key %s is not in %s; required, so the container cannot start until it is added", keys, what)
		}
		return
	}
	if obj.Immutable {
		it.Verdict = VerdictNeverChanges
		it.Reason = fmt.Sprintf("immutable %s: %s", kind, recreatedImmutable(it, snap)) + skipped
		return
	}
	if v, why := kubeletWithout(it, pod, snap); why != "" {
		it.Verdict, it.Reason = v, why
		return
	}
	if it.Container != nil && it.Container.Type == ContainerInit {
		// An init container runs once, to completion, before the others:
		// whatever it read (and copied into an emptyDir or rendered, as the
		// kubernetes.io mysql tutorial does) is fixed for the pod's life,
		// whether it read a hot-updating volume or not.
		it.Verdict = VerdictRestartNeeded
		it.Reason = fmt.Sprintf("read by init container %s, which runs once when the pod starts: what it read (and whatever it copied or rendered from it) is fixed for the pod's life; only a new pod reads it again", it.Container.Name) + skipped
		return
	}
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected:
		if b := blockingSource(*it, pod, snapLookup(snap)); b != "" && it.Pod.Name != "" {
			it.Verdict, it.Reason = VerdictMissing, blockedReason(it.Object.Kind, b)
			return
		}
		d := EstimateDelay(it.Pod.Node, snap)
		it.Delay = &d
		it.Verdict = VerdictHotUpdate
		it.Reason = fmt.Sprintf("mounted volume: the kubelet rewrites it within %s of a change (%s)", formatDelay(d), basisText(d.Basis)) + skipped
	case ModeEnv:
		it.Verdict = VerdictRestartNeeded
		it.Reason = fmt.Sprintf("environment variable %s is read when the container starts; it never updates until the container restarts", it.EnvName)
	case ModeEnvFrom:
		it.Verdict = VerdictRestartNeeded
		it.Reason = "environment variables are read when the container starts; they never update until the container restarts"
	case ModeSubPath, ModeSubPathExpr:
		predictSubPath(it, pod, obj, snap)
	}
}

// predictSubPath decides between restart-needed (subPath onto a file) and
// breaks-on-change (subPath onto a directory of the volume).
func predictSubPath(it *Use, pod *corev1.Pod, obj Object, snap *Snapshot) {
	sub := it.Volume.SubPath
	if it.Mode == ModeSubPathExpr {
		var lookup func(ObjectKey) Object
		if snap != nil {
			lookup = snap.Object
		}
		expanded, err := ExpandSubPathExpr(it.Volume.SubPathExpr, specEnv(pod, it.ContainerName(), lookup))
		if err != nil {
			it.Verdict = VerdictRestartNeeded
			note, empty := fileEnvNote(it.Volume.SubPathExpr, pod, it.ContainerName(), snap, it.Pod.Node)
			if empty {
				it.Reason = fmt.Sprintf("subPathExpr %q: %s", it.Volume.SubPathExpr, note)
				return
			}
			if note != "" {
				note = "; " + note
			}
			it.Reason = fmt.Sprintf("subPathExpr %q cannot be resolved from the pod spec (%v%s); it is a bind mount made at container start and never updates until the container restarts", it.Volume.SubPathExpr, err, note)
			return
		}
		sub = expanded
	}
	sub = cleanSubPath(sub)
	files, dir := subPathTarget(sub, payloadPaths(it, obj))
	var ps projectedSources
	if snap != nil {
		ps = otherSources(*it, pod, snap.Object)
	} else {
		ps = otherSources(*it, pod, func(k ObjectKey) Object { return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name} })
	}
	shownBy := func() bool {
		if len(files) == 0 {
			known, _ := ps.writes(sub)
			return known
		}
		known, _ := ps.overrides(sub)
		return !dir && known
	}
	shown := subPathShown(*it, pod, sub)
	switch {
	case dir:
		it.Verdict = VerdictBreaksOnChange
		it.Reason = fmt.Sprintf("subPath %s is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts", shown)
	case shownBy():
		it.Verdict = VerdictNotMounted
		which := ""
		if w := ps.writer(sub); w != "" {
			which = " (" + w + ")"
		}
		it.Reason = fmt.Sprintf("subPath %s shows another source of projected volume %q%s: this container does not see this %s through this mount", shown, it.Volume.Name, which, strings.ToLower(it.Object.Kind))
		files = nil
	case len(files) == 0:
		it.Verdict = VerdictRestartNeeded
		it.Reason = fmt.Sprintf("subPath %s is not in the payload; the kubelet mounts an empty directory there and it never updates", shown)
	default:
		it.Verdict = VerdictRestartNeeded
		it.Reason = fmt.Sprintf("subPath %s is a bind mount of one file made at container start; it keeps the old content until the container restarts", shown)
	}
	if len(files) > 0 {
		// The keys this mount shows, not all the keys of the volume.
		it.Keys = files
	}
}

// payloadPaths maps each visible path of the use's source to its key.
func payloadPaths(it *Use, obj Object) map[string]string {
	out := map[string]string{}
	if len(it.KeyPaths) > 0 {
		// Cleaned as the atomic writer does (an invalid path fails the
		// whole volume; precheck and compare report that).
		for _, kp := range it.KeyPaths {
			if ValidPayloadPath(kp.Path) {
				out[path.Clean(kp.Path)] = kp.Key
			}
		}
		return out
	}
	for k := range obj.Data {
		out[k] = k
	}
	return out
}

// subPathTarget returns the keys the subPath (cleaned by cleanSubPath)
// exposes and whether it is a directory of the volume.
func subPathTarget(sub string, paths map[string]string) (keys []string, dir bool) {
	if sub == "" {
		return nil, true
	}
	for p, k := range paths {
		switch {
		case p == sub:
			return []string{k}, false
		case strings.HasPrefix(p, sub+"/"):
			keys = append(keys, k)
			dir = true
		}
	}
	sort.Strings(keys)
	return keys, dir
}

// specEnv is the environment the kubelet gives the container, as far as
// the pod spec and the snapshot tell (makeEnvironmentVariables): envFrom
// sources in order (a ConfigMap's data, a Secret's data when read, with the
// prefix), then env entries (literal values, with $(VAR) references to
// earlier variables expanded; downward API fields known from the pod
// object; configMapKeyRef and secretKeyRef from the snapshot). What cannot
// be known (service links, resource fields, unread Secrets, the pod IP
// before it runs) is left out, so that expanding a reference to it fails.
func specEnv(pod *corev1.Pod, container string, lookup func(ObjectKey) Object) map[string]string {
	vars := map[string]string{}
	c, ok := findContainer(pod, container)
	if !ok {
		return vars
	}
	if lookup == nil {
		lookup = func(k ObjectKey) Object {
			return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Unread: true}
		}
	}
	read := func(kind, name string) Object {
		return lookup(ObjectKey{Kind: kind, Namespace: pod.Namespace, Name: name})
	}
	for _, ef := range c.envFrom {
		var obj Object
		switch {
		case ef.ConfigMapRef != nil:
			obj = read(KindConfigMap, ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			obj = read(KindSecret, ef.SecretRef.Name)
		default:
			continue
		}
		for k := range obj.Data {
			if v, ok := envValue(obj, k); ok {
				vars[ef.Prefix+k] = v
			}
		}
	}
	for _, e := range c.env {
		var v string
		var known bool
		switch {
		case e.ValueFrom == nil:
			v, known = expandEnvValue(e.Value, vars), true
		case e.ValueFrom.FieldRef != nil:
			v, known = podField(pod, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			v, known = envValue(read(KindConfigMap, r.Name), r.Key)
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			v, known = envValue(read(KindSecret, r.Name), r.Key)
		}
		if known {
			vars[e.Name] = v
		} else {
			delete(vars, e.Name) // set to something unknown
		}
	}
	return vars
}

func podField(pod *corev1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, pod.Spec.NodeName != ""
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP":
		return pod.Status.PodIP, pod.Status.PodIP != ""
	case "status.hostIP":
		return pod.Status.HostIP, pod.Status.HostIP != ""
	}
	if strings.HasPrefix(path, "metadata.labels['") && strings.HasSuffix(path, "']") {
		v, ok := pod.Labels[path[len("metadata.labels['"):len(path)-2]]
		return v, ok
	}
	if strings.HasPrefix(path, "metadata.annotations['") && strings.HasSuffix(path, "']") {
		v, ok := pod.Annotations[path[len("metadata.annotations['"):len(path)-2]]
		return v, ok
	}
	return "", false
}

// missingKeys lists the keys a use names that the object lacks. env reads
// only a ConfigMap's data, never its binaryData.
func missingKeys(it *Use, obj Object) []string {
	var missing []string
	for _, k := range it.Keys {
		_, ok := obj.Data[k]
		if ok && it.Mode == ModeEnv && obj.BinaryKeys[k] {
			ok = false
		}
		if !ok {
			missing = append(missing, k)
		}
	}
	return missing
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}
