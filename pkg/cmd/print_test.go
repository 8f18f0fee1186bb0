package cmd

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// The -update flag rewrites the golden files of testdata:
// go test ./pkg/cmd/ -update. Another test file of the package may declare
// it too; it is registered once and read by name.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// statusSentinel is the Secret value of testdata/status-cluster.yaml.
const statusSentinel = "sentinel-SECRET-value"

// checkGolden compares got with testdata/NAME, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updateGolden() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/cmd/ -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s differs from line %d (go test ./pkg/cmd/ -update rewrites it):\n got: %q\nwant: %q", path, i+1, g, w)
			return
		}
	}
}

// statusGoldenRun runs `status --secrets --unused -o FORMAT` over the
// fixture cluster, in namespace shop.
func statusGoldenRun(t *testing.T, format string, set func(o *StatusOptions)) []byte {
	t.Helper()
	writeStatusKubeconfig(t, "https://127.0.0.1:1", "shop")
	o, out, errOut := newTestStatusOptions(t, &statusLoader{objs: statusClusterObjects(t)})
	o.Output, o.Secrets, o.Unused = format, true, true
	if set != nil {
		set(o)
	}
	if err := runStatusOptions(t, o, o.Args); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut)
	}
	return out.Bytes()
}

// TestStatusGolden: the table, wide, JSON and YAML output of one report.
func TestStatusGolden(t *testing.T) {
	for _, f := range []struct{ format, file string }{
		{"", "status.table.golden"},
		{"wide", "status.wide.golden"},
		{"json", "status.json.golden"},
		{"yaml", "status.yaml.golden"},
	} {
		t.Run(f.file, func(t *testing.T) {
			checkGolden(t, f.file, statusGoldenRun(t, f.format, nil))
		})
	}
}

// TestStatusDocument: -o json and -o yaml print the same StatusReport, the
// rows Build made.
func TestStatusDocument(t *testing.T) {
	var fromJSON, fromYAML inspect.Report
	if err := json.Unmarshal(statusGoldenRun(t, "json", nil), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(statusGoldenRun(t, "yaml", nil), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if fromJSON.APIVersion != "cmsync.kubectl-cmsync.io/v1alpha1" || fromJSON.Kind != "StatusReport" || len(fromJSON.Items) == 0 {
		t.Fatalf("document = %s %s with %d items", fromJSON.APIVersion, fromJSON.Kind, len(fromJSON.Items))
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("-o json and -o yaml differ:\n%+v\n%+v", fromJSON, fromYAML)
	}
	for _, it := range fromJSON.Items {
		if it.Verdict == inspect.VerdictHotUpdate && it.Delay == nil {
			t.Errorf("%s/%s: a hot-update row without a delay", it.Pod.Name, it.ContainerName())
		}
	}
}

// TestStatusNeverPrintsSecretValues: no format, with or without
// --include-system or a Secret by name, shows a Secret's value, plain or
// base64.
func TestStatusNeverPrintsSecretValues(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(statusSentinel))
	for _, format := range []string{"", "wide", "json", "yaml"} {
		for _, set := range []func(o *StatusOptions){
			nil,
			func(o *StatusOptions) { o.IncludeSystem, o.NoHeaders = true, true },
			func(o *StatusOptions) { o.Secrets, o.Unused = false, false; o.Args = []string{"secret/web-secrets"} },
		} {
			out := string(statusGoldenRun(t, format, set))
			if !strings.Contains(out, "web-secrets") {
				t.Errorf("-o %q: the Secret is not in the output at all", format)
			}
			if strings.Contains(out, statusSentinel) || strings.Contains(out, b64) || strings.Contains(out, "SECRET-value") {
				t.Errorf("-o %q prints a Secret value:\n%s", format, out)
			}
		}
	}
}

// TestPrintVerifyColumns: STATE and SYNCED with --verify, against a fixed
// clock; and the table options.
func TestPrintVerifyColumns(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)
	synced := metav1.NewTime(now.Add(-150 * time.Second))
	items := []inspect.Use{
		{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web-config", Exists: true},
			Pod: inspect.PodRef{Name: "web-1", Node: "node-1"}, Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular},
			Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, Mode: inspect.ModeVolume, Volume: &inspect.VolumeRef{Name: "c", MountPath: "/etc/web"},
			Verdict: inspect.VerdictHotUpdate, Reason: "mounted", State: inspect.StatePending, StateReason: "older than the API", SyncedAt: &synced},
		{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web-config", Exists: true},
			Pod: inspect.PodRef{Name: "web-2"}, Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular},
			Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, Mode: inspect.ModeEnv, EnvName: "L", Keys: []string{"l"},
			Verdict: inspect.VerdictRestartNeeded, Reason: "env", State: inspect.StateUnverifiable, StateReason: `forbidden: create pods/exec (pods "web-2" is forbidden: User "dev" cannot create resource "pods/exec" in API group "" in the namespace "shop"; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
	}
	var out bytes.Buffer
	if err := printReport(&out, items, printOptions{AllNamespaces: true, Verify: true, NoHeaders: true, Now: now}); err != nil {
		t.Fatal(err)
	}
	want := "shop   web-config   web-1   app   volume   /etc/web   hot-update       deployment/web   pending                                     2m30s ago\n" +
		"shop   web-config   web-2   app   env      $L <- l    restart-needed   deployment/web   unverifiable: forbidden: create pods/exec   <none>\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := printReport(&out, items, printOptions{Format: "wide", Verify: true, Now: now}); err != nil {
		t.Fatal(err)
	}
	head := strings.Fields(strings.SplitN(out.String(), "\n", 2)[0])
	wantHead := []string{"CONFIGMAP", "POD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "WORKLOAD", "STATE", "SYNCED", "NODE", "DELAY", "IMMUTABLE", "OPTIONAL", "REASON"}
	if !reflect.DeepEqual(head, wantHead) {
		t.Errorf("wide --verify header = %q, want %q", head, wantHead)
	}
	if !strings.Contains(out.String(), "older than the API") {
		t.Errorf("wide REASON does not show the state reason:\n%s", out.String())
	}
	out.Reset()
	if err := printReport(&out, nil, printOptions{}); err != nil || out.Len() != 0 {
		t.Errorf("an empty table prints %q, %v; want nothing", out.String(), err)
	}
}

// TestPrintObjectHeaderAndOptionalMissing: the first column is OBJECT once
// Secrets are shown; an optional missing use reads "missing (optional)",
// a required one "missing".
func TestPrintObjectHeaderAndOptionalMissing(t *testing.T) {
	cm := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}, Pod: inspect.PodRef{Name: "p"},
		Mode: inspect.ModeEnv, EnvName: "A", Keys: []string{"a"}, Verdict: inspect.VerdictMissing, Optional: true}
	req := cm
	req.EnvName, req.Optional = "B", false
	sec := cm
	sec.Object.Kind, sec.Object.Name, sec.Verdict, sec.Optional = inspect.KindSecret, "creds", inspect.VerdictRestartNeeded, false
	for _, c := range []struct {
		items   []inspect.Use
		secrets bool
		head    string
	}{
		{[]inspect.Use{cm, req}, false, "CONFIGMAP"},
		{[]inspect.Use{cm, req}, true, "OBJECT"},
		{[]inspect.Use{cm, sec}, false, "OBJECT"},
	} {
		var out bytes.Buffer
		if err := printReport(&out, c.items, printOptions{Secrets: c.secrets}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		if f := strings.Fields(lines[0]); f[0] != c.head {
			t.Errorf("secrets=%v, %d items: header starts %q, want %q", c.secrets, len(c.items), f[0], c.head)
		}
		if !strings.Contains(lines[1], "missing (optional)") {
			t.Errorf("optional missing row: %q", lines[1])
		}
	}
	var out bytes.Buffer
	_ = printReport(&out, []inspect.Use{req}, printOptions{})
	if strings.Contains(out.String(), "(optional)") || !strings.Contains(out.String(), " missing ") {
		t.Errorf("required missing row: %q", out.String())
	}
}

// TestStreamReportSameBytes: the streamed JSON report is byte for byte the
// document printDocument writes, for no, one and several items.
func TestStreamReportSameBytes(t *testing.T) {
	it := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a<b>&c"},
		Pod: inspect.PodRef{Name: "p"}, Mode: inspect.ModeEnv, EnvName: "X", Keys: []string{"k"}, Verdict: inspect.VerdictRestartNeeded, Reason: "why"}
	for _, items := range [][]inspect.Use{nil, {it}, {it, it, it}} {
		var want, got bytes.Buffer
		if err := printDocument(&want, inspect.NewReport(items), "json"); err != nil {
			t.Fatal(err)
		}
		if err := streamReport(&got, inspect.NewReport(items)); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d items: streamed\n%s\nwant\n%s", len(items), got.String(), want.String())
		}
	}
}

// TestIndentJSON: indentJSON writes what json.Indent writes for compact
// JSON: nesting, empty objects and arrays, and brackets, commas, colons,
// quotes and backslashes inside strings.
func TestIndentJSON(t *testing.T) {
	docs := []any{
		map[string]any{},
		[]any{},
		"plain",
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{1, "x", nil, true, 2.5}},
		map[string]any{"tricky": `{"[,:]"} \" \\ \n <&> é`, "k\"ey": []any{map[string]any{"x": []any{[]any{}}}}},
		inspect.NewReport([]inspect.Use{{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"},
			Pod: inspect.PodRef{Name: "p"}, Mode: inspect.ModeItems, KeyPaths: []inspect.KeyPath{{Key: "k", Path: "p/q"}}, Keys: []string{"k"},
			Verdict: inspect.VerdictHotUpdate, Reason: `it "quotes" and \ slashes`}}),
	}
	for _, d := range docs {
		compact, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact, "        ", "    "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, compact, "        ", "    "); string(got) != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", compact, got, want.String())
		}
	}
}

// After a rollout the old pods terminate: their uses are n/a (nothing is
// checked in them) and the STATE column says why, "terminating"; the
// summary says they are not counted by --check, and --check ignores them.
func TestPrintTerminatingPods(t *testing.T) {
	use := func(pod, phase string, state inspect.State) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web-config", Exists: true},
			Pod: inspect.PodRef{Name: pod, Phase: phase}, Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular},
			Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, Mode: inspect.ModeVolume, Volume: &inspect.VolumeRef{Name: "c", MountPath: "/etc/web"},
			Verdict: inspect.VerdictHotUpdate, Reason: "mounted", State: state}
	}
	items := []inspect.Use{
		use("web-new", "Running", inspect.StateInSync),
		use("web-old", "Terminating", inspect.StateNA),
		use("job-done", "Running", inspect.StateNA), // n/a for another reason
	}
	var out bytes.Buffer
	if err := printReport(&out, items, printOptions{Verify: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(out.String(), "\n")
	if !strings.Contains(rows[2], "web-old") || !strings.Contains(rows[2], " terminating ") {
		t.Errorf("the terminating pod's row does not say terminating:\n%s", out.String())
	}
	if !strings.Contains(rows[3], " n/a ") {
		t.Errorf("an n/a use of a running pod is no longer n/a:\n%s", out.String())
	}
	wantSum := "3 uses by 3 pods: 3 hot-update; state: 1 in-sync, 1 n/a, 1 terminating (not counted by --check)"
	if !strings.Contains(out.String(), "\n"+wantSum+"\n") {
		t.Errorf("summary:\n%s\nwant the line %q", out.String(), wantSum)
	}
	if f := CheckFailures(items, true); len(f) != 0 {
		t.Errorf("--check counts terminating pods: %q", f)
	}
	out.Reset()
	if err := printReport(&out, items, printOptions{Verify: true, GroupBy: groupByWorkload}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1/3 pods   terminating") {
		t.Errorf("--group-by=workload does not say terminating:\n%s", out.String())
	}
}
