package shadow

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"app-config":    "APP_CONFIG",
		"my.app.config": "MY_APP_CONFIG",
		"db--creds..v2": "DB_CREDS_V2",
		"-lead":         "LEAD",
		"trail-":        "TRAIL_",
		"ümlaut-x":      "MLAUT_X",
		"UPPER9_under":  "UPPER9_UNDER",
	} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EnvVar("Secret", "db.creds"); got != "STAKATER_DB_CREDS_SECRET" {
		t.Errorf("EnvVar secret = %q", got)
	}
	if got := EnvVar("ConfigMap", "app-config"); got != "STAKATER_APP_CONFIG_CONFIGMAP" {
		t.Errorf("EnvVar configmap = %q", got)
	}
}

func template(env map[string]string, ann map[string]string) *corev1.PodTemplateSpec {
	c := corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "PLAIN", Value: "x"}}}
	for k, v := range env {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v})
	}
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func TestMarkersEnvVars(t *testing.T) {
	old := template(map[string]string{"STAKATER_MY_APP_CONFIG_CONFIGMAP": "aaa"}, nil)
	cur := template(map[string]string{"STAKATER_MY_APP_CONFIG_CONFIGMAP": "bbb", "STAKATER_DB_CREDS_SECRET": "ccc"}, nil)
	ms := Markers(old, cur)
	if len(ms) != 2 {
		t.Fatalf("markers = %+v, want 2 (one changed, one added)", ms)
	}
	var cm, sec *Marker
	for i := range ms {
		switch ms[i].Kind {
		case "ConfigMap":
			cm = &ms[i]
		case "Secret":
			sec = &ms[i]
		}
	}
	if cm == nil || !cm.For("ConfigMap", "my.app-config") || cm.Hash != "bbb" || cm.Strategy != StrategyEnvVars {
		t.Errorf("configmap marker = %+v", cm)
	}
	if cm.For("Secret", "my.app-config") || cm.For("ConfigMap", "other") {
		t.Errorf("configmap marker matches the wrong object: %+v", cm)
	}
	if sec == nil || !sec.For("Secret", "db-creds") {
		t.Errorf("secret marker = %+v", sec)
	}
	if ms := Markers(cur, cur); len(ms) != 0 {
		t.Errorf("unchanged template: markers %+v", ms)
	}
}

func TestMarkersAnnotations(t *testing.T) {
	v := `{"type":"CONFIGMAP","name":"app.cfg","namespace":"ns","hash":"h1","containerRefs":["app"],"observedAt":1700000000}`
	old := template(nil, map[string]string{RestartedAt: "2024-01-01T00:00:00Z"})
	cur := template(nil, map[string]string{LastReloadedFrom: v, RestartedAt: "2024-01-01T00:00:00Z"})
	ms := Markers(old, cur)
	if len(ms) != 1 || ms[0].Strategy != StrategyAnnotations || !ms[0].For("ConfigMap", "app.cfg") || ms[0].Hash != "h1" {
		t.Fatalf("markers = %+v, want one annotations marker for configmap/app.cfg", ms)
	}
	cur2 := template(nil, map[string]string{LastReloadedFrom: v, RestartedAt: "2024-02-01T00:00:00Z"})
	ms = Markers(cur, cur2)
	if len(ms) != 1 || ms[0].Strategy != StrategyRestartedAt || ms[0].Known() {
		t.Fatalf("markers = %+v, want one restart by an unknown hand", ms)
	}
}

func TestHashes(t *testing.T) {
	// sha1("a=1;b=2") and sha1("a=1;bin=AAE="), as Reloader computes them
	if got := ConfigMapHash(map[string]string{"b": "2", "a": "1"}, nil); got != "f83e99e324ba68ccc373a58ef1eb42f8ab88646a" {
		t.Errorf("hash = %q", got)
	}
	if got := ConfigMapHash(map[string]string{"a": "1"}, map[string][]byte{"bin": {0, 1}}); got != "dff17f8474e1da88dbd35889dd4121836b46941b" {
		t.Errorf("hash with binary data = %q", got)
	}
	if ConfigMapHash(map[string]string{"a": "1", "b": "2"}, nil) != SecretHash(map[string][]byte{"a": []byte("1"), "b": []byte("2")}) {
		t.Error("a ConfigMap and a Secret of the same data hash differently")
	}
	if ConfigMapHash(map[string]string{"a": "1"}, nil) == ConfigMapHash(map[string]string{"a": "2"}, nil) {
		t.Error("different data, same hash")
	}
}

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func w(name string) Workload { return Workload{Kind: "Deployment", Namespace: "ns", Name: name} }

func marker(name string, at time.Duration, obj string, pods int) Marker {
	m := Marker{At: t0.Add(at), Workload: w(name), Strategy: StrategyAnnotations, Pods: pods}
	if obj != "" {
		m.Kind, m.Name = "ConfigMap", obj
	} else {
		m.Strategy = StrategyRestartedAt
	}
	return m
}

func decision(unread bool, wds ...WorkloadDecision) Decision {
	return Decision{Object: Object{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, Keys: []string{"k"}, At: t0, Unread: unread, Workloads: wds}
}

func TestPairClassifies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       Decision
		markers []Marker
		want    Class
		spared  int
	}{
		{"spared", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRemount, Pods: 2}), []Marker{marker("a", 3*time.Second, "cfg", 2)}, ClassSpared, 2},
		{"agree, both restart", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart, Pods: 2}), []Marker{marker("a", time.Second, "cfg", 2)}, ClassAgree, 0},
		{"agree, neither", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRemount, Pods: 1}), nil, ClassAgree, 0},
		{"peer missed", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart, Pods: 2}), nil, ClassPeerMissed, 0},
		{"peer missed a held restart", decision(false, WorkloadDecision{Workload: w("a"), Action: ActDeferred, Pods: 2}), nil, ClassPeerMissed, 0},
		{"unread key", decision(true), []Marker{marker("a", time.Second, "cfg", 3)}, ClassUnreadKey, 3},
		{"outside window", decision(false, WorkloadDecision{Workload: w("a"), Action: ActWindow}), []Marker{marker("a", time.Second, "cfg", 1)}, ClassOutsideWindow, 0},
		{"paced", decision(false, WorkloadDecision{Workload: w("a"), Action: ActPaced}), []Marker{marker("a", time.Second, "cfg", 1)}, ClassOverPace, 0},
		{"twice", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart}), []Marker{marker("a", time.Second, "cfg", 1), marker("a", 40*time.Second, "cfg", 1)}, ClassOverPace, 0},
		{"excluded", decision(false, WorkloadDecision{Workload: w("a"), Action: ActSkip}), []Marker{marker("a", time.Second, "cfg", 1)}, ClassDiffer, 0},
		{"unknown hand on a decided workload", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRemount, Pods: 1}), []Marker{marker("a", time.Second, "", 1)}, ClassSpared, 1},
		{"unknown hand elsewhere ignored", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRemount, Pods: 1}), []Marker{marker("b", time.Second, "", 1)}, ClassAgree, 0},
		{"other object ignored", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart}), []Marker{marker("a", time.Second, "other", 1)}, ClassPeerMissed, 0},
		{"after the window", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart}), []Marker{marker("a", 3*time.Minute, "cfg", 1)}, ClassPeerMissed, 0},
		{"well before the change", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart}), []Marker{marker("a", -time.Minute, "cfg", 1)}, ClassPeerMissed, 0},
		{"the worst workload wins", decision(false, WorkloadDecision{Workload: w("a"), Action: ActRemount, Pods: 1}, WorkloadDecision{Workload: w("b"), Action: ActRestart}),
			[]Marker{marker("a", time.Second, "cfg", 1)}, ClassPeerMissed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Pair(tc.d, tc.markers, 2*time.Minute, time.Time{})
			if r.Class != tc.want || r.Spared != tc.spared {
				t.Errorf("class %s spared %d, want %s and %d: %+v", r.Class, r.Spared, tc.want, tc.spared, r)
			}
		})
	}
}

func TestPairStopsAtNextChange(t *testing.T) {
	d := decision(false, WorkloadDecision{Workload: w("a"), Action: ActRestart})
	r := Pair(d, []Marker{marker("a", 50*time.Second, "cfg", 1)}, 2*time.Minute, t0.Add(30*time.Second))
	if r.Class != ClassPeerMissed {
		t.Errorf("a marker after the next change was paired with this one: %+v", r)
	}
}

func TestEnvMarkerPairsByMangledName(t *testing.T) {
	d := Decision{Object: Object{Kind: "ConfigMap", Namespace: "ns", Name: "app.cfg-v2"}, At: t0, Workloads: []WorkloadDecision{{Workload: w("a"), Action: ActRemount, Pods: 2}}}
	m := Marker{At: t0.Add(time.Second), Workload: w("a"), Strategy: StrategyEnvVars, Kind: "ConfigMap", EnvObject: "APP_CFG_V2", Pods: 2}
	if r := Pair(d, []Marker{m}, time.Minute, time.Time{}); r.Class != ClassSpared || r.PeerPods != 2 || r.CmsyncPods != 0 {
		t.Errorf("row = %+v, want spared with 2 peer pods", r)
	}
}

type owners map[string]Workload

func (o owners) Owner(ns, pod string) Workload { return o[pod] }

func TestCollectorFromEvents(t *testing.T) {
	cfg := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	unread := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "unread"}
	ref := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	first := t0
	var c Collector
	own := owners{"a-1": w("a"), "a-2": w("a")}
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &cfg, Keys: []string{"k"}, FirstEdit: &first, Time: t0.Add(2 * time.Second)},
		{Kind: reconcile.EventChange, Object: &unread, Time: t0.Add(2 * time.Second)},
		{Kind: reconcile.EventIgnored, Object: &unread, Message: unreadMessage},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "a-1"}, Pods: []string{"a-1"}, Consumers: []refresh.Consumer{{Object: ref, Pod: "a-1"}}}},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "a-2"}, Pods: []string{"a-2"}, Consumers: []refresh.Consumer{{Object: ref, Pod: "a-2"}}}},
		{Kind: reconcile.EventDeferred, Window: "Mon-Fri 02:00-04:00 UTC", Action: &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "b"}, Pods: []string{"b-1"}, Consumers: []refresh.Consumer{{Object: ref}}}},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "b"}, Consumers: []refresh.Consumer{{Object: ref}}}},
	} {
		c.Handle(e, own, nil)
	}
	if rows := c.Due(t0.Add(time.Minute), 2*time.Minute, nil); len(rows) != 0 {
		t.Fatalf("rows before the window passed: %+v", rows)
	}
	rows := c.Due(t0.Add(3*time.Minute), 2*time.Minute, []Marker{marker("a", time.Second, "cfg", 2), {At: t0.Add(3 * time.Second), Workload: w("x"), Strategy: StrategyEnvVars, Kind: "ConfigMap", EnvObject: "UNREAD", Pods: 4}})
	if len(rows) != 2 || len(c.Open) != 0 {
		t.Fatalf("rows = %+v, open %d", rows, len(c.Open))
	}
	r := rows[0]
	if r.Object.Name != "cfg" || !r.Time.Equal(t0) || len(r.Workloads) != 2 {
		t.Fatalf("row = %+v", r)
	}
	if a := r.Workloads[0]; a.Cmsync != ActRemount || a.Remounted != 2 || a.Class != ClassSpared || a.PeerPods != 2 {
		t.Errorf("workload a = %+v, want 2 pods remounted, spared", a)
	}
	if b := r.Workloads[1]; b.Cmsync != ActWindow || b.Class != ClassAgree {
		t.Errorf("workload b = %+v, want the window's deferral kept", b)
	}
	if u := rows[1]; u.Class != ClassUnreadKey || u.Spared != 4 || u.Ignored != unreadMessage {
		t.Errorf("unread row = %+v", u)
	}
}

// A peer that restarts at once beats cmsync's debounce: when its round
// comes, the env consumer's new pod is already current and a volume
// consumer's new pods in-sync. That is what cmsync would have restarted
// (agree) or remounted (spared), not a change nobody reads; a workload no
// peer restarted but already current is nothing for either.
func TestCollectorPeerCameFirst(t *testing.T) {
	env := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "env-cfg"}
	vol := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "vol-cfg"}
	envRef := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "env-cfg"}
	volRef := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "vol-cfg"}
	first := t0
	own := owners{"env-new": w("env"), "env-old": w("env"), "vol-new": w("vol"), "quiet-1": w("quiet")}
	none := func(pod, reason string, ref inspect.ObjectRef, mode inspect.Mode) reconcile.Event {
		return reconcile.Event{Kind: reconcile.EventResult, Action: &refresh.Action{Action: refresh.ActionNone, Reason: reason,
			Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: pod}, Consumers: []refresh.Consumer{{Object: ref, Pod: pod, Mode: mode}}}}
	}
	var c Collector
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &env, Keys: []string{"K"}, FirstEdit: &first, Time: t0.Add(time.Second)},
		{Kind: reconcile.EventChange, Object: &vol, Keys: []string{"K"}, FirstEdit: &first, Time: t0.Add(time.Second)},
		none("env-old", "already n/a", envRef, inspect.ModeEnv),
		none("env-new", "already current", envRef, inspect.ModeEnv),
		none("quiet-1", "already current", envRef, inspect.ModeEnv),
		none("vol-new", "already in-sync", volRef, inspect.ModeVolume),
	} {
		c.Handle(e, own, sizes{w("env"): 2})
	}
	peer := func(name, obj string) Marker {
		return Marker{At: t0.Add(500 * time.Millisecond), Workload: w(name), Strategy: StrategyEnvVars, Kind: "ConfigMap", EnvObject: strings.ToUpper(obj), Name: obj, Pods: 1}
	}
	rows := c.Due(t0.Add(3*time.Minute), 2*time.Minute, []Marker{peer("env", "env-cfg"), peer("vol", "vol-cfg")})
	if len(rows) != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	byName := map[string]WorkloadRow{}
	for _, r := range rows {
		for _, wr := range r.Workloads {
			byName[wr.Workload.Name] = wr
		}
	}
	if e := byName["env"]; e.Cmsync != ActRestart || e.Class != ClassAgree || e.CmsyncPods != 2 {
		t.Errorf("env = %+v, want a restart of its 2 pods cmsync would have made, agree", e)
	}
	if q := byName["quiet"]; q.Cmsync != ActNone || q.Class != ClassAgree || q.CmsyncPods != 0 {
		t.Errorf("quiet = %+v, want nothing (current, no peer restarted it)", q)
	}
	if v := byName["vol"]; v.Cmsync != ActRemount || v.Class != ClassSpared || v.Remounted != 1 {
		t.Errorf("vol = %+v, want a remount, spared", v)
	}
	if rows[0].Class == ClassUnreadKey || rows[1].Class == ClassUnreadKey {
		t.Errorf("a read key classed unread: %+v", rows)
	}
}

func TestCap(t *testing.T) {
	rec, dropped := Cap("", []string{"aaaa", "bbbb"}, 100)
	if rec != "aaaa\nbbbb\n" || dropped != 0 {
		t.Fatalf("record %q dropped %d", rec, dropped)
	}
	rec, dropped = Cap(rec, []string{"cccc"}, 11) // 3 lines of 5 bytes: the oldest goes
	if rec != "bbbb\ncccc\n" || dropped != 1 {
		t.Fatalf("record %q dropped %d, want the oldest dropped", rec, dropped)
	}
	rec, dropped = Cap(rec, []string{strings.Repeat("x", 20)}, 11)
	if rec != "bbbb\ncccc\n" && rec != "" || dropped == 0 {
		t.Fatalf("record %q dropped %d", rec, dropped)
	}
	if len(rec) > 11 {
		t.Errorf("record of %d bytes over its cap of 11", len(rec))
	}
}

func sampleRows() []Row {
	spared := Pair(decision(false, WorkloadDecision{Workload: w("vol"), Action: ActRemount, Pods: 2}), []Marker{marker("vol", time.Second, "cfg", 2)}, time.Minute, time.Time{})
	missed := Pair(decision(false, WorkloadDecision{Workload: w("env"), Action: ActRestart, Pods: 3}), nil, time.Minute, time.Time{})
	missed.Time = t0.Add(time.Hour)
	other := spared
	other.Object.Namespace, other.Time = "other", t0.Add(2*time.Hour)
	return []Row{missed, spared, other}
}

func TestReportTableAndJSON(t *testing.T) {
	r := NewReport(sampleRows(), "ns", time.Time{}, 3)
	if len(r.Items) != 2 || !r.Items[0].Time.Equal(t0) {
		t.Fatalf("items = %+v, want the 2 rows of ns, oldest first", r.Items)
	}
	s := r.Summary
	if s.Changes != 2 || s.PeerRestarts != 1 || s.CmsyncRestarts != 1 || s.PeerPods != 2 || s.CmsyncPods != 3 || s.PodsSpared != 2 || s.PeerMissed != 1 || s.Disagreements != 2 || s.Dropped != 3 {
		t.Errorf("summary = %+v", s)
	}
	var b bytes.Buffer
	if err := r.PrintTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Changes seen: 2.", "Pods spared: 2.", "Changes the peer missed: 1.", "oldest 3 rows were dropped",
		"  peer                 2 " + strings.Repeat("█", 20) + "\n", "  cmsync               3 " + strings.Repeat("█", 30) + "\n",
		"  spared               1 " + strings.Repeat("█", 30) + "\n", "  peer-missed          1 " + strings.Repeat("█", 30) + "\n",
		"CLASS", "configmap/cfg", "restarted deployment/vol (annotations)", "remount 2 pods of deployment/vol", "restart deployment/env", "peer-missed", "spared"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "other") {
		t.Errorf("a row of another namespace is shown:\n%s", out)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || back.Kind != "ShadowReport" || !reflect.DeepEqual(back.Summary, s) || len(back.Items) != 2 || back.Items[0].Class != ClassSpared {
		t.Errorf("JSON round trip = %+v (%v)", back, err)
	}
	if all := NewReport(sampleRows(), "", t0.Add(90*time.Minute), 0); len(all.Items) != 1 || all.Items[0].Object.Namespace != "other" {
		t.Errorf("--since: items %+v", all.Items)
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct{ n, max, cells int }{{0, 10, 0}, {1, 1000, 1}, {5, 10, 15}, {10, 10, 30}, {3, 0, 0}} {
		if got := len([]rune(bar(tc.n, tc.max))); got != tc.cells {
			t.Errorf("bar(%d, %d): %d cells, want %d", tc.n, tc.max, got, tc.cells)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	lines, err := Lines(sampleRows())
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := Cap("", append(lines, "not json"), 1<<20)
	rows, bad := ParseRecord(rec)
	if len(rows) != 3 || bad != 1 || rows[0].Class != ClassPeerMissed {
		t.Errorf("rows %+v, unreadable %d", rows, bad)
	}
}

// TestRemountPolicyBesideTheRunningOne: a Reloader opt-in restarted only by
// the on-change policy agrees with a peer's restart, and the remount policy
// would spare its pods; the report says both, and names the workload the
// remount policy would leave stale unless it re-reads its files.
func TestRemountPolicyBesideTheRunningOne(t *testing.T) {
	cfg := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	ref := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	first := t0
	var c Collector
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &cfg, Keys: []string{"k"}, FirstEdit: &first, Time: t0.Add(2 * time.Second)},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionRestart, Reason: reconcile.PolicyRestartReason + "opted in through reloader.stakater.com/auto",
			Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "vol"}, Pods: []string{"vol-1", "vol-2"},
			Consumers: []refresh.Consumer{{Object: ref, Pod: "vol-1", Mode: inspect.ModeVolume}, {Object: ref, Pod: "vol-2", Mode: inspect.ModeVolume}}}},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionRestart, Reason: "stale env",
			Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "env"}, Pods: []string{"env-1"},
			Consumers: []refresh.Consumer{{Object: ref, Pod: "env-1", Mode: inspect.ModeEnv}}}},
	} {
		c.Handle(e, nil, nil)
	}
	rows := c.Due(t0.Add(3*time.Minute), 2*time.Minute, []Marker{marker("vol", time.Second, "cfg", 2), marker("env", time.Second, "cfg", 1)})
	if len(rows) != 1 || len(rows[0].Workloads) != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	vol, env := r.Workloads[0], r.Workloads[1]
	if vol.Cmsync != ActRestart || vol.Class != ClassAgree || vol.RemountPolicy != ActRemount || vol.RemountClass != ClassSpared || vol.SparedByRemount != 2 {
		t.Errorf("vol = %+v, want a restart that agrees, spared (2 pods) by the remount policy", vol)
	}
	if env.RemountPolicy != "" || env.SparedByRemount != 0 || env.Class != ClassAgree {
		t.Errorf("env = %+v, want a restart under either policy", env)
	}
	if r.Spared != 0 || r.SparedByRemount != 2 || r.Class != ClassAgree {
		t.Errorf("row: spared %d, by remount %d, class %s; want 0, 2, agree", r.Spared, r.SparedByRemount, r.Class)
	}
	rep := NewReport(rows, "", time.Time{}, 0)
	if s := rep.Summary; s.PodsSpared != 0 || s.PodsSparedByRemount != 2 || !reflect.DeepEqual(s.RemountLeavesStale, []string{"ns/deployment/vol"}) {
		t.Errorf("summary = %+v", s)
	}
	var b bytes.Buffer
	if err := rep.PrintTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Pods spared: 0.", "With on-change: remount (--reloader-on-change=remount for Reloader's opt-ins): pods spared: 2.",
		"It would remount, not restart: ns/deployment/vol. Each stays stale unless its application re-reads its files.", "restart deployment/vol (remount with on-change: remount)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
