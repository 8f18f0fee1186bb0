package refresh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// DryRun is --dry-run.
type DryRun string

const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// Patcher is the I/O edge of apply: one patch of one object.
type Patcher interface {
	// Patch sends patch to the object t names (a Pod, Deployment,
	// StatefulSet or DaemonSet). dryRun asks the server not to persist it.
	Patch(ctx context.Context, t Target, pt types.PatchType, patch []byte, dryRun bool) error
}

// AnnotatePatch is the merge patch that bumps the refresh annotation and
// touches nothing else.
func AnnotatePatch(now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		RefreshedAtAnnotation: now.UTC().Format(time.RFC3339Nano)}}})
	return b
}

// RestartPatch is the strategic merge patch `kubectl rollout restart` sends.
func RestartPatch(now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartedAtAnnotation: now.Format(time.RFC3339)}}}}})
	return b
}

// RestartAtPatch is the merge patch that restarts an Argo Rollout's pods:
// its controller evicts every pod created before spec.restartAt, then
// sets status.restartedAt to it. The time is in whole seconds (RFC3339),
// so a pod created within the second of the patch counts as restarted.
func RestartAtPatch(now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"restartAt": now.UTC().Format(time.RFC3339)}})
	return b
}

// Outcome of one action.
type Outcome string

const (
	OutcomeApplied    Outcome = "applied"     // patched
	OutcomeDryRun     Outcome = "dry-run"     // the server accepted the patch with dryRun=All: nothing changed
	OutcomeFailed     Outcome = "failed"      // the patch failed
	OutcomeNotApplied Outcome = "not-applied" // nothing was sent (manual, none, stopped)
	OutcomeCurrent    Outcome = "current"     // verified current after the action
	OutcomeTimeout    Outcome = "timeout"     // --wait ran out before it was current
	// OutcomeUnverifiable: applied, but the consumer cannot be observed
	// (no shell in the image, exec forbidden), so it is not proven current.
	OutcomeUnverifiable Outcome = "unverifiable"
)

// Result is what happened to one action.
type Result struct {
	Action
	Outcome Outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"`
	// AppliedAt is when the patch was accepted, after any retries (a
	// restart's restartedAt says when its first attempt was made).
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`
	// CurrentAfter is the time from the patch until every consumer of the
	// action was verified current.
	CurrentAfter *metav1.Duration `json:"currentAfter,omitempty"`
	// Detail says what the wait saw last (e.g. which consumer is not current).
	Detail string `json:"detail,omitempty"`
	// Evicted and NotEvicted are the pods of an evict action that were
	// (and were not) evicted, in order; Replacements the new pods that
	// became Ready in their place.
	Evicted      []string `json:"evicted,omitempty"`
	NotEvicted   []string `json:"notEvicted,omitempty"`
	Replacements []string `json:"replacements,omitempty"`
	// Hook is what became of the pod's reload hook (an annotate action
	// whose pod has one).
	Hook *HookResult `json:"reloadHook,omitempty"`
	// Transient: the action failed for a reason that may pass (Transient),
	// or, an evict action, was not started after another one failed, so a
	// caller that runs again (the continuous refresh) may retry it.
	Transient bool `json:"-"`
	// Pending: applied and not verified yet when the wait handed it over
	// (Config.HandOver): Outcome is still applied, and Recheck verifies it
	// until deadline, Timeout after its Apply started.
	Pending  bool `json:"-"`
	deadline time.Time
	// replacementUIDs are the UIDs of Replacements: the pods the wait
	// verifies for an evict action.
	replacementUIDs map[string]bool
	// unverifiable is the use Detail describes when the wait's last read
	// left it unverifiable (GroupWarnings), nil otherwise.
	unverifiable *inspect.Use
	// probe is the pod of a restart or an eviction that the last poll
	// could not read for a cause that may pass (an exec that timed out or
	// failed, a container not running): the polls read only it until it
	// is read, then every pod again. Pods that cannot be read cost one
	// exec a poll, not one each.
	probe string
}

// Backoff for retried patches: 429, 5xx and timeouts.
var Backoff = wait.Backoff{Steps: 5, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}

// Transient reports whether a failed call may pass by itself, so that a
// caller that runs again later (the continuous refresh) tries it again
// with a backoff. Every failure is taken to be transient but those known
// to be permanent (Permanent) and the caller's own cancellation: a
// connection refused, reset, cut mid-write (broken pipe) or found dead by
// HTTP/2's health check, a timeout, 429 and 5xx may all pass, and a
// failure nobody classified is tried again rather than dropped.
func Transient(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && !Permanent(err)
}

// Permanent reports whether a failure stays until something changes: the
// API server's answer that the request cannot succeed as sent (a 4xx
// status other than 408 Request Timeout, 409 Conflict and 429 Too Many
// Requests: forbidden, not found, invalid, unauthorized, ...), or a
// refusal of cmsync's own (an error with a Permanent method, such as
// TooManyRestartsError, PermissionError and BeyondSelectorError).
func Permanent(err error) bool {
	var own interface{ Permanent() bool }
	if errors.As(err, &own) && own.Permanent() {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || Retriable(err) || apierrors.IsConflict(err) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != 408
}

// PermanentError marks a failure that sending again cannot mend (a
// configuration that is wrong as given).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string   { return e.Err.Error() }
func (e *PermanentError) Unwrap() error   { return e.Err }
func (e *PermanentError) Permanent() bool { return true }

// Retriable reports whether a failed patch may be sent again.
func Retriable(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Code >= 500 {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ApplyConcurrency bounds the patches in flight.
const ApplyConcurrency = 64

// Apply sends the patches of a plan, up to ApplyConcurrency at once. manual
// and none actions are reported, not sent. With DryRunClient nothing is
// sent at all. Every action gets a Result, so a failure part way says
// exactly what was changed and what was not. now stamps the annotations.
func Apply(ctx context.Context, p Patcher, actions []Action, dry DryRun, now func() time.Time) []Result {
	return ApplyThen(ctx, p, actions, dry, now, nil)
}

// ApplyThen is Apply that hands each sent result to then as soon as its
// patch is answered (from the patch's goroutine; then must not block).
// then may start work that goes on updating the result in place (a
// PodWaits); ApplyThen never touches a result again once handed over.
func ApplyThen(ctx context.Context, p Patcher, actions []Action, dry DryRun, now func() time.Time, then func(*Result)) []Result {
	return ApplyWith(ctx, p, actions, ApplyOptions{DryRun: dry, Now: now, Then: then})
}

// ApplyOptions are how ApplyWith sends the patches.
type ApplyOptions struct {
	DryRun DryRun
	Now    func() time.Time
	// Then gets each sent result as soon as its patch is answered.
	Then func(*Result)
	// Sleep pauses between the tries of a patch (default: the real
	// clock's); Backoff spaces them (default: the package's Backoff).
	Sleep   func(context.Context, time.Duration)
	Backoff *wait.Backoff
	// Serial sends one patch at a time, in order, each handed to Then
	// before the next is sent: a simulation on a virtual clock replays.
	Serial bool
}

// ApplyWith is ApplyThen with its options.
func ApplyWith(ctx context.Context, p Patcher, actions []Action, o ApplyOptions) []Result {
	if o.Sleep == nil {
		o.Sleep = Pause
	}
	if o.Backoff == nil {
		o.Backoff = &Backoff
	}
	results := make([]Result, len(actions))
	sem := make(chan struct{}, ApplyConcurrency)
	var wg sync.WaitGroup
	for i, a := range actions {
		results[i] = Result{Action: a, Outcome: OutcomeNotApplied}
		if a.Action != ActionAnnotate && a.Action != ActionRestart || o.DryRun == DryRunClient {
			continue
		}
		send := func(r *Result) {
			applyOne(ctx, p, r, o)
			if o.Then != nil {
				o.Then(r)
			}
		}
		if o.Serial {
			send(&results[i])
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(r *Result) {
			defer wg.Done()
			send(r)
			<-sem
		}(&results[i])
	}
	wg.Wait()
	return results
}

// applyOne sends the patch of one action and records the outcome in r.
func applyOne(ctx context.Context, p Patcher, r *Result, o ApplyOptions) {
	if ctx.Err() != nil {
		r.Error = "not sent: " + ctx.Err().Error()
		return
	}
	dry := o.DryRun
	// every attempt sends the same patch: one that failed ambiguously (a
	// timeout, a lost connection) may have been applied, and its retry
	// must then change nothing rather than start a second rollout. The
	// restart is applied when the API server accepts it (AppliedAt, from
	// which the pacer counts), a backoff of retries after its stamp.
	patch, pt := actionPatch(r, o.Now())
	var last error // the answer to the attempt before, for a window that closes
	err := retryPatch(ctx, *o.Backoff, o.Sleep, func() error {
		if na := r.Action.NotAfter; !na.IsZero() && !o.Now().Before(na) {
			return &WindowClosedError{Target: r.Target, Closed: na, Last: last}
		}
		last = p.Patch(ctx, r.Target, pt, patch, dry == DryRunServer)
		return last
	})
	switch {
	case err != nil:
		r.Outcome, r.Error, r.Transient = OutcomeFailed, err.Error(), Transient(err)
	case dry == DryRunServer:
		r.Outcome = OutcomeDryRun
	default:
		at := metav1.NewTime(o.Now())
		r.Outcome, r.AppliedAt = OutcomeApplied, &at
	}
}

// WindowClosedError is a restart not sent (or not sent again) because its
// workload's restart window closed first. It passes when the window opens
// again: the continuous refresh then holds the restart until it does.
type WindowClosedError struct {
	Target Target
	Closed time.Time
	// Last is the answer to the attempt before, if one was sent: an
	// ambiguous one (a timeout, a lost connection) may have been applied.
	Last error
}

func (e *WindowClosedError) Error() string {
	closed := e.Closed.UTC().Format(time.RFC3339)
	var st apierrors.APIStatus
	switch {
	case e.Last == nil:
		return fmt.Sprintf("the restart window of %s closed at %s before the restart was sent; it is sent when the window opens again", e.Target, closed)
	case errors.As(e.Last, &st) && st.Status().Code >= 400 && st.Status().Code < 500 && st.Status().Code != 408: // refused: not applied
		return fmt.Sprintf("the restart window of %s closed at %s before the restart was sent again (the last attempt: %v); it is sent when the window opens again", e.Target, closed, e.Last)
	}
	return fmt.Sprintf("the restart window of %s closed at %s before the restart was sent again (the last attempt: %v; it may have been applied); "+
		"if its pods are not current by then, it is sent when the window opens again", e.Target, closed, e.Last)
}

// actionPatch is the patch of r's action stamped with t, and its type.
func actionPatch(r *Result, t time.Time) ([]byte, types.PatchType) {
	switch {
	case r.Action.Action == ActionAnnotate:
		return AnnotatePatch(t), types.MergePatchType
	case r.Action.RestartAt:
		return RestartAtPatch(t), types.MergePatchType
	case IsRollout(r.Target.Kind):
		return RestartPatch(t), types.MergePatchType // a custom resource takes no strategic merge patch; this one merges the same
	default:
		return RestartPatch(t), types.StrategicMergePatchType
	}
}

// retryPatch calls send until it succeeds, fails for a reason that is not
// Retriable, or b's steps are spent, pausing b's steps with sleep
// (client-go's retry.OnError, with the pause injectable).
func retryPatch(ctx context.Context, b wait.Backoff, sleep func(context.Context, time.Duration), send func() error) error {
	for {
		err := send()
		if err == nil || !Retriable(err) || b.Steps <= 1 || ctx.Err() != nil {
			return err
		}
		sleep(ctx, b.Step())
	}
}

// Before says what was known of an annotate action's consumers before the
// patch, for the result table: "was pending" (or the state seen), or
// "state not observed before" when the pod was annotated without a prior
// exec (an annotation is harmless where the volume is already current).
func (a Action) Before() string {
	var states []string
	for _, c := range a.Consumers {
		if c.State != "" && !contains(states, string(c.State)) {
			states = append(states, string(c.State))
		}
	}
	if len(states) == 0 {
		return "state not observed before"
	}
	return "was " + strings.Join(states, ", ")
}
