package lint

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Reloader (github.com/stakater/Reloader) annotations on a workload.
const (
	reloaderAuto            = "reloader.stakater.com/auto"
	reloaderSearch          = "reloader.stakater.com/search"
	reloaderMatch           = "reloader.stakater.com/match" // on the ConfigMap or Secret, with search
	reloaderConfigMapAuto   = "configmap.reloader.stakater.com/auto"
	reloaderSecretAuto      = "secret.reloader.stakater.com/auto"
	reloaderConfigMapReload = "configmap.reloader.stakater.com/reload"
	reloaderSecretReload    = "secret.reloader.stakater.com/reload"
	helmChecksumPrefix      = "checksum/"
)

// kustomizeSuffix matches the name suffix kustomize's configMapGenerator and
// secretGenerator append: "-" and the first 10 hex digits of a SHA-256 of
// the content, with 0, 1, 3, a, e written g, h, k, m, t
// (sigs.k8s.io/kustomize/api/hasher).
var kustomizeSuffix = regexp.MustCompile(`^.+-[2456789bcdfghkmt]{10}$`)

// genericChecksum names the kind a `checksum/<word>` annotation of a Helm
// chart usually stands for when the word is not the object's name.
var genericChecksum = map[string]string{
	"config": inspect.KindConfigMap, "configs": inspect.KindConfigMap, "configmap": inspect.KindConfigMap,
	"configmaps": inspect.KindConfigMap, "cm": inspect.KindConfigMap, "configuration": inspect.KindConfigMap,
	"secret": inspect.KindSecret, "secrets": inspect.KindSecret,
}

// hashOf says how a change of the object reaches the workload's pods,
// though the use itself never updates: a content hash in the object's name
// (kustomize), a Helm checksum annotation on the pod template, or a
// Reloader annotation. "" when nothing does. objAnnotations are the
// object's own annotations when it is known.
func hashOf(w *Workload, k inspect.ObjectKey, objAnnotations map[string]string) string {
	if kustomizeSuffix.MatchString(k.Name) {
		return fmt.Sprintf("the name %q carries a content hash (kustomize's generator suffix), so a change is a new name in the pod template", k.Name)
	}
	if a := helmChecksum(w.Template.Annotations, k); a != "" {
		return fmt.Sprintf("the pod template's annotation %q holds a hash of it (Helm's checksum pattern), so a change rolls the workload", a)
	}
	if a := reloader(w.Annotations, objAnnotations, k); a != "" {
		return fmt.Sprintf("the workload's Reloader annotation %q restarts it on a change", a)
	}
	if a := reloader(w.Template.Annotations, objAnnotations, k); a != "" {
		return fmt.Sprintf("the pod template's Reloader annotation %q restarts it on a change", a)
	}
	return ""
}

// helmChecksum returns the `checksum/...` annotation that stands for the
// object: one that names it (checksum/NAME, checksum/templates/NAME.yaml,
// or a word of its name), or a generic one for its kind (checksum/config
// for ConfigMaps, checksum/secret for Secrets). A chart cannot say which
// objects went into the hash; this is the convention charts follow.
func helmChecksum(ann map[string]string, k inspect.ObjectKey) string {
	for _, key := range sortedKeys(ann) {
		if !strings.HasPrefix(key, helmChecksumPrefix) || strings.TrimSpace(ann[key]) == "" {
			continue
		}
		word := strings.ToLower(key[len(helmChecksumPrefix):])
		if i := strings.LastIndexByte(word, '/'); i >= 0 {
			word = word[i+1:]
		}
		word = strings.TrimSuffix(strings.TrimSuffix(word, ".yaml"), ".yml")
		name := strings.ToLower(k.Name)
		switch {
		case word == "":
		case word == name, genericChecksum[word] == k.Kind:
			return key
		case containsWord(name, word):
			return key
		}
	}
	return ""
}

// containsWord reports whether word is one or more whole '-'/'.'-separated
// parts of name ("config" in "web-config", "web-config" in "web-config-v2").
func containsWord(name, word string) bool {
	sep := func(r rune) bool { return r == '-' || r == '.' }
	parts := strings.FieldsFunc(name, sep)
	want := strings.FieldsFunc(word, sep)
	if len(want) == 0 {
		return false
	}
	for i := 0; i+len(want) <= len(parts); i++ {
		match := true
		for j := range want {
			if parts[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// checksumAnnotations lists the pod template's checksum/* annotations (for
// the message when none stands for the object).
func checksumAnnotations(ann map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(ann) {
		if strings.HasPrefix(k, helmChecksumPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// reloader returns the Reloader annotation that covers the object.
func reloader(ann, objAnn map[string]string, k inspect.ObjectKey) string {
	isTrue := func(key string) bool { return strings.EqualFold(strings.TrimSpace(ann[key]), "true") }
	if objAnn != nil && strings.EqualFold(objAnn["reloader.stakater.com/ignore"], "true") {
		return ""
	}
	names := func(key string) bool {
		for _, n := range strings.Split(ann[key], ",") {
			if strings.TrimSpace(n) == k.Name {
				return true
			}
		}
		return false
	}
	switch {
	case isTrue(reloaderAuto):
		return reloaderAuto
	case k.Kind == inspect.KindConfigMap && isTrue(reloaderConfigMapAuto):
		return reloaderConfigMapAuto
	case k.Kind == inspect.KindSecret && isTrue(reloaderSecretAuto):
		return reloaderSecretAuto
	case k.Kind == inspect.KindConfigMap && names(reloaderConfigMapReload):
		return reloaderConfigMapReload
	case k.Kind == inspect.KindSecret && names(reloaderSecretReload):
		return reloaderSecretReload
	case isTrue(reloaderSearch) && objAnn != nil && strings.EqualFold(objAnn[reloaderMatch], "true"):
		return reloaderSearch
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
