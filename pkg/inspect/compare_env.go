package inspect

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func compareEnv(it Use, pod *corev1.Pod, obj Object, obs *containerread.Verified) Comparison {
	if !obs.EnvRead {
		return Comparison{State: StateUnverifiable, Reason: "cannot read the container's environment: " + cmp.Or(obs.EnvErr, "unknown reason")}
	}
	if len(it.Keys) == 0 || it.EnvName == "" {
		return Comparison{State: StateNA, Reason: "no variable recorded for this use"}
	}
	key, name := it.Keys[0], it.EnvName
	if c, ok := findContainer(pod, it.Container.Name); ok {
		env := c.env
		for i := len(env) - 1; i >= 0; i-- {
			if env[i].Name != name {
				continue
			}
			if !envRefers(env[i], it.Object.Kind, it.Object.Name, key) {
				return Comparison{State: StateNA, Reason: fmt.Sprintf("variable %s is set again by a later env entry, which wins", name)}
			}
			break
		}
	}
	want, wantSet := envValue(obj, key)
	got, gotSet := obs.Env[name]
	ec := EnvComparison{Name: name, Key: key, Expected: want, ExpectedSet: wantSet, Verified: got, VerifiedSet: gotSet,
		Equal: wantSet == gotSet && want == got}
	c := Comparison{Env: []EnvComparison{ec}}
	kind := strings.ToLower(it.Object.Kind)
	restart := "environment variables are read when the container starts: restart the workload"
	switch {
	case ec.Equal && wantSet:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s matches the API now; it will not follow the next change of the %s until the container restarts", name, kind)
	case ec.Equal:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s is unset, as the API has no key %q (optional)", name, key)
	case !wantSet:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s is still set, but key %q is no longer in the %s; %s", name, key, kind, restart)
	case !gotSet:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s is not set in the container, but key %q is in the %s now; %s", name, key, kind, restart)
	default:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s differs from key %q of the %s; %s", name, key, kind, restart)
	}
	return c
}

// serviceLinkRe matches the variables the kubelet sets for services
// (enableServiceLinks): FOO_SERVICE_HOST, FOO_PORT_80_TCP_ADDR, ...
var serviceLinkRe = regexp.MustCompile(`_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`)

func serviceLinks(pod *corev1.Pod) bool {
	return pod == nil || pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}

// compareEnvFrom compares an envFrom use: each variable the object sets
// (with the prefix), and those the container still has from removed keys.
func compareEnvFrom(it Use, pod *corev1.Pod, obj Object, obs *containerread.Verified, o CompareOptions) Comparison {
	if !obs.EnvRead {
		return Comparison{State: StateUnverifiable, Reason: "cannot read the container's environment: " + cmp.Or(obs.EnvErr, "unknown reason")}
	}
	// Variables set by an env entry, or by a later envFrom source, win
	// over this one. An unread Secret source may set any name with its
	// prefix: what the container shows for those is unknown (and may be
	// the Secret's value), so it is neither compared nor kept.
	es := otherEnvSources(it, pod, o.Object)
	var c Comparison
	var unknown, unreadBy []string
	skipped := 0
	for _, key := range obj.Keys() {
		want, ok := envValue(obj, key)
		if !ok {
			continue // binaryData never becomes a variable
		}
		name := it.EnvPrefix + key
		known, maybe := es.overrides(name)
		if known {
			skipped++
			continue
		}
		got, gotSet := obs.Env[name]
		equal := gotSet && got == want
		if len(maybe) > 0 && !equal {
			unknown = append(unknown, name)
			unreadBy = unionStrings(unreadBy, maybe)
			continue
		}
		c.Env = append(c.Env, EnvComparison{Name: name, Key: key, Expected: want, ExpectedSet: true, Verified: got, VerifiedSet: gotSet, Equal: equal})
	}
	c.Env = append(c.Env, removedKeyVars(it, pod, obj, obs, es)...)
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf("; %s set by other entries of the container not compared", plural(skipped, "variable"))
	}
	if len(unknown) > 0 {
		note += "; not compared: " + unreadNote(listNames(unknown, 3), unreadBy)
	}
	envFromVerdict(&c, it, obj, unknown, unreadBy, note)
	return c
}

// removedKeyVars are the variables with the use's prefix whose key the
// object no longer has: the container still has them (a restart drops
// them) unless another source sets them, or the kubelet (service links).
// Removed keys are not detected for envFrom without a prefix: any variable
// of the container (the image's, the runtime's) would match.
func removedKeyVars(it Use, pod *corev1.Pod, obj Object, obs *containerread.Verified, es envSources) []EnvComparison {
	if it.EnvPrefix == "" {
		return nil
	}
	var out []EnvComparison
	links := serviceLinks(pod)
	for _, name := range slices.Sorted(maps.Keys(obs.Env)) {
		key, ok := strings.CutPrefix(name, it.EnvPrefix)
		if !ok || key == "" {
			continue
		}
		if _, ok := envValue(obj, key); ok {
			continue
		}
		if links && serviceLinkRe.MatchString(name) {
			continue
		}
		known, maybe := es.setsElsewhere(name)
		if known || len(maybe) > 0 {
			continue // another source's (maybe an unread Secret's): not this use's to explain
		}
		out = append(out, EnvComparison{Name: name, Key: key, Verified: obs.Env[name], VerifiedSet: true})
	}
	return out
}

// envFromVerdict sets the state and reason of an envFrom comparison from
// its variables.
func envFromVerdict(c *Comparison, it Use, obj Object, unknown, unreadBy []string, note string) {
	kind := strings.ToLower(it.Object.Kind)
	var differ, removed []string
	for _, e := range c.Env {
		switch {
		case e.Equal:
		case !e.ExpectedSet:
			removed = append(removed, e.Name)
		case !e.VerifiedSet:
			differ = append(differ, e.Name+" (not set)")
		default:
			differ = append(differ, e.Name)
		}
	}
	compared := len(c.Env) - len(removed)
	restart := "environment variables are read when the container starts; restart the workload"
	switch {
	case len(differ) > 0:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%d of %s differ from the API (%s): %s%s",
			len(differ), plural(compared, "variable"), listNames(differ, 3), restart, note)
		if len(removed) > 0 {
			c.Reason += fmt.Sprintf("; still set though their keys were removed: %s", listNames(removed, 3))
		}
	case len(removed) > 0:
		c.State = StateStale
		c.Reason = fmt.Sprintf("%s still set, but %s no longer in the %s (unless the image sets %s): %s%s",
			listNames(removed, 3), pluralVerb(len(removed), "its key is", "their keys are"), kind, pluralVerb(len(removed), "it", "them"), restart, note)
	case len(unknown) > 0:
		c.State, c.Cause = StateUnverifiable, CauseSecretsNotRead
		c.Reason = fmt.Sprintf("%s match the API, but %s", plural(compared, "variable"), unreadNote(listNames(unknown, 3), unreadBy))
	case !obj.Exists:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("the %s does not exist (optional): no variables to compare%s", kind, note)
	default:
		c.State = StateCurrent
		c.Reason = fmt.Sprintf("%s match the API now; they will not follow the next change of the %s until the container restarts%s", plural(compared, "variable"), kind, note)
	}
}
