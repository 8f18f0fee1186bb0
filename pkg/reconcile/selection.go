package reconcile

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Selection is what may be done to one workload for a change of one object.
type Selection int

const (
	// Skip: leave the workload alone.
	Skip Selection = iota
	// Consumers: act on the workload's uses that read changed keys, as
	// `refresh --strategy auto` does (annotate volume uses, restart env and
	// subPath uses).
	Consumers
	// Restart: the workload names the object in a Reloader reload
	// annotation but its pod spec does not read it (the application reads
	// it some other way, through the API): only a restart makes it read the
	// new version, which is what Reloader does.
	Restart
)

// Subject is the workload (for a bare pod, the pod) a change may be acted on.
type Subject struct {
	// Annotations of the workload; TemplateAnnotations of its pod template
	// (Reloader reads its annotations there when the workload has none).
	Annotations, TemplateAnnotations map[string]string
	// Consumes tells whether the pod spec reads the object at all.
	Consumes bool
	// OptIn says how to opt the workload in, for the reason of a skip
	// under --require-opt-in ("" names the workload).
	OptIn string
}

// Changed is the object that changed, as the selection sees it.
type Changed struct {
	Kind, Name  string
	Annotations map[string]string
}

// Decision is a Selection and the reason for it, for the log line.
type Decision struct {
	Selection Selection
	Reason    string
}

// Select decides whether a change of o may be acted on in s. requireOptIn
// narrows the workloads the flags select to those that opt in, by
// AnnotationWatch or by one of Reloader's annotations.
func Select(requireOptIn bool, s Subject, o Changed) Decision {
	if d, done := objectOptOut(o); done {
		return d
	}
	if s.Annotations[AnnotationPaused] == "true" {
		return Decision{Skip, "paused (" + AnnotationPaused + "=true)"}
	}
	ann := reloaderAnnotations(s, o.Kind)
	if watch := first(s, AnnotationWatch); watch == "false" {
		return Decision{Skip, "opted out (" + AnnotationWatch + "=false)"}
	}
	if excluded(ann, o) {
		return Decision{Skip, "excluded by " + typed(o.Kind, ReloaderConfigMapExclude, ReloaderSecretExclude)}
	}
	if d, done := named(ann, s, o); done {
		return d
	}
	if !s.Consumes {
		return Decision{Skip, "does not read it"}
	}
	return autoSelect(requireOptIn, ann, s, o)
}

func objectOptOut(o Changed) (Decision, bool) {
	switch {
	case o.Annotations[ReloaderIgnore] == "true":
		return Decision{Skip, "the " + o.Kind + " has " + ReloaderIgnore + "=true"}, true
	case o.Annotations[AnnotationWatch] == "false":
		return Decision{Skip, "the " + o.Kind + " has " + AnnotationWatch + "=false"}, true
	}
	return Decision{}, false
}

// named applies the reload annotation of the object's kind: a name listed
// there (Reloader takes each entry as an anchored regular expression, else
// as a name) selects the workload whether or not it consumes the object;
// a list that does not name it excludes it unless an auto annotation also
// applies.
func named(ann map[string]string, s Subject, o Changed) (Decision, bool) {
	key := typed(o.Kind, ReloaderConfigMapReload, ReloaderSecretReload)
	list := strings.TrimSpace(ann[key])
	if list == "" {
		return Decision{}, false
	}
	if nameListed(list, o.Name) {
		if s.Consumes {
			return Decision{Consumers, "named in " + key}, true
		}
		return Decision{Restart, "named in " + key + "; the pod spec does not read it, so a restart makes the application read it"}, true
	}
	if autoFor(ann, o.Kind) || first(s, AnnotationWatch) == "true" {
		return Decision{}, false
	}
	return Decision{Skip, "not named in " + key}, true
}

// Named tells whether the workload lists the object in Reloader's reload
// annotation of its kind (on the workload, else on its pod template).
func Named(s Subject, o Changed) bool {
	return nameListed(reloaderAnnotations(s, o.Kind)[typed(o.Kind, ReloaderConfigMapReload, ReloaderSecretReload)], o.Name)
}

func autoSelect(requireOptIn bool, ann map[string]string, s Subject, o Changed) Decision {
	switch {
	case first(s, AnnotationWatch) == "true":
		return Decision{Consumers, "opted in (" + AnnotationWatch + "=true)"}
	case autoFor(ann, o.Kind):
		return Decision{Consumers, "opted in (" + autoKey(ann, o.Kind) + "=true)"}
	case ann[ReloaderAuto] == "false":
		return Decision{Skip, "opted out (" + ReloaderAuto + "=false)"}
	case ann[ReloaderSearch] == "true" && o.Annotations[ReloaderMatch] == "true":
		return Decision{Consumers, ReloaderSearch + " and the " + o.Kind + "'s " + ReloaderMatch}
	case ann[ReloaderSearch] == "true":
		return Decision{Skip, ReloaderSearch + "=true and the " + o.Kind + " lacks " + ReloaderMatch + "=true"}
	case requireOptIn:
		return Decision{Skip, "not opted in: --require-opt-in is set; " + cmp.Or(s.OptIn, fmt.Sprintf("annotate the workload with %s=true", AnnotationWatch))}
	}
	return Decision{Consumers, "selected"}
}

func autoFor(ann map[string]string, kind string) bool {
	return autoKey(ann, kind) != ""
}

// autoKey returns the auto annotation that opts the workload in for
// objects of kind, or "".
func autoKey(ann map[string]string, kind string) string {
	for _, k := range []string{ReloaderAuto, typed(kind, ReloaderConfigMapAuto, ReloaderSecretAuto)} {
		if ann[k] == "true" {
			return k
		}
	}
	return ""
}

func excluded(ann map[string]string, o Changed) bool {
	for _, n := range strings.Split(ann[typed(o.Kind, ReloaderConfigMapExclude, ReloaderSecretExclude)], ",") {
		if strings.TrimSpace(n) == o.Name {
			return true
		}
	}
	return false
}

func nameListed(list, name string) bool {
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if re, err := regexp.Compile("^(?:" + v + ")$"); err == nil {
			if re.MatchString(name) {
				return true
			}
		} else if v == name {
			return true
		}
	}
	return false
}

// reloaderAnnotations returns the annotations Reloader reads for objects of
// kind: the workload's when it has any of them, else the pod template's.
func reloaderAnnotations(s Subject, kind string) map[string]string {
	keys := []string{ReloaderAuto, ReloaderSearch, typed(kind, ReloaderConfigMapAuto, ReloaderSecretAuto),
		typed(kind, ReloaderConfigMapReload, ReloaderSecretReload)}
	for _, k := range keys {
		if _, ok := s.Annotations[k]; ok {
			return s.Annotations
		}
	}
	for _, k := range keys {
		if _, ok := s.TemplateAnnotations[k]; ok {
			return s.TemplateAnnotations
		}
	}
	return s.Annotations
}

// first returns the workload's value of key, else the pod template's.
func first(s Subject, key string) string {
	if v, ok := s.Annotations[key]; ok {
		return v
	}
	return s.TemplateAnnotations[key]
}

func typed(kind, configMap, secret string) string {
	if kind == inspect.KindSecret {
		return secret
	}
	return configMap
}
