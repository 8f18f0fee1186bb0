package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/fixtures"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// statusTestNow is the fixed clock of the status tests.
var statusTestNow = time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)

// statusClusterObjects decodes testdata/status-cluster.yaml.
func statusClusterObjects(t *testing.T) []runtime.Object {
	return fixtures.Objects(t, filepath.Join("testdata", "status-cluster.yaml"))
}

// statusLoader reads the fixture cluster through inspect.Load over a fake
// clientset, and records the options it was called with.
type statusLoader struct {
	objs  []runtime.Object
	calls []inspect.LoadOptions // without PodSink (a func)
	sinks []bool                // whether each call had a PodSink
	err   error
}

func (f *statusLoader) Load(ctx context.Context, o inspect.LoadOptions) (*inspect.Snapshot, error) {
	c := o
	c.PodSink = nil
	f.calls, f.sinks = append(f.calls, c), append(f.sinks, o.PodSink != nil)
	if f.err != nil {
		return nil, f.err
	}
	return inspect.Load(ctx, fake.NewClientset(f.objs...), o)
}

// writeStatusKubeconfig writes a kubeconfig whose context names namespace ns and
// points KUBECONFIG at it; server is the API server URL.
func writeStatusKubeconfig(t *testing.T, server, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ` + server + `
users:
- name: test
  user:
    token: test-token
contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: ` + ns + `
current-context: test
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	return path
}

// newTestStatusOptions returns options over the fixture cluster with
// buffers for the streams.
func newTestStatusOptions(t *testing.T, loader *statusLoader) (*StatusOptions, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewStatusOptions(genericclioptions.NewConfigFlags(true), streams)
	o.LoadSnapshot = loader.Load
	o.Now = func() time.Time { return statusTestNow }
	return o, out, errOut
}

// runStatusOptions runs Complete, Validate and Run the way the command
// does, over the fixture cluster.
func runStatusOptions(t *testing.T, o *StatusOptions, args []string) error {
	t.Helper()
	if err := o.Complete(args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(context.Background())
}

// runStatusRoot runs `kubectl cmsync ARGS` through the root command.
func runStatusRoot(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := NewCmdRoot(streams)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestStatusUsageErrors drives the command through the root with bad
// flags and arguments: exact messages, exit code 2, and no cluster needed.
func TestStatusUsageErrors(t *testing.T) {
	writeStatusKubeconfig(t, "https://127.0.0.1:1", "shop")
	const names = "use NAME (a ConfigMap) or TYPE/NAME, TYPE one of configmap (cm), secret, deployment (deploy), statefulset (sts), daemonset (ds), replicaset (rs), job, cronjob (cj), pod (po), rollout (ro), or their plurals"
	cases := []struct {
		name string
		args []string
		err  string
		code int
	}{
		{"bad -o", []string{"status", "-o", "xml"},
			`unable to match a printer suitable for the output format "xml", allowed formats are: wide,json,yaml`, ExitUsage},
		{"-o name is not a status format", []string{"status", "--output=name"},
			`unable to match a printer suitable for the output format "name", allowed formats are: wide,json,yaml`, ExitUsage},
		{"-A with a name", []string{"status", "-A", "web-config"},
			"a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE", ExitUsage},
		{"--all-namespaces with a secret", []string{"status", "secret/web-secrets", "--all-namespaces"},
			"a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE", ExitUsage},
		{"bad resource type", []string{"status", "service/x"},
			`unsupported resource type "service" in "service/x": ` + names, ExitUsage},
		{"bad resource type after a good name and a workload", []string{"status", "web-config", "deploy/web", "svc/x"},
			`unsupported resource type "svc" in "svc/x": ` + names, ExitUsage},
		{"a kind of another group", []string{"status", "deployment.extensions/x"},
			`unsupported resource type "deployment.extensions" in "deployment.extensions/x": ` + names, ExitUsage},
		{"-A with a workload", []string{"status", "-A", "deploy/web"},
			"a workload cannot be named across all namespaces; drop -A and use -n NAMESPACE", ExitUsage},
		{"empty name", []string{"status", ""}, `invalid name "": ` + names, ExitUsage},
		{"empty name after a type", []string{"status", "configmap/"}, `invalid name "configmap/": ` + names, ExitUsage},
		{"name with a slash", []string{"status", "cm/a/b"}, `invalid name "cm/a/b": ` + names, ExitUsage},
		{"name with a space", []string{"status", "secret/a b"}, `invalid name "secret/a b": ` + names, ExitUsage},
		{"unknown flag", []string{"status", "--bogus"},
			"unknown flag: --bogus\nSee 'kubectl cmsync status --help' for usage.", ExitUsage},
		{"flag without its value", []string{"status", "-o"},
			"flag needs an argument: 'o' in -o\nSee 'kubectl cmsync status --help' for usage.", ExitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _, err := runStatusRoot(t, tc.args...)
			if err == nil || err.Error() != tc.err {
				t.Errorf("error = %v\nwant    %s", err, tc.err)
			}
			if code := ExitCode(err); code != tc.code {
				t.Errorf("exit code = %d, want %d", code, tc.code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// withTemplates reads workloads from a fake clientset: StatefulSet db,
// and Deployment idle scaled to zero, whose template reads release and
// not-there.
func withTemplates(o *StatusOptions) {
	zero := int32(0)
	env := func(name string) corev1.EnvFromSource {
		return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	o.Templates = inspect.ClientTemplates{Client: fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "idle"}, Spec: appsv1.DeploymentSpec{Replicas: &zero,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{env("release"), env("not-there")}}}}}}},
	)}
}

// TestStatusOptions runs the options with an injected snapshot: the load
// options they ask for, what they print, errors and exit codes.
func TestStatusOptions(t *testing.T) {
	writeStatusKubeconfig(t, "https://127.0.0.1:1", "shop")
	objs := statusClusterObjects(t)
	cases := []struct {
		name      string
		namespace string // -n
		set       func(o *StatusOptions)
		args      []string
		load      *inspect.LoadOptions // the options Load gets; nil: not called
		loadErr   error
		err       string
		code      int
		stdout    []string // lines that must be printed
		stderr    string
	}{
		{name: "namespace from the kubeconfig context", args: []string{"release"},
			load:   &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true},
			stdout: []string{"release     db-0   db          volume   /etc/release   never-changes   statefulset/db"}},
		{name: "--kubelet-config keeps the pods (their nodes' kubelets are read before the report)", args: []string{"release"},
			set:    func(o *StatusOptions) { o.KubeletConfig = true },
			load:   &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true},
			stdout: []string{"release     db-0   db          volume   /etc/release   never-changes   statefulset/db"}},
		{name: "-n and -l", namespace: "other", set: func(o *StatusOptions) { o.Selector = "app=web" },
			load:   &inspect.LoadOptions{Namespace: "other", PodSelector: "app=web", Nodes: true},
			stderr: "No pods consume ConfigMaps in namespace \"other\" (add --unused to list the unused ones, or -A for all namespaces).\n"},
		{name: "-A reads all namespaces", set: func(o *StatusOptions) { o.AllNamespaces = true },
			load:   &inspect.LoadOptions{Namespace: "", Nodes: true},
			stdout: []string{"NAMESPACE   CONFIGMAP", "shop        release"}},
		{name: "no consumers with --secrets, all namespaces", namespace: "other", set: func(o *StatusOptions) { o.Secrets = true },
			load:   &inspect.LoadOptions{Namespace: "other", Secrets: true, Nodes: true},
			stderr: "No pods consume ConfigMaps or Secrets in namespace \"other\" (add --unused to list the unused ones, or -A for all namespaces).\n"},
		{name: "no consumers, json: an empty document and no message", namespace: "other", set: func(o *StatusOptions) { o.Output = "json" },
			load:   &inspect.LoadOptions{Namespace: "other", Nodes: true},
			stdout: []string{`"kind": "StatusReport",`, `"items": []`}},
		{name: "a named Secret loads Secrets without --secrets", args: []string{"secret/web-secrets"},
			load:   &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true, Workloads: true},
			stdout: []string{"secret/web-secrets   debug"}},
		{name: "unknown name", namespace: "y", args: []string{"x"},
			load: &inspect.LoadOptions{Namespace: "y", Nodes: true, Workloads: true},
			err:  `configmap "x" not found in namespace "y", and no pod consumes it: check the name and the namespace (-n), or list the objects with 'kubectl cmsync status --unused'`, code: ExitFailure},
		{name: "unknown secret", args: []string{"web-config", "secret/x"},
			load: &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true, Workloads: true},
			err:  `secret "x" not found in namespace "shop", and no pod consumes it: check the name and the namespace (-n), or list the objects with 'kubectl cmsync status --unused'`, code: ExitFailure},
		{name: "a load error is explained", loadErr: &inspect.ListError{Resource: "pods", Namespace: "shop", Err: errors.New("boom")},
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true},
			err:  `cannot list pods in namespace "shop": boom`, code: ExitFailure},
		{name: "--check: missing required key", args: []string{"web-config"}, set: func(o *StatusOptions) { o.Check = true },
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true}, code: ExitCheck, err: "exit status 3",
			stderr: "check failed: 1 of 6 uses need attention:\n" +
				`  configmap/web-config pod/db-0 db env (namespace shop): missing: key "tuning" is not in ConfigMap "web-config"; required, so the container cannot start until it is added` + "\n"},
		{name: "--check: breaks-on-change", args: []string{"web-files"}, set: func(o *StatusOptions) { o.Check = true },
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true}, code: ExitCheck, err: "exit status 3",
			stderr: "check failed: 1 of 2 uses need attention:\n" +
				`  configmap/web-files pod/db-0 db subPath (namespace shop): breaks-on-change: subPath "conf.d" is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts` + "\n"},
		{name: "--check: both, over everything", set: func(o *StatusOptions) { o.Check, o.Secrets = true, true },
			load: &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true}, code: ExitCheck, err: "exit status 3",
			stderr: "check failed: 2 of 13 uses need attention:\n" +
				`  configmap/web-config pod/db-0 db env (namespace shop): missing: key "tuning" is not in ConfigMap "web-config"; required, so the container cannot start until it is added` + "\n" +
				`  configmap/web-files pod/db-0 db subPath (namespace shop): breaks-on-change: subPath "conf.d" is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts` + "\n"},
		{name: "--check: restart-needed and hot-update alone pass", args: []string{"secret/web-secrets"}, set: func(o *StatusOptions) { o.Check = true },
			load: &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true, Workloads: true}},
		{name: "--check: a missing optional object passes", args: []string{"debug-settings"}, set: func(o *StatusOptions) { o.Check = true },
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true}},
		{name: "--check: never-changes, not-mounted and unused pass", args: []string{"release", "orphan"}, set: func(o *StatusOptions) { o.Check = true },
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true}},
		{name: "--check with -o json still prints the document", args: []string{"web-files"}, set: func(o *StatusOptions) { o.Check, o.Output = true, "json" },
			load: &inspect.LoadOptions{Namespace: "shop", Nodes: true, Workloads: true}, code: ExitCheck, err: "exit status 3",
			stdout: []string{`"verdict": "breaks-on-change",`},
			stderr: "check failed: 1 of 2 uses need attention:\n" +
				`  configmap/web-files pod/db-0 db subPath (namespace shop): breaks-on-change: subPath "conf.d" is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts` + "\n"},
		{name: "a workload: its pods' uses, Secrets read too", args: []string{"sts/db"}, set: withTemplates,
			load:   &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true},
			stdout: []string{"web-config   db-0   db          env       $TUNING <- tuning", "release      db-0", "3 uses by 1 pod:"}},
		{name: "a workload and an object: its uses of that object", args: []string{"statefulsets.apps/db", "release"}, set: withTemplates,
			load:   &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true},
			stdout: []string{"release   db-0   db          volume   /etc/release   never-changes   statefulset/db", "1 use by 1 pod: 1 never-changes"}},
		{name: "a workload scaled to zero: its template's objects", args: []string{"deploy/idle"}, set: withTemplates,
			load:   &inspect.LoadOptions{Namespace: "shop", Secrets: true, Nodes: true},
			stdout: []string{"release", "no-pods"},
			stderr: "deployment/idle runs no pod now (scaled to 0 replicas): its pod template would read configmap/not-there (missing), configmap/release.\n"},
		{name: "a workload that does not exist", args: []string{"deploy/nope"}, set: withTemplates,
			err: `deployments.apps "nope" not found in namespace "shop": check the name and the namespace (-n), or list them with 'kubectl get deployments -n shop'`, code: ExitFailure},
		{name: "bad -o fails before any load", set: func(o *StatusOptions) { o.Output = "xml" },
			err: `unable to match a printer suitable for the output format "xml", allowed formats are: wide,json,yaml`, code: ExitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &statusLoader{objs: objs, err: tc.loadErr}
			o, out, errOut := newTestStatusOptions(t, l)
			if tc.namespace != "" {
				*o.ConfigFlags.Namespace = tc.namespace
			}
			if tc.set != nil {
				tc.set(o)
			}
			err := runStatusOptions(t, o, tc.args)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Errorf("error = %v, want %q", err, tc.err)
			}
			if code := ExitCode(err); code != tc.code {
				t.Errorf("exit code = %d, want %d", code, tc.code)
			}
			switch {
			case tc.load == nil && len(l.calls) > 0:
				t.Errorf("loaded %+v, want no load", l.calls)
			case tc.load != nil && (len(l.calls) != 1 || !reflect.DeepEqual(l.calls[0], *tc.load)):
				t.Errorf("load calls = %+v, want one with %+v", l.calls, *tc.load)
			case tc.load != nil && l.sinks[0] != (!o.Verify.Enabled && !o.KubeletConfig):
				t.Errorf("a pod sink: %v, want one exactly without --verify and --kubelet-config", l.sinks[0])
			}
			for _, line := range tc.stdout {
				if !strings.Contains(out.String(), line) {
					t.Errorf("stdout does not contain %q:\n%s", line, out)
				}
			}
			if errOut.String() != tc.stderr {
				t.Errorf("stderr = %q\nwant     %q", errOut, tc.stderr)
			}
		})
	}
}

// TestCheckFailures: which verdicts and states fail --check.
func TestCheckFailures(t *testing.T) {
	row := func(v inspect.Verdict, optional bool, st inspect.State) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Name: "cm"}, Pod: inspect.PodRef{Name: "p"},
			Container: &inspect.ContainerRef{Name: "c"}, Mode: inspect.ModeVolume, Verdict: v, Optional: optional, State: st, Reason: "r"}
	}
	cases := []struct {
		it       inspect.Use
		verified bool
		fails    bool
	}{
		{row(inspect.VerdictMissing, false, ""), false, true},
		{row(inspect.VerdictMissing, true, ""), false, false},
		{row(inspect.VerdictBreaksOnChange, false, ""), false, true},
		{row(inspect.VerdictRestartNeeded, false, ""), false, false},
		{row(inspect.VerdictHotUpdate, false, ""), false, false},
		{row(inspect.VerdictNeverChanges, false, ""), false, false},
		{row(inspect.VerdictNotMounted, false, ""), false, false},
		{row(inspect.VerdictUnused, false, ""), false, false},
		// --verify: states fail only when verified.
		{row(inspect.VerdictHotUpdate, false, inspect.StatePending), false, false},
		{row(inspect.VerdictHotUpdate, false, inspect.StatePending), true, true},
		{row(inspect.VerdictRestartNeeded, false, inspect.StateStale), true, true},
		{row(inspect.VerdictRestartNeeded, false, inspect.StateCurrent), true, false},
		{row(inspect.VerdictBreaksOnChange, false, inspect.StateBroken), true, true},
		{row(inspect.VerdictHotUpdate, false, inspect.StateUnverifiable), true, true},
		{row(inspect.VerdictHotUpdate, false, inspect.StateInSync), true, false},
		{row(inspect.VerdictMissing, true, inspect.StateMissing), true, false},
		{row(inspect.VerdictHotUpdate, false, inspect.StateNA), true, false},
	}
	for _, tc := range cases {
		got := CheckFailures([]inspect.Use{tc.it}, tc.verified)
		if (len(got) > 0) != tc.fails {
			t.Errorf("verdict %s optional %v state %q verified %v: failures %q, want failing %v", tc.it.Verdict, tc.it.Optional, tc.it.State, tc.verified, got, tc.fails)
		}
	}
	st := row(inspect.VerdictHotUpdate, false, inspect.StateStale)
	st.StateReason = "differs"
	st.Object.Namespace = "ns"
	if got, want := CheckFailures([]inspect.Use{st}, true), []string{"configmap/cm pod/p c volume (namespace ns): stale: differs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CheckFailures = %q, want %q", got, want)
	}
}

// TestReadKubeletConfigs: --kubelet-config reads /configz once per node of
// the snapshot's pods; a node that refuses keeps the defaults, with a
// warning.
func TestReadKubeletConfigs(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/nodes/node-1/proxy/configz":
			fmt.Fprint(w, `{"kubeletconfig":{"syncFrequency":"30s","configMapAndSecretChangeDetectionStrategy":"Cache"}}`)
		case "/api/v1/nodes/node-3/proxy/configz":
			fmt.Fprint(w, `{"kubeletconfig":{}}`)
		default:
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
				`"message":"nodes \"node-2\" is forbidden: User \"dev\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope"}`)
		}
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(node string) corev1.Pod { return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	snap := &inspect.Snapshot{Pods: []corev1.Pod{pod("node-1"), pod("node-2"), pod("node-1"), pod(""), pod("node-3")}}
	var warn bytes.Buffer
	readKubeletConfigs(context.Background(), c, snap, &warn)
	want := map[string]inspect.KubeletTiming{
		"node-1": {SyncFrequency: 30 * time.Second, Strategy: inspect.StrategyCache},
		"node-3": {Strategy: inspect.StrategyWatch},
	}
	if !reflect.DeepEqual(snap.KubeletConfigs, want) {
		t.Errorf("KubeletConfigs = %+v, want %+v", snap.KubeletConfigs, want)
	}
	wantWarn := `warning: cannot read the kubelet configuration of node "node-2" (needs get on nodes/proxy: nodes "node-2" is forbidden: User "dev" cannot get resource "nodes/proxy" in API group "" at the cluster scope); assuming the kubelet defaults: syncFrequency 1m, the Watch strategy, the feature gates of its version` + "\n"
	if warn.String() != wantWarn {
		t.Errorf("warnings = %q\nwant       %q", warn.String(), wantWarn)
	}
	for path, n := range calls {
		if n != 1 {
			t.Errorf("%s read %d times, want once", path, n)
		}
	}
	if len(calls) != 3 {
		t.Errorf("requests = %v, want one per node", calls)
	}
}
