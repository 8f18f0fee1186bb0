package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

type sent struct {
	kind, name string
	pt         types.PatchType
	patch      string
	dryRun     bool
}

// recordingPatcher records patches and fails by name.
type recordingPatcher struct {
	mu    sync.Mutex
	sent  []sent
	fails map[string][]error // name -> errors to return, in order
}

func (p *recordingPatcher) Patch(_ context.Context, t Target, pt types.PatchType, patch []byte, dryRun bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, sent{t.Kind, t.Name, pt, string(patch), dryRun})
	if errs := p.fails[t.Name]; len(errs) > 0 {
		p.fails[t.Name] = errs[1:]
		return errs[0]
	}
	return nil
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC) }

func TestApply(t *testing.T) {
	Backoff.Duration = time.Millisecond
	actions := []Action{
		{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"}},
		{Action: ActionAnnotate, Target: Target{"Pod", "ns", "api-1"}},
		{Action: ActionAnnotate, Target: Target{"Pod", "ns", "api-2"}},
		{Action: ActionManual, Target: Target{"Pod", "ns", "solo"}},
		{Action: ActionNone, Target: Target{"Pod", "ns", "ok"}},
	}
	gr := schema.GroupResource{Resource: "pods"}
	p := &recordingPatcher{fails: map[string][]error{
		"api-1": {apierrors.NewTooManyRequests("slow down", 0)}, // retried, then succeeds
		"api-2": {apierrors.NewForbidden(gr, "api-2", errors.New("no"))},
	}}
	res := Apply(context.Background(), p, actions, DryRunNone, fixedNow)
	want := []Outcome{OutcomeApplied, OutcomeApplied, OutcomeFailed, OutcomeNotApplied, OutcomeNotApplied}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: outcome %s, want %s (%s)", r.Target, r.Outcome, want[i], r.Error)
		}
	}
	if len(p.sent) != 4 { // restart, api-1 twice, api-2 once (Forbidden is not retried)
		t.Fatalf("sent %d patches, want 4: %+v", len(p.sent), p.sent)
	}
	byName := map[string]sent{}
	for _, s := range p.sent { // patches go out concurrently: in no fixed order
		byName[s.name] = s
	}
	if r := byName["web"]; r.pt != types.StrategicMergePatchType || r.patch != `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-22T10:00:00Z"}}}}}` {
		t.Errorf("restart patch = %s %s", r.pt, r.patch)
	}
	if r := byName["api-1"]; r.pt != types.MergePatchType || r.patch != `{"metadata":{"annotations":{"kubectl-cmsync.io/refreshed-at":"2026-11-22T10:00:00.123456789Z"}}}` {
		t.Errorf("annotate patch = %s %s", r.pt, r.patch)
	}
}

func TestApplyDryRun(t *testing.T) {
	actions := []Action{{Action: ActionAnnotate, Target: Target{"Pod", "ns", "a"}}, {Action: ActionRestart, Target: Target{"Deployment", "ns", "d"}}}
	p := &recordingPatcher{}
	for _, r := range Apply(context.Background(), p, actions, DryRunClient, fixedNow) {
		if r.Outcome != OutcomeNotApplied {
			t.Errorf("client dry run: %s outcome %s", r.Target, r.Outcome)
		}
	}
	if len(p.sent) != 0 {
		t.Fatalf("client dry run sent %d patches", len(p.sent))
	}
	for _, r := range Apply(context.Background(), p, actions, DryRunServer, fixedNow) {
		if r.Outcome != OutcomeDryRun || r.AppliedAt != nil {
			t.Errorf("server dry run: %s outcome %s appliedAt %v, want dry-run and none", r.Target, r.Outcome, r.AppliedAt)
		}
	}
	if len(p.sent) != 2 || !p.sent[0].dryRun || !p.sent[1].dryRun {
		t.Fatalf("server dry run must send dryRun patches: %+v", p.sent)
	}
}

func TestAnnotatePatchTouchesOneKey(t *testing.T) {
	var m map[string]map[string]map[string]string
	if err := json.Unmarshal(AnnotatePatch(fixedNow()), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m["metadata"]) != 1 || len(m["metadata"]["annotations"]) != 1 {
		t.Fatalf("patch must set exactly one annotation: %v", m)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["metadata"]["annotations"][RefreshedAtAnnotation]); err != nil {
		t.Fatalf("annotation is not RFC 3339: %v", err)
	}
}

func TestRetriable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewTooManyRequests("x", 1), true},
		{apierrors.NewInternalError(errors.New("x")), true},
		{apierrors.NewServiceUnavailable("x"), true},
		{apierrors.NewTimeoutError("x", 1), true},
		{apierrors.NewForbidden(gr, "p", errors.New("x")), false},
		{apierrors.NewNotFound(gr, "p"), false},
		{apierrors.NewConflict(gr, "p", errors.New("x")), false},
		{nil, false},
	} {
		if got := Retriable(tt.err); got != tt.want {
			t.Errorf("Retriable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// A restart whose window closes while its patch is retried after a 429 is
// not sent again once it has closed, nor sent at all when the window closed
// before the first attempt: it fails for a cause that passes when the
// window opens again, and says so.
func TestARestartIsNotSentAfterItsWindowCloses(t *testing.T) {
	closes := fixedNow().Add(time.Second)
	for _, tc := range []struct {
		name      string
		notAfter  time.Time
		fails     []error
		wantSent  int
		wantAgain bool // the message says a retry was cut, with the last answer
	}{
		{"closed while retried", closes, []error{apierrors.NewTooManyRequests("slow down", 0)}, 1, true},
		{"closed while retried after a timeout", closes, []error{apierrors.NewTimeoutError("the request timed out", 0)}, 1, true},
		{"closed before the first attempt", fixedNow().Add(-time.Second), nil, 0, false},
		{"open until sent", fixedNow().Add(time.Hour), []error{apierrors.NewTooManyRequests("slow down", 0)}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := fixedNow()
			p := &recordingPatcher{fails: map[string][]error{"web": tc.fails}}
			a := Action{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"}, NotAfter: tc.notAfter}
			res := ApplyWith(context.Background(), p, []Action{a}, ApplyOptions{
				Now:     func() time.Time { return now },
				Sleep:   func(_ context.Context, d time.Duration) { now = now.Add(2 * time.Second) }, // the backoff outlasts the window
				Backoff: &wait.Backoff{Duration: time.Second, Factor: 2, Steps: 5},
				Serial:  true,
			})
			r := res[0]
			if len(p.sent) != tc.wantSent {
				t.Fatalf("%d patches sent, want %d (%s)", len(p.sent), tc.wantSent, r.Error)
			}
			if tc.wantSent == 2 {
				if r.Outcome != OutcomeApplied {
					t.Fatalf("outcome %s (%s), want applied", r.Outcome, r.Error)
				}
				return
			}
			if r.Outcome != OutcomeFailed || !r.Transient || r.AppliedAt != nil {
				t.Fatalf("outcome %s, transient %v, error %q: want a transient failure for the window", r.Outcome, r.Transient, r.Error)
			}
			if got := strings.Contains(r.Error, "sent again (the last attempt: "); got != tc.wantAgain {
				t.Errorf("error %q: says the retry was cut = %v, want %v", r.Error, got, tc.wantAgain)
			}
			if !strings.Contains(r.Error, "restart window of deployment/web closed at") || !strings.HasSuffix(r.Error, "it is sent when the window opens again") {
				t.Errorf("error %q does not say which window closed and what happens next", r.Error)
			}
			if ambiguous := strings.Contains(tc.name, "timeout"); strings.Contains(r.Error, "it may have been applied") != ambiguous {
				t.Errorf("error %q: says the last attempt may have been applied = %v, want %v", r.Error, !ambiguous, ambiguous)
			}
		})
	}
}
