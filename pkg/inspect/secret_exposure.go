package inspect

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// SecretExposure tells which values a container shows for a use may come
// from a Secret: the use's own object when it is one, else a Secret source
// of the same container (an env secretKeyRef, an envFrom secretRef) or of
// the use's projected volume. A printer shows those values only as
// fingerprints, whatever the comparison decided: a backstop against an
// override the comparison did not know of.
type SecretExposure struct {
	all         bool
	envNames    map[string]bool
	envPrefixes []string
	anyFile     bool
	filePaths   map[string]bool // items paths of Secret sources
	topLevel    bool            // a whole Secret source: any top-level name
}

// SecretExposureOf returns the exposure of a use; with no pod, everything
// may come from a Secret.
func SecretExposureOf(it Use, pod *corev1.Pod) SecretExposure {
	if it.Object.Kind == KindSecret || pod == nil {
		return SecretExposure{all: true}
	}
	e := SecretExposure{envNames: map[string]bool{}, filePaths: map[string]bool{}}
	if c, ok := findContainer(pod, it.ContainerName()); ok {
		for _, v := range c.env {
			if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
				e.envNames[v.Name] = true
			}
		}
		for _, ef := range c.envFrom {
			if ef.SecretRef != nil {
				e.envPrefixes = append(e.envPrefixes, ef.Prefix)
			}
		}
	}
	if it.Volume == nil {
		return e
	}
	if v := podVolume(pod, it.Volume.Name); v != nil && v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if pc := s.PodCertificate; pc != nil {
				// the private key is as secret as a Secret's data
				for _, p := range []string{pc.KeyPath, pc.CredentialBundlePath} {
					if p != "" {
						e.filePaths[path.Clean(p)] = true
					}
				}
			}
			if !knownProjection(s) {
				// a source this client does not know may write anything
				e.topLevel = true
			}
			if s.Secret == nil {
				continue
			}
			if len(s.Secret.Items) == 0 {
				e.topLevel = true
			}
			for _, kp := range s.Secret.Items {
				e.filePaths[path.Clean(kp.Path)] = true
			}
			// A subPath use sees files relative to its subPath.
			e.anyFile = e.anyFile || it.Mode == ModeSubPath || it.Mode == ModeSubPathExpr
		}
	}
	return e
}

// Env reports whether the container's value of the variable may be a
// Secret's.
func (e SecretExposure) Env(name string) bool {
	if e.all || e.envNames[name] {
		return true
	}
	for _, p := range e.envPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// File reports whether the container's file at rel (relative to the use's
// mount, as in FileComparison.Path) may be a Secret's.
func (e SecretExposure) File(rel string) bool {
	return e.all || e.anyFile || e.filePaths[rel] || (e.topLevel && !strings.Contains(rel, "/"))
}
