package shadow

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reloader's markers on a pod template.
const (
	// EnvPrefix and the postfixes name the variable Reloader's env-vars
	// strategy sets to the hash of an object's data.
	EnvPrefix        = "STAKATER_"
	EnvConfigMapPost = "_CONFIGMAP"
	EnvSecretPost    = "_SECRET"
	// LastReloadedFrom is the template annotation of its annotations
	// strategy.
	LastReloadedFrom = "reloader.stakater.com/last-reloaded-from"
	// RestartedAt is kubectl's (and cmsync's) restart annotation.
	RestartedAt = "kubectl.kubernetes.io/restartedAt"
)

// Strategy is how a peer's restart shows on the workload.
type Strategy string

const (
	StrategyEnvVars     Strategy = "env-vars"
	StrategyAnnotations Strategy = "annotations"
	// StrategyRestartAt: an Argo Rollout's spec.restartAt moved.
	StrategyRestartAt Strategy = "restart-at"
	// StrategyRestartedAt: the template's restartedAt moved: a restart by
	// whom is unknown.
	StrategyRestartedAt Strategy = "restarted-at"
)

// Workload names a workload by kind, namespace and name.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return strings.ToLower(w.Kind) + "/" + w.Name }

// Marker is one restart of a workload seen on its template.
type Marker struct {
	At       time.Time `json:"at"`
	Workload Workload  `json:"workload"`
	Strategy Strategy  `json:"strategy"`
	// Kind (ConfigMap or Secret) and Name of the object the peer restarted
	// for; for env-vars only the mangled name (EnvName) is known, in
	// EnvObject. All empty for a restart by an unknown hand.
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	EnvObject string `json:"envObject,omitempty"`
	// Hash is the peer's hash of the object's data (Reloader's, not a
	// value of the object).
	Hash string `json:"hash,omitempty"`
	// Pods is how many pods the workload ran when the marker was seen.
	Pods int `json:"pods,omitempty"`
}

// Known tells whether the marker names the object it was made for.
func (m Marker) Known() bool { return m.Kind != "" }

// For tells whether the marker was made for the object kind/name.
func (m Marker) For(kind, name string) bool {
	switch {
	case m.Name != "":
		return strings.EqualFold(m.Kind, kind) && m.Name == name
	case m.EnvObject != "":
		return strings.EqualFold(m.Kind, kind) && m.EnvObject == EnvName(name)
	}
	return false
}

// EnvName is Reloader's variable name for an object name: upper-cased,
// each run of characters other than A-Z and 0-9 one underscore (none at
// the start).
func EnvName(name string) string {
	var b strings.Builder
	valid := false
	for _, ch := range []byte(strings.ToUpper(name)) {
		if ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' {
			b.WriteByte(ch)
			valid = true
			continue
		}
		if valid {
			b.WriteByte('_')
		}
		valid = false
	}
	return b.String()
}

// EnvVar is the variable Reloader's env-vars strategy sets for an object
// (kind ConfigMap or Secret).
func EnvVar(kind, name string) string {
	if strings.EqualFold(kind, "Secret") {
		return EnvPrefix + EnvName(name) + EnvSecretPost
	}
	return EnvPrefix + EnvName(name) + EnvConfigMapPost
}

// reloadedFrom is the value of LastReloadedFrom.
type reloadedFrom struct {
	Type          string   `json:"type"`
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace"`
	Hash          string   `json:"hash"`
	ContainerRefs []string `json:"containerRefs"`
	ObservedAt    int64    `json:"observedAt"`
}

// Markers are the peer's restarts that tell old from cur, two versions of
// one workload's pod template: a STAKATER_ variable added or changed, a
// new LastReloadedFrom, a new restartedAt. At, Workload and Pods are the
// caller's.
func Markers(old, cur *corev1.PodTemplateSpec) []Marker {
	var out []Marker
	before := envValues(old)
	for name, v := range envValues(cur) {
		if before[name] == v {
			continue
		}
		if m, ok := envMarker(name, v); ok {
			out = append(out, m)
		}
	}
	if v := cur.Annotations[LastReloadedFrom]; v != "" && v != old.Annotations[LastReloadedFrom] {
		var r reloadedFrom
		m := Marker{Strategy: StrategyAnnotations}
		if json.Unmarshal([]byte(v), &r) == nil {
			m.Kind, m.Name, m.Hash = objectKind(r.Type), r.Name, r.Hash
		}
		out = append(out, m)
	}
	if v := cur.Annotations[RestartedAt]; v != "" && v != old.Annotations[RestartedAt] {
		out = append(out, Marker{Strategy: StrategyRestartedAt})
	}
	return out
}

// envMarker reads one STAKATER_ variable.
func envMarker(name, value string) (Marker, bool) {
	if !strings.HasPrefix(name, EnvPrefix) {
		return Marker{}, false
	}
	rest := strings.TrimPrefix(name, EnvPrefix)
	for post, kind := range map[string]string{EnvConfigMapPost: "ConfigMap", EnvSecretPost: "Secret"} {
		if obj, ok := strings.CutSuffix(rest, post); ok && obj != "" {
			return Marker{Strategy: StrategyEnvVars, Kind: kind, EnvObject: obj, Hash: value}, true
		}
	}
	return Marker{}, false
}

// envValues are the literal STAKATER_ variables of a template's
// containers (the peer sets the same hash in each).
func envValues(t *corev1.PodTemplateSpec) map[string]string {
	out := map[string]string{}
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom == nil && strings.HasPrefix(e.Name, EnvPrefix) {
					out[e.Name] = e.Value
				}
			}
		}
	}
	return out
}

// objectKind is the kind a LastReloadedFrom type names.
func objectKind(t string) string {
	switch strings.ToLower(t) {
	case "configmap", "configmaps":
		return "ConfigMap"
	case "secret", "secrets":
		return "Secret"
	}
	return ""
}
