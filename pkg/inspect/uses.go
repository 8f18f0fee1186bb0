package inspect

import (
	corev1 "k8s.io/api/core/v1"
)

// source is one ConfigMap or Secret behind a volume: a whole configMap or
// secret volume, or one source of a projected volume.
type source struct {
	kind        string
	name        string
	items       []corev1.KeyToPath
	optional    bool
	defaultMode *int32
	projected   bool
	// position is the place (from 1) of a projected source in its volume
	// when the volume lists the same object more than once: it tells the
	// uses apart (see VolumeRef.Source); 0 otherwise.
	position int
}

// volumeSources returns the ConfigMap and Secret sources of a pod volume.
func volumeSources(v corev1.Volume) []source {
	switch {
	case v.ConfigMap != nil:
		return []source{{kind: KindConfigMap, name: v.ConfigMap.Name, items: v.ConfigMap.Items,
			optional: isTrue(v.ConfigMap.Optional), defaultMode: v.ConfigMap.DefaultMode}}
	case v.Secret != nil:
		return []source{{kind: KindSecret, name: v.Secret.SecretName, items: v.Secret.Items,
			optional: isTrue(v.Secret.Optional), defaultMode: v.Secret.DefaultMode}}
	case v.Projected != nil:
		var out []source
		for i, p := range v.Projected.Sources {
			switch {
			case p.ConfigMap != nil:
				out = append(out, source{kind: KindConfigMap, name: p.ConfigMap.Name, items: p.ConfigMap.Items,
					optional: isTrue(p.ConfigMap.Optional), defaultMode: v.Projected.DefaultMode, projected: true, position: i + 1})
			case p.Secret != nil:
				out = append(out, source{kind: KindSecret, name: p.Secret.Name, items: p.Secret.Items,
					optional: isTrue(p.Secret.Optional), defaultMode: v.Projected.DefaultMode, projected: true, position: i + 1})
			}
		}
		return keepRepeatedPositions(out)
	}
	return nil
}

func isTrue(b *bool) bool { return b != nil && *b }

// containerView is the part of a container that consumes objects; it hides
// the difference between Container and EphemeralContainer.
type containerView struct {
	ref          ContainerRef
	volumeMounts []corev1.VolumeMount
	env          []corev1.EnvVar
	envFrom      []corev1.EnvFromSource
}

// podContainers lists the containers of a pod in spec order: init (and
// sidecar) containers, regular containers, ephemeral containers. It is the
// one walk over a pod's containers of this package.
func podContainers(pod *corev1.Pod) []containerView {
	if pod == nil {
		return nil
	}
	var out []containerView
	for _, c := range pod.Spec.InitContainers {
		t := ContainerInit
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			t = ContainerSidecar
		}
		out = append(out, containerView{ContainerRef{c.Name, t}, c.VolumeMounts, c.Env, c.EnvFrom})
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, containerView{ContainerRef{c.Name, ContainerRegular}, c.VolumeMounts, c.Env, c.EnvFrom})
	}
	for _, c := range pod.Spec.EphemeralContainers {
		out = append(out, containerView{ContainerRef{c.Name, ContainerEphemeral}, c.VolumeMounts, c.Env, c.EnvFrom})
	}
	return out
}

// findContainer returns the container of the pod with this name (names are
// unique across the three lists).
func findContainer(pod *corev1.Pod, name string) (containerView, bool) {
	for _, c := range podContainers(pod) {
		if c.ref.Name == name {
			return c, true
		}
	}
	return containerView{}, false
}

// Uses returns every use of a ConfigMap or Secret by the pod: one Use per
// container and mount, env variable or envFrom entry, and one per volume
// source that no container mounts. Object state, owner and prediction are
// filled in later (see Build).
func Uses(pod *corev1.Pod) []Use {
	return appendUses(nil, pod)
}

// appendUses appends the uses of the pod to out (see Uses).
func appendUses(out []Use, pod *corev1.Pod) []Use {
	base := Use{Pod: PodRef{Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName, Phase: podPhase(pod)}}
	mounted := map[string]bool{}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	newItem := func(kind, name string, c ContainerRef) Use {
		it := base
		it.Object = ObjectRef{Kind: kind, Namespace: pod.Namespace, Name: name}
		cc := c
		it.Container = &cc
		return it
	}
	for _, c := range podContainers(pod) {
		for _, m := range c.volumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				continue
			}
			mounted[m.Name] = true
			for _, s := range volumeSources(v) {
				it := newItem(s.kind, s.name, c.ref)
				fillSource(&it, s)
				it.Volume = &VolumeRef{Name: m.Name, MountPath: m.MountPath, SubPath: m.SubPath, SubPathExpr: m.SubPathExpr, ReadOnly: m.ReadOnly, Source: s.position}
				switch {
				case m.SubPath != "":
					it.Mode = ModeSubPath
				case m.SubPathExpr != "":
					it.Mode = ModeSubPathExpr
				}
				out = append(out, it)
			}
		}
		for _, e := range c.env {
			if e.ValueFrom == nil {
				continue
			}
			var it Use
			switch {
			case e.ValueFrom.ConfigMapKeyRef != nil:
				r := e.ValueFrom.ConfigMapKeyRef
				it = newItem(KindConfigMap, r.Name, c.ref)
				it.Keys, it.Optional = []string{r.Key}, isTrue(r.Optional)
			case e.ValueFrom.SecretKeyRef != nil:
				r := e.ValueFrom.SecretKeyRef
				it = newItem(KindSecret, r.Name, c.ref)
				it.Keys, it.Optional = []string{r.Key}, isTrue(r.Optional)
			default:
				continue
			}
			it.Mode, it.EnvName = ModeEnv, e.Name
			out = append(out, it)
		}
		for _, e := range c.envFrom {
			var it Use
			switch {
			case e.ConfigMapRef != nil:
				it = newItem(KindConfigMap, e.ConfigMapRef.Name, c.ref)
				it.Optional = isTrue(e.ConfigMapRef.Optional)
			case e.SecretRef != nil:
				it = newItem(KindSecret, e.SecretRef.Name, c.ref)
				it.Optional = isTrue(e.SecretRef.Optional)
			default:
				continue
			}
			it.Mode, it.EnvPrefix = ModeEnvFrom, e.Prefix
			out = append(out, it)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if mounted[v.Name] {
			continue
		}
		for _, s := range volumeSources(v) {
			it := base
			it.Object = ObjectRef{Kind: s.kind, Namespace: pod.Namespace, Name: s.name}
			fillSource(&it, s)
			it.Mode = ModeUnmounted
			it.Volume = &VolumeRef{Name: v.Name, Source: s.position}
			out = append(out, it)
		}
	}
	return out
}

// fillSource sets the mode, keys, items and options of a volume use.
func fillSource(it *Use, s source) {
	it.Optional = s.optional
	it.DefaultMode = s.defaultMode
	switch {
	case s.projected:
		it.Mode = ModeProjected
	case len(s.items) > 0:
		it.Mode = ModeItems
	default:
		it.Mode = ModeVolume
	}
	for _, kp := range s.items {
		it.KeyPaths = append(it.KeyPaths, KeyPath{Key: kp.Key, Path: kp.Path, Mode: kp.Mode})
		it.Keys = append(it.Keys, kp.Key)
	}
}

// podPhase is the pod's phase, or Terminating (as kubectl shows it) once
// the pod is being deleted.
func podPhase(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Terminating"
	}
	return string(pod.Status.Phase)
}

// useCount is len of the items of Uses(pod) that keep keeps, counted
// without building them (Build sizes its slice with it). It walks the pod
// as Uses does; TestUseCount holds the two together.
func useCount(pod *corev1.Pod, keep func(ObjectKey) bool) int {
	n := 0
	count := func(kind, name string) {
		if keep(ObjectKey{Kind: kind, Namespace: pod.Namespace, Name: name}) {
			n++
		}
	}
	countVolume := func(v *corev1.Volume) {
		switch {
		case v.ConfigMap != nil:
			count(KindConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			count(KindSecret, v.Secret.SecretName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				switch {
				case p.ConfigMap != nil:
					count(KindConfigMap, p.ConfigMap.Name)
				case p.Secret != nil:
					count(KindSecret, p.Secret.Name)
				}
			}
		}
	}
	vols := pod.Spec.Volumes
	mounted := make([]bool, len(vols))
	for _, c := range podContainers(pod) {
		for _, m := range c.volumeMounts {
			// the last volume of a name wins, as in Uses' map
			for i := len(vols) - 1; i >= 0; i-- {
				if vols[i].Name == m.Name {
					countVolume(&vols[i])
					break
				}
			}
			for i := range vols {
				if vols[i].Name == m.Name {
					mounted[i] = true
				}
			}
		}
		for _, e := range c.env {
			switch {
			case e.ValueFrom == nil:
			case e.ValueFrom.ConfigMapKeyRef != nil:
				count(KindConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			case e.ValueFrom.SecretKeyRef != nil:
				count(KindSecret, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range c.envFrom {
			switch {
			case e.ConfigMapRef != nil:
				count(KindConfigMap, e.ConfigMapRef.Name)
			case e.SecretRef != nil:
				count(KindSecret, e.SecretRef.Name)
			}
		}
	}
	for i := range vols {
		if !mounted[i] {
			countVolume(&vols[i])
		}
	}
	return n
}
