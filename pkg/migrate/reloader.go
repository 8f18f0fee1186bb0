// Package migrate maps a running Stakater Reloader onto cmsync's controller:
// its container args and env to the chart's values (or the controller's
// flags), the settings cmsync does not support with what to do about each,
// and, for each workload Reloader's annotations opt in, what cmsync will do
// differently, decided by pkg/reconcile's own selection and on-change
// policy. Everything here is pure but cluster.go, the reads behind the
// Cluster interface.
package migrate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// Reloader is what one Reloader container runs.
type Reloader struct {
	// Namespace is its Deployment's: where KUBERNETES_NAMESPACE comes from
	// metadata.namespace (the chart's watchGlobally: false).
	Namespace string
	// Args are the container's command after the binary, then its args.
	Args []string
	Env  []corev1.EnvVar
	// EnvFrom are the ConfigMaps and Secrets whose keys the container
	// reads as variables: KUBERNETES_NAMESPACE and ALERT_* among them.
	EnvFrom []corev1.EnvFromSource
}

// Item is one Reloader setting and what it becomes, or what to do.
type Item struct {
	Setting string `json:"setting"`
	Advice  string `json:"advice"`
}

// Mapping is what a Reloader's settings become in cmsync.
type Mapping struct {
	Values Values `json:"values"`
	// Notes are settings that map, with what differs; Unsupported those a
	// person must act on.
	Notes       []Item `json:"notes,omitempty"`
	Unsupported []Item `json:"unsupported,omitempty"`
	// Custom are the custom annotation names in use, each to the standard
	// name cmsync reads, in the order of Reloader's flags.
	Custom []CustomAnnotation `json:"customAnnotations,omitempty"`
	// oneNamespace: Reloader watches the one namespace of
	// KUBERNETES_NAMESPACE, where it reads no namespace selector.
	oneNamespace bool
	// argoRollouts: Reloader restarts Argo Rollouts (--is-Argo-Rollouts).
	argoRollouts bool
}

// RolloutsLeftAlone notes the Argo Rollouts among rows that cmsync will
// act on and Reloader, without --is-Argo-Rollouts, left alone.
func (m *Mapping) RolloutsLeftAlone(rows []Row) {
	if m.argoRollouts {
		return
	}
	var names []string
	for _, r := range rows {
		if strings.HasPrefix(r.Workload, "rollout.argoproj.io/") {
			names = append(names, r.Namespace+"/"+r.Workload)
		}
	}
	if len(names) > 0 {
		m.note("--is-Argo-Rollouts (unset or false)", "Reloader leaves Argo Rollouts alone without it; cmsync acts on those its annotations opt in: "+strings.Join(names, ", "))
	}
}

// CustomAnnotation is an annotation name Reloader was told to read instead
// of its default, which cmsync reads.
type CustomAnnotation struct {
	Flag     string `json:"flag"`
	Name     string `json:"name"`
	Standard string `json:"standard"`
}

// customFlags are Reloader's flags that rename an annotation, with its
// default name, which is the one cmsync reads.
var customFlags = []struct{ flag, standard string }{
	{"auto-annotation", reconcile.ReloaderAuto},
	{"configmap-auto-annotation", reconcile.ReloaderConfigMapAuto},
	{"secret-auto-annotation", reconcile.ReloaderSecretAuto},
	{"configmap-annotation", reconcile.ReloaderConfigMapReload},
	{"secret-annotation", reconcile.ReloaderSecretReload},
	{"auto-search-annotation", reconcile.ReloaderSearch},
	{"search-match-annotation", reconcile.ReloaderMatch},
	{"ignore-annotation", reconcile.ReloaderIgnore},
	{"pause-deployment-annotation", reconcile.ReloaderPausePeriod},
	{"pause-deployment-time-annotation", "deployment.reloader.stakater.com/paused-at"},
}

// flagSet is Reloader's flags, as its command defines them (the ones cmsync
// maps or must tell about), plus the chart's ignore and watch-globally forms.
func flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("reloader", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	for _, f := range customFlags {
		fs.String(f.flag, f.standard, "")
	}
	for _, s := range []string{"namespaces-to-ignore", "namespace-selector", "resource-label-selector", "resources-to-ignore", "ignored-workload-types", "namespaces"} {
		fs.StringSlice(s, nil, "")
	}
	for _, b := range []string{"auto-reload-all", "sync-after-restart", "enable-ha", "enable-pprof", "enable-csi-integration", "ignore-secrets", "ignore-configmaps", "watch-globally"} {
		fs.Bool(b, b == "watch-globally", "")
	}
	fs.String("reload-strategy", "env-vars", "")
	fs.String("reload-on-create", "false", "")
	fs.String("reload-on-delete", "false", "")
	fs.String("is-Argo-Rollouts", "false", "")
	fs.String("is-openshift", "", "")
	fs.String("log-format", "", "")
	fs.String("log-level", "info", "")
	fs.String("webhook-url", "", "")
	fs.String("pprof-addr", ":6060", "")
	return fs
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Map maps a Reloader's args and env. A flag cmsync does not know, or one
// whose value does not parse, is Unsupported: Map never fails.
func Map(r Reloader) Mapping {
	m := Mapping{Values: Values{WatchGlobally: true, Secrets: true, RequireOptIn: true}}
	fs := flagSet()
	fs.ParseErrorsAllowlist.UnknownFlags = true
	if err := fs.Parse(r.Args); err != nil {
		m.unsupported(strings.Join(r.Args, " "), fmt.Sprintf("cannot parse Reloader's arguments (%v): map them by hand with docs/controller.md, \"Migrating from Reloader\"", err))
		return m
	}
	for _, name := range unknownFlags(fs, r.Args) {
		m.unsupported("--"+name, "not a Reloader flag cmsync knows: check it against docs/controller.md, \"Migrating from Reloader\"")
	}
	m.envFrom(r.EnvFrom)
	m.scope(fs, r)
	m.selectors(fs)
	m.kinds(fs)
	m.behaviour(fs)
	m.custom(fs)
	m.alerts(r.Env)
	return m
}

// envFrom reports each envFrom source of Reloader's container: it may set
// KUBERNETES_NAMESPACE (one namespace) and ALERT_* (the alerts), which
// migrate does not read from it (variables set by env win over it).
func (m *Mapping) envFrom(sources []corev1.EnvFromSource) {
	for _, src := range sources {
		what := ""
		switch {
		case src.ConfigMapRef != nil:
			what = "ConfigMap " + src.ConfigMapRef.Name
		case src.SecretRef != nil:
			what = "Secret " + src.SecretRef.Name
		default:
			continue
		}
		if src.Prefix != "" {
			what += fmt.Sprintf(" (prefix %q)", src.Prefix)
		}
		m.unsupported("envFrom "+what, "migrate does not read its keys: if it sets KUBERNETES_NAMESPACE, Reloader watches that namespace only (set watchGlobally: false "+
			"and namespaces: [NS]); if it sets ALERT_*, Reloader alerts with them (set the alerts values as docs/controller.md's table says); "+
			"the values below assume it sets neither, except as env sets them")
	}
}

func (m *Mapping) note(setting, advice string) {
	m.Notes = append(m.Notes, Item{setting, advice})
}

func (m *Mapping) unsupported(setting, advice string) {
	m.Unsupported = append(m.Unsupported, Item{setting, advice})
}

// NeedsPerson tells whether a person must act before cmsync replaces this
// Reloader: an unsupported setting (custom annotation names included).
func (m Mapping) NeedsPerson() bool { return len(m.Unsupported) > 0 }

// unknownFlags are the flags among args that fs does not define, in order.
func unknownFlags(fs *pflag.FlagSet, args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok || name == "" {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if fs.Lookup(name) == nil && (len(name) != 1 || fs.ShorthandLookup(name) == nil) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func set(fs *pflag.FlagSet, name string) bool { return fs.Changed(name) }

func str(fs *pflag.FlagSet, name string) string {
	v, _ := fs.GetString(name)
	return v
}

func list(fs *pflag.FlagSet, name string) []string {
	v, _ := fs.GetStringSlice(name)
	var out []string
	for _, s := range v {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func boolean(fs *pflag.FlagSet, name string) bool {
	v, _ := fs.GetBool(name)
	return v
}

// scope maps --namespaces, KUBERNETES_NAMESPACE and --watch-globally to
// one namespace or all. Reloader takes --namespaces over
// KUBERNETES_NAMESPACE; with KUBERNETES_NAMESPACE alone it watches that one
// namespace (oneNamespace), where it reads no namespace selector.
func (m *Mapping) scope(fs *pflag.FlagSet, r Reloader) {
	ns, from := "", ""
	if nss := list(fs, "namespaces"); len(nss) > 0 {
		if len(nss) > 1 {
			m.unsupported("--namespaces="+strings.Join(nss, ","), "cmsync watches one namespace or all: label these namespaces and set namespaceSelector (--namespace-selector), or run one controller per namespace")
			return
		}
		ns, from = nss[0], "--namespaces"
	} else {
		var ok bool
		if ns, from, ok = m.envNamespace(r); !ok {
			return
		}
		if ns == "" && set(fs, "watch-globally") && !boolean(fs, "watch-globally") {
			ns, from = r.Namespace, "--watch-globally=false"
		}
		m.oneNamespace = ns != ""
	}
	if ns != "" {
		m.Values.WatchGlobally, m.Values.Namespaces = false, []string{ns}
		m.note(from, "watches namespace "+ns+" only, as Reloader does")
	}
}

// envNamespace is the namespace KUBERNETES_NAMESPACE names ("" when
// unset), and where it was read; false, with an unsupported item, when its
// value comes from a reference migrate does not resolve.
func (m *Mapping) envNamespace(r Reloader) (ns, from string, ok bool) {
	for _, e := range r.Env {
		if e.Name != "KUBERNETES_NAMESPACE" {
			continue
		}
		from = "env KUBERNETES_NAMESPACE"
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			ns = r.Namespace
		case e.ValueFrom != nil:
			m.unsupported(from, "its value comes from a reference migrate does not resolve: set namespaces: [NS] (-n NS) to the namespace Reloader watches")
			return "", from, false
		default:
			ns = e.Value
		}
	}
	return ns, from, true
}

// selectors maps the namespace and resource selectors, turning Reloader's
// legacy forms (key:value, key=*) into Kubernetes label selectors.
func (m *Mapping) selectors(fs *pflag.FlagSet) {
	if m.oneNamespace {
		for _, f := range []string{"namespace-selector", "namespaces-to-ignore"} {
			if raw := list(fs, f); len(raw) > 0 {
				m.note("--"+f+"="+strings.Join(raw, ","), "left out: Reloader ignores it when it watches one namespace (KUBERNETES_NAMESPACE)")
			}
		}
	} else {
		m.Values.IgnoreNamespaces = list(fs, "namespaces-to-ignore")
	}
	for _, s := range []struct {
		flag string
		to   *string
	}{{"namespace-selector", &m.Values.NamespaceSelector}, {"resource-label-selector", &m.Values.ResourceLabelSelector}} {
		raw := list(fs, s.flag)
		if len(raw) == 0 || m.oneNamespace && s.flag == "namespace-selector" {
			continue
		}
		sel, legacy := labelSelector(raw)
		if _, err := labels.Parse(sel); err != nil {
			m.unsupported("--"+s.flag+"="+strings.Join(raw, ","), fmt.Sprintf("not a Kubernetes label selector (%v): write it as key=value, key!=value or key", err))
			continue
		}
		*s.to = sel
		if legacy {
			m.note("--"+s.flag+"="+strings.Join(raw, ","), fmt.Sprintf("Reloader's legacy key:value, key:* or key=* forms, written as the label selector %q", sel))
		}
	}
}

// labelSelector joins Reloader's selector terms into one label selector:
// key:value becomes key=value, key=* and key:* become key; legacy tells whether
// a term was rewritten.
func labelSelector(terms []string) (sel string, legacy bool) {
	out := make([]string, len(terms))
	for i, t := range terms {
		switch k, v, ok := strings.Cut(t, ":"); {
		case ok && v == "*" && !strings.ContainsAny(t, "=!"):
			t, legacy = k, true
		case ok && !strings.ContainsAny(t, "=!"):
			t, legacy = k+"="+v, true
		case strings.HasSuffix(t, "=*"):
			t, legacy = strings.TrimSuffix(t, "=*"), true
		}
		out[i] = t
	}
	return strings.Join(out, ","), legacy
}

// kinds maps what Reloader ignores: Secrets, ConfigMaps, Jobs, CronJobs.
func (m *Mapping) kinds(fs *pflag.FlagSet) {
	var res []string // Reloader compares them in lower case
	for _, r := range list(fs, "resources-to-ignore") {
		res = append(res, strings.ToLower(r))
	}
	if boolean(fs, "ignore-secrets") || slices.Contains(res, "secrets") {
		m.Values.Secrets = false
	}
	if boolean(fs, "ignore-configmaps") || slices.Contains(res, "configmaps") {
		m.unsupported("ignore ConfigMaps (--resources-to-ignore=configmaps, reloader.ignoreConfigMaps)",
			"cmsync always watches ConfigMaps: narrow them with resourceLabelSelector (--resource-label-selector), or opt the ConfigMaps out with kubectl-cmsync.io/watch: \"false\"")
	}
	for _, r := range res {
		if r != "secrets" && r != "configmaps" {
			m.unsupported("--resources-to-ignore="+r, "Reloader knows only secrets and configmaps here: drop it")
		}
	}
	m.workloadTypes(list(fs, "ignored-workload-types"))
}

// workloadTypes maps --ignored-workload-types as Reloader reads it: each
// entry exactly jobs or cronjobs, else the whole list is void and Reloader
// ignores no kind.
func (m *Mapping) workloadTypes(kinds []string) {
	for _, k := range kinds {
		if k != "jobs" && k != "cronjobs" {
			m.unsupported("--ignored-workload-types="+strings.Join(kinds, ","), fmt.Sprintf("Reloader takes only jobs and cronjobs, in lower case: "+
				"%q voids the whole list, so Reloader ignores no kind and neither will cmsync; list the kinds to ignore in ignoreWorkloadKinds (--ignore-workload-kinds)", k))
			return
		}
	}
	m.Values.IgnoreWorkloadKinds = kinds
}

// behaviour maps the flags that change what a change does.
func (m *Mapping) behaviour(fs *pflag.FlagSet) {
	if boolean(fs, "auto-reload-all") {
		m.Values.RequireOptIn = false
		m.note("--auto-reload-all", "requireOptIn: false (--require-opt-in=false): a workload not opted in gets on-change: remount, so its volumes are remounted and only env and subPath uses restart it; Reloader restarts every workload")
	}
	switch s := str(fs, "reload-strategy"); s {
	case "env-vars", "annotations":
		if set(fs, "reload-strategy") {
			m.note("--reload-strategy="+s, "no flag: cmsync restarts by writing kubectl.kubernetes.io/restartedAt on the pod template, as kubectl rollout restart does; extraArgs: [--restart-via=evict] evicts the stale pods instead and leaves the template alone")
		}
	default:
		m.unsupported("--reload-strategy="+s, "Reloader knows env-vars and annotations only: check the Deployment, then drop it")
	}
	for _, f := range []string{"reload-on-create", "reload-on-delete"} {
		if !set(fs, f) {
			continue
		}
		if _, err := strconv.ParseBool(str(fs, f)); err != nil {
			m.unsupported("--"+f+"="+str(fs, f), "not true or false: drop it; cmsync always acts on creations and deletions, for stale consumers only")
			continue
		}
		m.note("--"+f+"="+str(fs, f), "no flag: cmsync always acts on creations and deletions, for stale consumers only")
	}
	m.argoRollouts = str(fs, "is-Argo-Rollouts") == "true"
	if v := str(fs, "is-Argo-Rollouts"); set(fs, "is-Argo-Rollouts") && m.argoRollouts {
		m.note("--is-Argo-Rollouts="+v, "none needed: Argo Rollouts are handled whenever their CRD exists")
	}
	for _, f := range []string{"log-format", "log-level"} {
		if set(fs, f) {
			m.note("--"+f+"="+str(fs, f), "none: the controller always writes one JSON object per event")
		}
	}
	m.flagsWithNoValue(fs)
}

// flagsWithNoValue maps the flags that have no cmsync value.
func (m *Mapping) flagsWithNoValue(fs *pflag.FlagSet) {
	if boolean(fs, "sync-after-restart") {
		m.note("--sync-after-restart", "no flag: a new leader checks each consumer whose objects changed since its record")
	}
	if boolean(fs, "enable-ha") {
		m.note("--enable-ha", "always on: leaderElection.enabled and 2 replicas by default")
	}
	if boolean(fs, "enable-pprof") || set(fs, "pprof-addr") {
		m.note("--enable-pprof", "not carried over: cmsync's --enable-pprof serves the profiles at /debug/pprof/ on --metrics-addr (:8080), not on a port of their own; add it to extraArgs when you need them")
	}
	if boolean(fs, "enable-csi-integration") {
		m.unsupported("--enable-csi-integration", "cmsync does not watch SecretProviderClassPodStatus: sync the driver's secrets into Kubernetes Secrets (secretObjects), which cmsync handles like any Secret")
	}
	if v := str(fs, "is-openshift"); v == "true" {
		m.unsupported("--is-openshift=true", "cmsync does not restart DeploymentConfigs: move them to Deployments; until then a use that needs a restart is reported manual")
	}
	if str(fs, "webhook-url") != "" {
		m.unsupported("--webhook-url", "cmsync has no notify-only mode: use kubectl-cmsync.io/reload-hook on the workloads (sent to each pod after a verified remount), or alerts.webhook to tell another system")
	}
}

// custom lists the custom annotation names Reloader reads instead of its
// defaults: cmsync reads only the defaults.
func (m *Mapping) custom(fs *pflag.FlagSet) {
	for _, f := range customFlags {
		v := strings.TrimSpace(str(fs, f.flag))
		if v == "" || v == f.standard {
			continue
		}
		m.Custom = append(m.Custom, CustomAnnotation{Flag: "--" + f.flag, Name: v, Standard: f.standard})
		m.unsupported("--"+f.flag+"="+v, fmt.Sprintf("cmsync reads only %s: rename %s to %s in the manifests that carry it (listed below), or opt them in with %s: \"true\"", f.standard, v, f.standard, reconcile.AnnotationWatch))
	}
}
