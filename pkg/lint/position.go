package lint

import (
	"go.yaml.in/yaml/v3"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// line returns the line of the manifest that declares the use: the
// subPath (or subPathExpr) line of a subPath mount, the volumeMounts entry
// of another mount, the env or envFrom entry, or the volumes entry of a
// volume no container mounts. It falls back to the container, then to the
// workload.
func (w *Workload) line(it inspect.Use) int {
	if it.Mode == inspect.ModeUnmounted && it.Volume != nil {
		if v := entry(mapValue(w.spec, "volumes"), func(n *yaml.Node) bool { return scalar(mapValue(n, "name")) == it.Volume.Name }); v != nil {
			return v.Line
		}
		return w.Source.Line
	}
	c := w.container(it.Container)
	if c == nil {
		return w.Source.Line
	}
	var found *yaml.Node
	switch it.Mode {
	case inspect.ModeVolume, inspect.ModeItems, inspect.ModeProjected, inspect.ModeSubPath, inspect.ModeSubPathExpr:
		found = entry(mapValue(c, "volumeMounts"), func(n *yaml.Node) bool {
			return scalar(mapValue(n, "name")) == it.Volume.Name && scalar(mapValue(n, "mountPath")) == it.Volume.MountPath
		})
		key := map[inspect.Mode]string{inspect.ModeSubPath: "subPath", inspect.ModeSubPathExpr: "subPathExpr"}[it.Mode]
		if k := mapKey(found, key); key != "" && k != nil {
			return k.Line
		}
	case inspect.ModeEnv:
		ref := "configMapKeyRef"
		if it.Object.Kind == inspect.KindSecret {
			ref = "secretKeyRef"
		}
		found = entry(mapValue(c, "env"), func(n *yaml.Node) bool {
			return scalar(mapValue(n, "name")) == it.EnvName && scalar(path(n, "valueFrom", ref, "name")) == it.Object.Name
		})
	case inspect.ModeEnvFrom:
		ref := "configMapRef"
		if it.Object.Kind == inspect.KindSecret {
			ref = "secretRef"
		}
		found = entry(mapValue(c, "envFrom"), func(n *yaml.Node) bool {
			return scalar(path(n, ref, "name")) == it.Object.Name && scalar(mapValue(n, "prefix")) == it.EnvPrefix
		})
	}
	if found != nil {
		return found.Line
	}
	return c.Line
}

// container finds the container's mapping node in the list its type comes
// from.
func (w *Workload) container(ref *inspect.ContainerRef) *yaml.Node {
	if ref == nil {
		return nil
	}
	list := "containers"
	switch ref.Type {
	case inspect.ContainerInit, inspect.ContainerSidecar:
		list = "initContainers"
	case inspect.ContainerEphemeral:
		list = "ephemeralContainers"
	}
	return entry(mapValue(w.spec, list), func(n *yaml.Node) bool { return scalar(mapValue(n, "name")) == ref.Name })
}

// entry returns the first mapping of a sequence node that matches.
func entry(seq *yaml.Node, match func(*yaml.Node) bool) *yaml.Node {
	seq = resolve(seq)
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, n := range seq.Content {
		n = resolve(n)
		if n.Kind == yaml.MappingNode && match(n) {
			return n
		}
	}
	return nil
}
