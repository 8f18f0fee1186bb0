package migrate

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// TestMap: every Reloader flag and env variable migrate maps, one row each,
// with the exact values, controller flags, notes and unsupported items.
func TestMap(t *testing.T) {
	const defaultFlags = "--all-namespaces --secrets --require-opt-in=true"
	tests := []struct {
		name        string
		args        []string
		env         []corev1.EnvVar
		flags       string // Values.Flags(), space-joined
		notes       []string
		unsupported []string // Setting only; TestUnsupportedAdvice checks the advice
	}{
		{name: "no args", flags: defaultFlags},
		{name: "reload-strategy env-vars", args: []string{"--reload-strategy=env-vars"}, flags: defaultFlags,
			notes: []string{"--reload-strategy=env-vars"}},
		{name: "reload-strategy annotations", args: []string{"--reload-strategy", "annotations"}, flags: defaultFlags,
			notes: []string{"--reload-strategy=annotations"}},
		{name: "reload-strategy unknown", args: []string{"--reload-strategy=rolling"}, flags: defaultFlags,
			unsupported: []string{"--reload-strategy=rolling"}},
		{name: "namespaces-to-ignore", args: []string{"--namespaces-to-ignore=kube-system,flux-system"},
			flags: "--all-namespaces --ignore-namespaces=kube-system,flux-system --secrets --require-opt-in=true"},
		{name: "namespace-selector", args: []string{"--namespace-selector=team=a,env!=prod"},
			flags: "--all-namespaces --namespace-selector=team=a,env!=prod --secrets --require-opt-in=true"},
		{name: "namespace-selector legacy forms", args: []string{"--namespace-selector=team:a,reloaded=*"},
			flags: "--all-namespaces --namespace-selector=team=a,reloaded --secrets --require-opt-in=true",
			notes: []string{"--namespace-selector=team:a,reloaded=*"}},
		{name: "namespace-selector invalid", args: []string{"--namespace-selector=a b=c"}, flags: defaultFlags,
			unsupported: []string{"--namespace-selector=a b=c"}},
		{name: "resource-label-selector", args: []string{"--resource-label-selector=team=a"},
			flags: "--all-namespaces --resource-label-selector=team=a --secrets --require-opt-in=true"},
		{name: "auto-reload-all", args: []string{"--auto-reload-all=true"},
			flags: "--all-namespaces --secrets --require-opt-in=false", notes: []string{"--auto-reload-all"}},
		{name: "auto-reload-all bare", args: []string{"--auto-reload-all"},
			flags: "--all-namespaces --secrets --require-opt-in=false", notes: []string{"--auto-reload-all"}},
		{name: "reload-on-create and delete", args: []string{"--reload-on-create=true", "--reload-on-delete=false"}, flags: defaultFlags,
			notes: []string{"--reload-on-create=true", "--reload-on-delete=false"}},
		{name: "reload-on-create not a boolean", args: []string{"--reload-on-create=yes please"}, flags: defaultFlags,
			unsupported: []string{"--reload-on-create=yes please"}},
		{name: "ignore-secrets", args: []string{"--ignore-secrets"}, flags: "--all-namespaces --require-opt-in=true"},
		{name: "resources-to-ignore secrets", args: []string{"--resources-to-ignore=secrets"}, flags: "--all-namespaces --require-opt-in=true"},
		{name: "ignore-configmaps", args: []string{"--ignore-configmaps=true"}, flags: defaultFlags,
			unsupported: []string{"ignore ConfigMaps (--resources-to-ignore=configmaps, reloader.ignoreConfigMaps)"}},
		{name: "resources-to-ignore configmaps", args: []string{"--resources-to-ignore=configmaps"}, flags: defaultFlags,
			unsupported: []string{"ignore ConfigMaps (--resources-to-ignore=configmaps, reloader.ignoreConfigMaps)"}},
		{name: "ignored-workload-types", args: []string{"--ignored-workload-types=jobs,cronjobs"},
			flags: "--all-namespaces --ignore-workload-kinds=jobs,cronjobs --secrets --require-opt-in=true"},
		{name: "ignored-workload-types unknown", args: []string{"--ignored-workload-types=pods"}, flags: defaultFlags,
			unsupported: []string{"--ignored-workload-types=pods"}},
		{name: "KUBERNETES_NAMESPACE and --namespaces: --namespaces wins", args: []string{"--namespaces=web"},
			env:   []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", Value: "shop"}},
			flags: "--namespace=web --secrets --require-opt-in=true", notes: []string{"--namespaces"}},
		{name: "one namespace: no namespace selector, no ignored namespaces",
			args:  []string{"--namespace-selector=team=a", "--namespaces-to-ignore=shop,kube-system"},
			env:   []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", Value: "shop"}},
			flags: "--namespace=shop --secrets --require-opt-in=true",
			notes: []string{"env KUBERNETES_NAMESPACE", "--namespace-selector=team=a", "--namespaces-to-ignore=shop,kube-system"}},
		{name: "resources-to-ignore in any case", args: []string{"--resources-to-ignore=Secrets"}, flags: "--all-namespaces --require-opt-in=true"},
		{name: "ignored-workload-types: one bad entry voids the list", args: []string{"--ignored-workload-types=jobs,CronJobs"}, flags: defaultFlags,
			unsupported: []string{"--ignored-workload-types=jobs,CronJobs"}},
		{name: "namespace-selector key:*", args: []string{"--namespace-selector=team:*"},
			flags: "--all-namespaces --namespace-selector=team --secrets --require-opt-in=true", notes: []string{"--namespace-selector=team:*"}},
		{name: "is-Argo-Rollouts", args: []string{"--is-Argo-Rollouts=true"}, flags: defaultFlags, notes: []string{"--is-Argo-Rollouts=true"}},
		{name: "log-format", args: []string{"--log-format=json", "--log-level=debug"}, flags: defaultFlags,
			notes: []string{"--log-format=json", "--log-level=debug"}},
		{name: "auto-annotation", args: []string{"--auto-annotation=example.com/auto"}, flags: defaultFlags,
			unsupported: []string{"--auto-annotation=example.com/auto"}},
		{name: "auto-annotation the default", args: []string{"--auto-annotation=reloader.stakater.com/auto"}, flags: defaultFlags},
		{name: "configmap and secret annotations", args: []string{"--configmap-annotation=x.io/cm", "--secret-annotation=x.io/secret"}, flags: defaultFlags,
			unsupported: []string{"--configmap-annotation=x.io/cm", "--secret-annotation=x.io/secret"}},
		{name: "search-match-annotation", args: []string{"--search-match-annotation=x.io/match"}, flags: defaultFlags,
			unsupported: []string{"--search-match-annotation=x.io/match"}},
		{name: "KUBERNETES_NAMESPACE from the pod's namespace",
			env:   []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
			flags: "--namespace=reloader --secrets --require-opt-in=true", notes: []string{"env KUBERNETES_NAMESPACE"}},
		{name: "KUBERNETES_NAMESPACE a value", env: []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", Value: "shop"}},
			flags: "--namespace=shop --secrets --require-opt-in=true", notes: []string{"env KUBERNETES_NAMESPACE"}},
		{name: "KUBERNETES_NAMESPACE from a ConfigMap",
			env:   []corev1.EnvVar{{Name: "KUBERNETES_NAMESPACE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "ns"}}}},
			flags: defaultFlags, unsupported: []string{"env KUBERNETES_NAMESPACE"}},
		{name: "watch-globally false", args: []string{"--watch-globally=false"},
			flags: "--namespace=reloader --secrets --require-opt-in=true", notes: []string{"--watch-globally=false"}},
		{name: "namespaces, one", args: []string{"--namespaces=shop"},
			flags: "--namespace=shop --secrets --require-opt-in=true", notes: []string{"--namespaces"}},
		{name: "namespaces, two", args: []string{"--namespaces=shop,web"}, flags: defaultFlags,
			unsupported: []string{"--namespaces=shop,web"}},
		{name: "unknown flag", args: []string{"--frobnicate=1", "--sync-after-restart"}, flags: defaultFlags,
			notes: []string{"--sync-after-restart"}, unsupported: []string{"--frobnicate"}},
		{name: "enable-ha, pprof", args: []string{"--enable-ha", "--enable-pprof"}, flags: defaultFlags,
			notes: []string{"--enable-ha", "--enable-pprof"}},
		{name: "webhook-url and csi", args: []string{"--webhook-url=https://hooks.example/x", "--enable-csi-integration"}, flags: defaultFlags,
			unsupported: []string{"--enable-csi-integration", "--webhook-url"}},
		{name: "alerts from a Secret",
			env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "true"}, secretEnv("ALERT_WEBHOOK_URL", "alerts", "url"), {Name: "ALERT_SINK", Value: "slack"},
				secretEnv("ALERT_WEBHOOK_PROXY", "proxy", "url"), {Name: "ALERT_ADDITIONAL_INFO", Value: "prod-eu"}},
			flags: "--all-namespaces --secrets --require-opt-in=true --alert-format=slack --alert-info=prod-eu",
			notes: []string{"env ALERT_WEBHOOK_URL"}},
		{name: "alert URL in plain text", env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "true"}, {Name: "ALERT_WEBHOOK_URL", Value: "https://hooks.example/T0K3N"}},
			flags: defaultFlags, unsupported: []string{"env ALERT_WEBHOOK_URL"}},
		{name: "alerts off: ALERT_ON_RELOAD unset", env: []corev1.EnvVar{secretEnv("ALERT_WEBHOOK_URL", "alerts", "url"), {Name: "ALERT_SINK", Value: "slack"}},
			flags: defaultFlags, notes: []string{"env ALERT_ON_RELOAD"}},
		{name: "alerts off: ALERT_ON_RELOAD false", env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "false"}, secretEnv("ALERT_WEBHOOK_URL", "alerts", "url")},
			flags: defaultFlags, notes: []string{"env ALERT_ON_RELOAD"}},
		{name: "alerts from the chart's env.secret",
			env: []corev1.EnvVar{secretEnv("ALERT_ON_RELOAD", "reloader", "ALERT_ON_RELOAD"), secretEnv("ALERT_WEBHOOK_URL", "reloader", "ALERT_WEBHOOK_URL"),
				secretEnv("ALERT_SINK", "reloader", "ALERT_SINK"), secretEnv("ALERT_ADDITIONAL_INFO", "reloader", "ALERT_ADDITIONAL_INFO")},
			flags: defaultFlags, notes: []string{"env ALERT_WEBHOOK_URL"},
			unsupported: []string{"env ALERT_ON_RELOAD", "env ALERT_SINK", "env ALERT_ADDITIONAL_INFO"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := Map(Reloader{Namespace: "reloader", Args: tc.args, Env: tc.env})
			if got := strings.Join(m.Values.Flags(), " "); got != tc.flags {
				t.Errorf("flags:\n got %s\nwant %s", got, tc.flags)
			}
			if got := settings(m.Notes); !reflect.DeepEqual(got, tc.notes) {
				t.Errorf("notes: got %q, want %q", got, tc.notes)
			}
			if got := settings(m.Unsupported); !reflect.DeepEqual(got, tc.unsupported) {
				t.Errorf("unsupported: got %q, want %q", got, tc.unsupported)
			}
			if m.NeedsPerson() != (len(tc.unsupported) > 0) {
				t.Errorf("NeedsPerson() = %t with %d unsupported", m.NeedsPerson(), len(tc.unsupported))
			}
		})
	}
}

func settings(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Setting)
	}
	return out
}

// TestValuesYAML: the chart's values of the e2e Reloader, exactly.
func TestValuesYAML(t *testing.T) {
	m := Map(Reloader{Namespace: "reloader", Args: []string{"--reload-strategy=annotations", "--namespaces-to-ignore=kube-system",
		"--resource-label-selector=team=a", "--auto-reload-all=true", "--auto-annotation=example.com/auto", "--ignored-workload-types=cronjobs"},
		Env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "true"}, secretEnv("ALERT_WEBHOOK_URL", "alerts", "url"), {Name: "ALERT_SINK", Value: "teams"}}})
	got, err := m.Values.YAML()
	if err != nil {
		t.Fatal(err)
	}
	want := `alerts:
  format: teams
  webhook:
    existingSecret: alerts
    key: url
ignoreNamespaces:
- kube-system
ignoreWorkloadKinds:
- cronjobs
requireOptIn: false
resourceLabelSelector: team=a
secrets: true
watchGlobally: true
`
	if string(got) != want {
		t.Errorf("values:\n%s\nwant:\n%s", got, want)
	}
	if env := m.Values.FlagEnv(); !reflect.DeepEqual(env, []string{"CMSYNC_ALERT_WEBHOOK from Secret alerts, key url"}) {
		t.Errorf("FlagEnv() = %q", env)
	}
	if !reflect.DeepEqual(m.Custom, []CustomAnnotation{{Flag: "--auto-annotation", Name: "example.com/auto", Standard: "reloader.stakater.com/auto"}}) {
		t.Errorf("Custom = %+v", m.Custom)
	}
}

// TestUnsupportedAdvice: each unsupported item says what to do, and a URL
// (a credential) is never repeated.
func TestUnsupportedAdvice(t *testing.T) {
	tests := []struct {
		args   []string
		env    []corev1.EnvVar
		advice string
	}{
		{args: []string{"--auto-annotation=example.com/auto"},
			advice: `cmsync reads only reloader.stakater.com/auto: rename example.com/auto to reloader.stakater.com/auto in the manifests that carry it (listed below), or opt them in with kubectl-cmsync.io/watch: "true"`},
		{args: []string{"--ignore-configmaps"},
			advice: `cmsync always watches ConfigMaps: narrow them with resourceLabelSelector (--resource-label-selector), or opt the ConfigMaps out with kubectl-cmsync.io/watch: "false"`},
		{args: []string{"--namespaces=a,b"},
			advice: "cmsync watches one namespace or all: label these namespaces and set namespaceSelector (--namespace-selector), or run one controller per namespace"},
		{args: []string{"--webhook-url=https://hooks.example/T0K3N"},
			advice: "cmsync has no notify-only mode: use kubectl-cmsync.io/reload-hook on the workloads (sent to each pod after a verified remount), or alerts.webhook to tell another system"},
		{env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "true"}, {Name: "ALERT_WEBHOOK_URL", Value: "https://hooks.example/T0K3N"}},
			advice: "cmsync reads this URL from a Secret only (it may hold a token): put it in a Secret and set its name and key in the alerts values"},
		{env: []corev1.EnvVar{{Name: "ALERT_ON_RELOAD", Value: "true"}, secretEnv("ALERT_WEBHOOK_URL", "alerts", "url"), secretEnv("ALERT_SINK", "reloader", "sink")},
			advice: "its value comes from Secret reloader, key sink, which migrate does not read: set alerts.format to its value in lower case (slack, teams or gchat; raw for any other)"},
	}
	for _, tc := range tests {
		m := Map(Reloader{Args: tc.args, Env: tc.env})
		if len(m.Unsupported) != 1 || m.Unsupported[0].Advice != tc.advice {
			t.Errorf("%v %v: unsupported %+v, want one with advice %q", tc.args, tc.env, m.Unsupported, tc.advice)
		}
		for _, it := range m.Unsupported {
			if strings.Contains(it.Setting+it.Advice, "T0K3N") {
				t.Errorf("the URL is printed: %+v", it)
			}
		}
	}
}

// TestMapEnvFrom: a ConfigMap or Secret read through envFrom may set
// KUBERNETES_NAMESPACE and ALERT_*: each is one item a person checks, not
// silently taken as all namespaces and no alerts.
func TestMapEnvFrom(t *testing.T) {
	m := Map(Reloader{Namespace: "reloader", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "reloader-env"}}},
		{Prefix: "X_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "reloader-alerts"}}},
	}})
	if got := settings(m.Unsupported); !reflect.DeepEqual(got, []string{"envFrom ConfigMap reloader-env", `envFrom Secret reloader-alerts (prefix "X_")`}) {
		t.Errorf("unsupported: %q, want both envFrom sources", got)
	}
	if !m.NeedsPerson() || !strings.Contains(m.Unsupported[0].Advice, "KUBERNETES_NAMESPACE") || !strings.Contains(m.Unsupported[0].Advice, "ALERT_") {
		t.Errorf("advice %q, want it to name KUBERNETES_NAMESPACE and ALERT_*", m.Unsupported[0].Advice)
	}
}

// TestRolloutsLeftAlone: without --is-Argo-Rollouts Reloader leaves Argo
// Rollouts alone, which cmsync does not: each annotated one is named.
func TestRolloutsLeftAlone(t *testing.T) {
	rows := []Row{{Namespace: "shop", Workload: "deployment/web"}, {Namespace: "shop", Workload: "rollout.argoproj.io/canary"}}
	m := Map(Reloader{})
	m.RolloutsLeftAlone(rows)
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0].Advice, "shop/rollout.argoproj.io/canary") || strings.Contains(m.Notes[0].Advice, "deployment/web") {
		t.Errorf("notes %+v, want one naming the Rollout only", m.Notes)
	}
	m = Map(Reloader{Args: []string{"--is-Argo-Rollouts=true"}})
	m.RolloutsLeftAlone(rows)
	if settings(m.Notes)[0] != "--is-Argo-Rollouts=true" || len(m.Notes) != 1 {
		t.Errorf("with --is-Argo-Rollouts=true: notes %+v", m.Notes)
	}
}
