package migrate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Values are the kubectl-cmsync chart's values a Reloader maps to (the
// chart's names, charts/kubectl-cmsync/values.yaml).
type Values struct {
	WatchGlobally         bool     `json:"watchGlobally"`
	Namespaces            []string `json:"namespaces,omitempty"`
	NamespaceSelector     string   `json:"namespaceSelector,omitempty"`
	IgnoreNamespaces      []string `json:"ignoreNamespaces,omitempty"`
	ResourceLabelSelector string   `json:"resourceLabelSelector,omitempty"`
	IgnoreWorkloadKinds   []string `json:"ignoreWorkloadKinds,omitempty"`
	Secrets               bool     `json:"secrets"`
	RequireOptIn          bool     `json:"requireOptIn"`
	Alerts                *Alerts  `json:"alerts,omitempty"`
}

// Alerts are the chart's alerts values.
type Alerts struct {
	Webhook SecretRef  `json:"webhook"`
	Format  string     `json:"format,omitempty"`
	Proxy   *SecretRef `json:"proxy,omitempty"`
	Info    string     `json:"info,omitempty"`
}

// SecretRef is a key of an existing Secret.
type SecretRef struct {
	ExistingSecret string `json:"existingSecret"`
	Key            string `json:"key"`
}

// YAML is the values as a values file.
func (v Values) YAML() ([]byte, error) {
	return yaml.Marshal(v)
}

// Flags are the controller's flags for the values, as the chart writes them.
func (v Values) Flags() []string {
	var out []string
	if v.WatchGlobally {
		out = append(out, "--all-namespaces")
	} else if len(v.Namespaces) > 0 {
		out = append(out, "--namespace="+v.Namespaces[0])
	}
	for _, f := range []struct{ name, value string }{
		{"namespace-selector", v.NamespaceSelector},
		{"ignore-namespaces", strings.Join(v.IgnoreNamespaces, ",")},
		{"resource-label-selector", v.ResourceLabelSelector},
		{"ignore-workload-kinds", strings.Join(v.IgnoreWorkloadKinds, ",")},
	} {
		if f.value != "" {
			out = append(out, "--"+f.name+"="+f.value)
		}
	}
	if v.Secrets {
		out = append(out, "--secrets")
	}
	out = append(out, fmt.Sprintf("--require-opt-in=%t", v.RequireOptIn))
	if a := v.Alerts; a != nil {
		out = append(out, "--alert-format="+a.Format)
		if a.Info != "" {
			out = append(out, "--alert-info="+a.Info)
		}
	}
	return out
}

// FlagEnv are the env variables the flags need beside them: the alert
// URLs, from their Secrets (never in the arguments).
func (v Values) FlagEnv() []string {
	a := v.Alerts
	if a == nil {
		return nil
	}
	out := []string{fmt.Sprintf("CMSYNC_ALERT_WEBHOOK from Secret %s, key %s", a.Webhook.ExistingSecret, a.Webhook.Key)}
	if a.Proxy != nil {
		out = append(out, fmt.Sprintf("CMSYNC_ALERT_PROXY from Secret %s, key %s", a.Proxy.ExistingSecret, a.Proxy.Key))
	}
	return out
}

// alerts maps Reloader's ALERT_* env. A URL is a credential: it is mapped
// only from a Secret's key, and never printed.
func (m *Mapping) alerts(env []corev1.EnvVar) {
	vars := map[string]corev1.EnvVar{}
	for _, e := range env {
		if strings.HasPrefix(e.Name, "ALERT_") {
			vars[e.Name] = e
		}
	}
	hook, ok := vars["ALERT_WEBHOOK_URL"]
	if !ok {
		if len(vars) > 0 {
			m.note("env ALERT_*", "no ALERT_WEBHOOK_URL: Reloader sends no alert, nor does cmsync")
		}
		return
	}
	ref, ok := secretRef(m, hook)
	if !ok {
		return
	}
	a := &Alerts{Webhook: ref, Format: "raw"}
	switch sink := strings.ToLower(vars["ALERT_SINK"].Value); sink {
	case "slack", "teams", "gchat":
		a.Format = sink
	case "":
	default:
		m.note("env ALERT_SINK="+sink, "format: raw, which is what Reloader sends for a sink it does not know")
	}
	if p, ok := vars["ALERT_WEBHOOK_PROXY"]; ok {
		if ref, ok := secretRef(m, p); ok {
			a.Proxy = &ref
		}
	}
	a.Info = vars["ALERT_ADDITIONAL_INFO"].Value
	m.Values.Alerts = a
	m.note("env ALERT_WEBHOOK_URL", "alerts.webhook (env CMSYNC_ALERT_WEBHOOK): one message per round, retried with backoff; Reloader sends one per restarted workload")
}

// secretRef is the Secret key an env variable is read from; false, with an
// unsupported item, when it is not one.
func secretRef(m *Mapping, e corev1.EnvVar) (SecretRef, bool) {
	if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
		return SecretRef{ExistingSecret: e.ValueFrom.SecretKeyRef.Name, Key: e.ValueFrom.SecretKeyRef.Key}, true
	}
	m.unsupported("env "+e.Name, "cmsync reads this URL from a Secret only (it may hold a token): put it in a Secret and set its name and key in the alerts values")
	return SecretRef{}, false
}
