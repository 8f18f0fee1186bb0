package controller

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/alert"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestMetricsCountTheLoopsEvents(t *testing.T) {
	m := NewMetrics()
	cm := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app"}
	since := 1500 * time.Millisecond
	restart := &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}}
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &cm},
		{Kind: reconcile.EventAction, Action: restart},
		{Kind: reconcile.EventResult, Action: restart, Outcome: refresh.OutcomeCurrent, SinceChange: &since},
		{Kind: reconcile.EventDeferred, Action: restart, Hold: reconcile.HoldLimit},
		{Kind: reconcile.EventIgnored, Object: &cm},
		{Kind: reconcile.EventError, Message: "x"},
	} {
		m.Handle(e)
	}
	m.SetLeader(true)
	m.AlertResult("slack", alert.ResultSent)
	m.AlertResult("slack", alert.ResultSent)
	m.AlertResult("slack", alert.ResultDropped)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "namespaces", MetricsProvider: m.Queue()})
	q.Add("a")
	q.Add("b")
	ns, _ := q.Get()
	q.Done(ns)
	defer q.ShutDown()
	code, body := get(t, Handler(m, &Probes{}), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`cmsync_changes_total{kind="ConfigMap"} 1`,
		`cmsync_actions_total{action="restart"} 1`,
		`cmsync_results_total{action="restart",outcome="current"} 1`,
		`cmsync_deferred_total{hold="limit"} 1`,
		`cmsync_deferred_total{hold="window"} 0`,
		`cmsync_ignored_total 1`,
		`cmsync_errors_total 1`,
		`cmsync_change_to_verified_seconds_bucket{le="2"} 1`,
		`cmsync_change_to_verified_seconds_bucket{le="1"} 0`,
		`cmsync_leader 1`,
		`cmsync_queue_adds_total 2`,
		`cmsync_queue_depth 1`,
		`cmsync_round_duration_seconds_count 1`,
		`cmsync_queue_wait_seconds_count 1`,
		`cmsync_alerts_total{format="slack",result="sent"} 2`,
		`cmsync_alerts_total{format="slack",result="dropped"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestProbes(t *testing.T) {
	p := &Probes{}
	h := Handler(NewMetrics(), p)
	if code, _ := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("standby /readyz = %d, want 200", code)
	}
	p.leading.Store(true)
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("leader before sync /readyz = %d %q, want 503", code, body)
	}
	p.synced.Store(true)
	if code, _ := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("leader synced /readyz = %d, want 200", code)
	}
	p.Healthy = func(*http.Request) error { return io.ErrUnexpectedEOF }
	if code, _ := get(t, h, "/healthz"); code != http.StatusInternalServerError {
		t.Errorf("unhealthy /healthz = %d, want 500", code)
	}
}

func TestKubeEventsNameTheObjectActedOn(t *testing.T) {
	annotate := &refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "p"}}
	restart := &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "StatefulSet", Namespace: "ns", Name: "db"}}
	manual := &refresh.Action{Action: refresh.ActionManual, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}}
	none := &refresh.Action{Action: refresh.ActionNone, Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: "p"}}
	foreign := &refresh.Action{Action: refresh.ActionManual, Target: refresh.Target{Kind: "statefulset.apps.kruise.io", Namespace: "ns", Name: "x"}}
	cases := []struct {
		e    reconcile.Event
		want string
	}{
		{reconcile.Event{Kind: reconcile.EventAction, Action: annotate}, "v1/Pod ns/p Normal Refreshing"},
		{reconcile.Event{Kind: reconcile.EventResult, Action: annotate, Outcome: refresh.OutcomeCurrent}, "v1/Pod ns/p Normal Refreshed"},
		{reconcile.Event{Kind: reconcile.EventResult, Action: restart, Outcome: refresh.OutcomeTimeout}, "apps/v1/StatefulSet ns/db Warning RefreshFailed"},
		{reconcile.Event{Kind: reconcile.EventDeferred, Action: restart}, "apps/v1/StatefulSet ns/db Normal RestartDeferred"},
		{reconcile.Event{Kind: reconcile.EventError, Action: restart}, "apps/v1/StatefulSet ns/db Warning RefreshError"},
		{reconcile.Event{Kind: reconcile.EventAction, Action: manual}, "none"},
		{reconcile.Event{Kind: reconcile.EventResult, Action: none, Outcome: refresh.OutcomeCurrent}, "none"},
		{reconcile.Event{Kind: reconcile.EventResult, Action: none, Outcome: refresh.OutcomeNotApplied}, "none"},
		{reconcile.Event{Kind: reconcile.EventAction, Action: foreign}, "none"},
		{reconcile.Event{Kind: reconcile.EventChange}, "none"},
	}
	for _, tc := range cases {
		got := "none"
		if ref, typ, reason, ok := kubeEvent(tc.e); ok {
			got = ref.APIVersion + "/" + ref.Kind + " " + ref.Namespace + "/" + ref.Name + " " + typ + " " + reason
		}
		if got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.e.Kind, tc.e.Action, got, tc.want)
		}
	}
}

func TestDigestKeyIsCreatedOnceAndChecked(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	k1, err := DigestKey(ctx, c, "sys", "key", true)
	if err != nil || len(k1) != 32 {
		t.Fatalf("first: %d bytes, %v", len(k1), err)
	}
	k2, err := DigestKey(ctx, c, "sys", "key", true)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("second read another key (%v)", err)
	}
	short := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "short", Namespace: "sys"}, Data: map[string][]byte{KeyField: []byte("abc")}}
	if _, err := c.CoreV1().Secrets("sys").Create(ctx, short, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = DigestKey(ctx, c, "sys", "short", true)
	if want := `Secret sys/short: field "key" holds 3 bytes, want at least 16; delete the Secret and the controller creates a new key (every recorded consumer is then checked, and restarted only if stale)`; err == nil || err.Error() != want {
		t.Fatalf("short key: %v, want %s", err, want)
	}
}

// TestEventMessageIsCappedAtACharacter: the Event's message says what the
// loop event says, without its time, and at most 1,024 bytes of valid
// UTF-8 however long the message.
func TestEventMessageIsCappedAtACharacter(t *testing.T) {
	restart := &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}}
	e := reconcile.Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Kind: reconcile.EventError, Action: restart, Message: "x" + strings.Repeat("é", 600)}
	msg := eventMessage(e)
	if len(msg) > 1024 || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "é...") {
		t.Errorf("message of %d bytes (valid UTF-8: %v), ends %q; want at most 1024 bytes, whole characters, then ...", len(msg), utf8.ValidString(msg), msg[max(len(msg)-8, 0):])
	}
	if want := "restart deployment/web -n ns: xé"; !strings.HasPrefix(msg, want) {
		t.Errorf("message %.40q, want it to start %q (no time, no kind)", msg, want)
	}
}

// TestRestartWindowMetric: a restart deferred to its window is a gauge of
// when the window opens, by workload, gone once the restart is sent.
func TestRestartWindowMetric(t *testing.T) {
	m := NewMetrics()
	opens := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	now := opens.Add(-time.Hour)
	m.windowed.now = func() time.Time { return now }
	web := &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}}
	db := &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "StatefulSet", Namespace: "ns", Name: "db"}}
	for _, a := range []*refresh.Action{web, db} {
		m.Handle(reconcile.Event{Kind: reconcile.EventDeferred, Action: a, Until: &opens, Window: "Mon-Fri 02:00-05:00 Europe/Berlin"})
	}
	_, body := get(t, Handler(m, &Probes{}), "/metrics")
	for _, want := range []string{
		`cmsync_restart_window_deferred_until_seconds{namespace="ns",workload="deployment/web"} 1.7960004e+09`,
		`cmsync_restart_window_deferred_until_seconds{namespace="ns",workload="statefulset/db"} 1.7960004e+09`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	m.Handle(reconcile.Event{Kind: reconcile.EventAction, Action: web})
	_, body = get(t, Handler(m, &Probes{}), "/metrics")
	if strings.Contains(body, `workload="deployment/web"`) || !strings.Contains(body, `workload="statefulset/db"`) {
		t.Errorf("after web's restart was sent, /metrics has:\n%s", grepLines(body, "restart_window"))
	}
	// db's pods were replaced meanwhile: when its window opens nothing is
	// sent and no event ends the deferral, which is over all the same
	now = opens
	_, body = get(t, Handler(m, &Probes{}), "/metrics")
	if strings.Contains(body, "cmsync_restart_window_deferred_until_seconds{") {
		t.Errorf("once the window opened, /metrics still has:\n%s", grepLines(body, "restart_window"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The profiles are served only when asked for, and the metrics beside them.
func TestProfilesOnlyWhenEnabled(t *testing.T) {
	m := NewMetrics()
	if code, _ := get(t, Handler(m, &Probes{}), "/debug/pprof/heap"); code != http.StatusNotFound {
		t.Errorf("without --enable-pprof /debug/pprof/heap = %d, want 404", code)
	}
	h := WithProfiles(Handler(m, &Probes{}))
	if code, body := get(t, h, "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("with --enable-pprof /debug/pprof/heap = %d %.80q, want 200 and a heap profile", code, body)
	}
	if code, body := get(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines ") {
		t.Errorf("with --enable-pprof /metrics = %d, want 200 with the Go collector", code)
	}
}
