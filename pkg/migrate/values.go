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
		if a.Format != "" {
			out = append(out, "--alert-format="+a.Format)
		}
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

// alerts maps Reloader's ALERT_* env. Reloader alerts only when
// ALERT_ON_RELOAD is "true". A URL is a credential: it is mapped only from
// a Secret's key, and never printed; the other variables may come from a
// Secret too (the chart's env.secret and env.existing), whose values
// migrate does not read: a person sets them.
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
	if !m.alertsOn(vars["ALERT_ON_RELOAD"]) {
		return
	}
	ref, ok := secretRef(m, hook)
	if !ok {
		return
	}
	a := &Alerts{Webhook: ref, Format: "raw"}
	if sink, ok := m.literal(vars, "ALERT_SINK", "alerts.format to its value in lower case (slack, teams or gchat; raw for any other)"); !ok {
		a.Format = ""
	} else if sink = strings.ToLower(sink); sink == "slack" || sink == "teams" || sink == "gchat" {
		a.Format = sink
	} else if sink != "" {
		m.note("env ALERT_SINK="+sink, "format: raw, which is what Reloader sends for a sink it does not know")
	}
	if p, ok := vars["ALERT_WEBHOOK_PROXY"]; ok {
		if ref, ok := secretRef(m, p); ok {
			a.Proxy = &ref
		}
	}
	a.Info, _ = m.literal(vars, "ALERT_ADDITIONAL_INFO", "alerts.info to its value")
	m.Values.Alerts = a
	m.note("env ALERT_WEBHOOK_URL", "alerts.webhook (env CMSYNC_ALERT_WEBHOOK): one message per round, retried with backoff; Reloader sends one per restarted workload")
}

// alertsOn tells whether Reloader sends alerts, by ALERT_ON_RELOAD: only
// "true" does. One read from a reference maps the alerts, and a person
// checks it.
func (m *Mapping) alertsOn(on corev1.EnvVar) bool {
	switch {
	case on.ValueFrom != nil:
		m.unsupported("env ALERT_ON_RELOAD", "its value comes from "+source(on)+", which migrate does not read: Reloader alerts only when it is \"true\"; "+
			"the alerts values below assume it is: drop them if it is not")
		return true
	case on.Value != "true":
		m.note("env ALERT_ON_RELOAD", fmt.Sprintf("ALERT_ON_RELOAD is %q, not \"true\": Reloader sends no alert, so none are mapped; set alerts.webhook to send cmsync's", on.Value))
		return false
	}
	return true
}

// literal is the value of the variable name among vars ("" when unset);
// false, with an unsupported item saying to set what, when its value
// comes from a reference migrate does not read.
func (m *Mapping) literal(vars map[string]corev1.EnvVar, name, what string) (string, bool) {
	e := vars[name]
	if e.ValueFrom == nil {
		return e.Value, true
	}
	m.unsupported("env "+name, "its value comes from "+source(e)+", which migrate does not read: set "+what)
	return "", false
}

// source names where a variable's value comes from.
func source(e corev1.EnvVar) string {
	switch v := e.ValueFrom; {
	case v.SecretKeyRef != nil:
		return fmt.Sprintf("Secret %s, key %s", v.SecretKeyRef.Name, v.SecretKeyRef.Key)
	case v.ConfigMapKeyRef != nil:
		return fmt.Sprintf("ConfigMap %s, key %s", v.ConfigMapKeyRef.Name, v.ConfigMapKeyRef.Key)
	}
	return "a reference"
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
