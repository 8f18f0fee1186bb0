package refresh

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// podScript is a Verifier whose pods each go through their own states,
// one per read (the last repeats); it counts the reads and remembers the
// state each pod was last read in.
type podScript struct {
	mu     sync.Mutex
	states map[string][]inspect.State
	reads  map[string]int
	last   map[string]inspect.State
}

func newPodScript(states map[string][]inspect.State) *podScript {
	return &podScript{states: states, reads: map[string]int{}, last: map[string]inspect.State{}}
}

func (s *podScript) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, errors.New("no polls expected")
}

func (s *podScript) VerifyPod(_ context.Context, _, pod string, _ []inspect.ObjectKey) ([]inspect.Use, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.states[pod]
	st := seq[min(s.reads[pod], len(seq)-1)]
	s.reads[pod]++
	s.last[pod] = st
	it := use(pod, "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, st)
	if st == inspect.StateUnverifiable {
		it.StateCause, it.StateReason = inspect.CauseNoShell, "no shell in the image"
	}
	return []inspect.Use{it}, nil
}

// recordingHooks is a HookSender that records, per pod, each request and
// the state the pod was last read in when it was sent.
type recordingHooks struct {
	mu     sync.Mutex
	script *podScript
	sent   map[string][]inspect.State
	status int
}

func (h *recordingHooks) Via() string { return HookViaDirect }

func (h *recordingHooks) Send(_ context.Context, _, pod string, _ *Hook) (HookResponse, error) {
	h.script.mu.Lock()
	st := h.script.last[pod]
	h.script.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent[pod] = append(h.sent[pod], st)
	return HookResponse{Status: h.status, Body: []byte("config reloaded\n")}, nil
}

func hookedAnnotation(pod string) Action {
	return Action{Action: ActionAnnotate, Target: Target{"Pod", "ns", pod}, Hook: &Hook{Request: "POST :9090/-/reload", Method: "POST", Port: 9090, Path: "/-/reload"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: pod, Container: "c", Mode: inspect.ModeVolume}}}
}

// TestHookFollowsTheVerifiedRemount: each pod's hook is sent once, after
// the read that found it in-sync; never for a pod that timed out or
// cannot be verified, and each of those says why.
func TestHookFollowsTheVerifiedRemount(t *testing.T) {
	script := newPodScript(map[string][]inspect.State{
		"fast-1":   {inspect.StateInSync},
		"slow-1":   {inspect.StatePending, inspect.StatePending, inspect.StateInSync},
		"stuck-1":  {inspect.StatePending},
		"noshell1": {inspect.StateUnverifiable},
	})
	hooks := &recordingHooks{script: script, sent: map[string][]inspect.State{}, status: 200}
	clock := &fakeClock{t: time.Unix(1000, 0), step: 100 * time.Millisecond}
	var results []Result
	for _, p := range []string{"fast-1", "slow-1", "stuck-1", "noshell1"} {
		results = append(results, applied(hookedAnnotation(p), clock.t))
	}
	got := finishHooks(Wait(context.Background(), results, script, &rolloutAfter{}, WaitOptions{Timeout: 3 * time.Second, Interval: time.Millisecond,
		PodDelay: -1, FirstDelay: -1, Now: clock.now, Hooks: hooks}))
	for _, p := range []string{"fast-1", "slow-1"} {
		if s := hooks.sent[p]; len(s) != 1 || s[0] != inspect.StateInSync {
			t.Errorf("%s: hook sent %d times, in states %v; want once, after it was read in-sync", p, len(s), s)
		}
	}
	for _, p := range []string{"stuck-1", "noshell1"} {
		if s := hooks.sent[p]; len(s) != 0 {
			t.Errorf("%s: hook sent %d times, want never", p, len(s))
		}
	}
	want := map[string]string{
		"fast-1":   "reload hook POST :9090/-/reload: ok (HTTP 200, via direct)",
		"slow-1":   "reload hook POST :9090/-/reload: ok (HTTP 200, via direct)",
		"stuck-1":  "reload hook POST :9090/-/reload: not-sent: not sent: the remount was not verified current before the timeout",
		"noshell1": `reload hook POST :9090/-/reload: not-sent: not sent: the remount cannot be verified (annotated, but cannot be verified: pod noshell1 container c volume of configmap "cm": unverifiable (no shell in the image)), and a hook follows only a verified remount`,
	}
	for _, r := range got {
		if s := r.Hook.String(); s != want[r.Target.Name] {
			t.Errorf("%s (%s): %s\nwant %s", r.Target.Name, r.Outcome, s, want[r.Target.Name])
		}
	}
}

// TestHookWithoutWait: a real run without --wait still waits for the pods
// with a reload hook (the hook must follow the remount), and for no
// other pod.
func TestHookWithoutWait(t *testing.T) {
	script := newPodScript(map[string][]inspect.State{"hooked-1": {inspect.StatePending, inspect.StateInSync}, "plain-1": {inspect.StateInSync}})
	hooks := &recordingHooks{script: script, sent: map[string][]inspect.State{}, status: 200}
	plain := hookedAnnotation("plain-1")
	plain.Hook = nil
	r := &Refresher{Config: Config{Wait: false, Timeout: time.Minute}, Cluster: Cluster{Verifier: script, Hooks: hooks, Patcher: &recordingPatcher{}}}
	got := r.Apply(context.Background(), &Plan{Actions: []Action{hookedAnnotation("hooked-1"), plain}}, nil)
	if len(hooks.sent["hooked-1"]) != 1 || script.reads["hooked-1"] != 2 {
		t.Errorf("hooked pod: %d hooks after %d reads, want 1 after 2", len(hooks.sent["hooked-1"]), script.reads["hooked-1"])
	}
	if script.reads["plain-1"] != 0 || got[1].Outcome != OutcomeApplied || got[1].Hook != nil {
		t.Errorf("a pod without a hook is not waited for without --wait: %d reads, %s, %v", script.reads["plain-1"], got[1].Outcome, got[1].Hook)
	}
	if got[0].Outcome != OutcomeCurrent || got[0].Hook == nil || got[0].Hook.Outcome != HookOK {
		t.Errorf("hooked pod: %s, %s", got[0].Outcome, got[0].Hook)
	}
}

// TestHookNotSent: a dry run, a failed patch and an invalid value say why
// no hook was sent.
func TestHookNotSent(t *testing.T) {
	invalid := hookedAnnotation("bad-1")
	invalid.Hook = &Hook{Request: "PATCH :9090", Error: `kubectl-cmsync.io/reload-hook "PATCH :9090": method "PATCH" is not one of GET, POST, PUT (in capitals); write ...`}
	got := finishHooks([]Result{
		{Action: hookedAnnotation("dry-1"), Outcome: OutcomeDryRun},
		{Action: hookedAnnotation("failed-1"), Outcome: OutcomeFailed, Error: "forbidden"},
		{Action: invalid, Outcome: OutcomeCurrent},
	})
	for i, want := range []string{
		"reload hook POST :9090/-/reload: not-sent: not sent: nothing was remounted (dry run)",
		"reload hook POST :9090/-/reload: not-sent: not sent: the annotation failed, so nothing was remounted",
		`reload hook PATCH :9090: invalid: kubectl-cmsync.io/reload-hook "PATCH :9090": method "PATCH" is not one of GET, POST, PUT (in capitals); write ...; the pod was remounted all the same`,
	} {
		if s := got[i].Hook.String(); s != want {
			t.Errorf("%s: %s\nwant %s", got[i].Target.Name, s, want)
		}
	}
}

func TestJudgeHook(t *testing.T) {
	h := &Hook{Request: "POST :9090/-/reload", Method: "POST", Port: 9090, Path: "/-/reload"}
	for _, tc := range []struct {
		resp HookResponse
		err  error
		want string
	}{
		{HookResponse{Status: 204}, nil, "reload hook POST :9090/-/reload: ok (HTTP 204, via proxy)"},
		{HookResponse{Status: 500, Body: []byte("  error loading config:\n\x1b[31mbad yaml\x1b[0m at line 3  ")}, nil,
			`reload hook POST :9090/-/reload: failed (via proxy): HTTP 500: error loading config:\n\x1b[31mbad yaml\x1b[0m at line 3`},
		{HookResponse{Status: 404, Body: []byte(strings.Repeat("x", 300))}, nil, "reload hook POST :9090/-/reload: failed (via proxy): HTTP 404: " + strings.Repeat("x", 120) + "..."},
		{HookResponse{Status: 301}, nil, "reload hook POST :9090/-/reload: failed (via proxy): HTTP 301"},
		{HookResponse{}, errors.New("dial tcp 10.244.0.9:9090: connect: connection refused"), "reload hook POST :9090/-/reload: failed (via proxy): no answer: dial tcp 10.244.0.9:9090: connect: connection refused"},
	} {
		if got := judgeHook(h, HookViaProxy, tc.resp, tc.err).String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
