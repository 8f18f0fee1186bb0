package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// pacer spaces restarts out, whatever asked for them: one workload at most
// once per interval (from the template's restartedAt, which any restart
// writes, or the last restart this loop sent), and all of them at most
// bucket's rate, in bursts of its size. An object edited again and again
// then restarts its consumers at most once per interval, not at every edit
// that finds the previous rollout complete. Annotations restart nothing
// and are not paced.
//
// Only a restart the API server accepted takes a token of the bucket, when
// it is accepted (sent); hold only asks whether one is there, counting the
// restarts it let through whose answer is not in yet, so a restart held,
// refused or not sent spends nothing, and nothing is ever given back.
type pacer struct {
	mu       sync.Mutex // the workers of several namespaces ask it
	interval time.Duration
	bucket   *rate.Limiter // nil: no rate limit
	// takenAt is when the latest token was taken: a restart accepted
	// earlier takes its token then (the bucket's clock never goes back)
	takenAt time.Time
	last    map[refresh.Target]time.Time
	// letThrough are the restarts hold let through whose patch is not
	// answered yet: each counts against the bucket until sent ends it
	letThrough map[refresh.Target]bool
}

func newPacer(interval time.Duration, perSecond float64, burst int) *pacer {
	p := &pacer{interval: interval, last: map[refresh.Target]time.Time{}, letThrough: map[refresh.Target]bool{}}
	if perSecond > 0 {
		p.bucket = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
	}
	return p
}

// hold says why the restart of t waits, and until when; interval is the
// workload's (the longer of --min-restart-interval and its pause period),
// restartedAt the time its template says it was last restarted (zero:
// never). A restart it lets through counts against the bucket until sent
// says how it ended; one it holds counts for nothing.
func (p *pacer) hold(t refresh.Target, interval time.Duration, restartedAt, now time.Time) Hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.last[t]
	if restartedAt.After(now) { // written by a client whose clock is ahead
		restartedAt = now
	}
	if restartedAt.After(last) {
		last = restartedAt
	}
	if interval > 0 && !last.IsZero() && now.Sub(last) < interval {
		kind := HoldInterval
		if interval != p.interval {
			kind = HoldPausePeriod
		}
		return Hold{Reason: fmt.Sprintf("%s was restarted %s ago, less than %s", t, max(now.Sub(last), 0).Round(time.Second), intervalName(interval, p.interval)),
			Kind: kind, Until: last.Add(interval)}
	}
	if d := p.tokenIn(t, now); d > 0 {
		return Hold{Reason: fmt.Sprintf("the restart rate limit is reached (--restart-rate %g/s, --restart-burst %d)", float64(p.bucket.Limit()), p.bucket.Burst()),
			Kind: HoldRate, Until: now.Add(d)}
	}
	p.letThrough[t] = true
	return Hold{}
}

// tokenIn is how long from now until the bucket has a token for t once the
// other restarts let through have taken theirs (0: one is there now).
func (p *pacer) tokenIn(t refresh.Target, now time.Time) time.Duration {
	if p.bucket == nil {
		return 0
	}
	others := len(p.letThrough)
	if p.letThrough[t] { // t asked again: it replaces its own
		others--
	}
	missing := 1 + float64(others) - p.bucket.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(missing / float64(p.bucket.Limit()) * float64(time.Second)))
}

// sent ends the restarts hold let through with their results: one the API
// server accepted counts from when it was accepted for the interval and
// takes its token then; one that failed or was not sent counts for
// nothing, so that a restart refused for a moment is sent again at its
// retry, not an interval (or a restart window, or a token) later. would
// (a shadow) counts every restart let through as sent: it is the one the
// acting loop would have sent.
func (p *pacer) sent(results []refresh.Result, now time.Time, would bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var accepted []time.Time
	for _, r := range results {
		if !isRestart(r.Action) || !p.letThrough[r.Target] {
			continue
		}
		delete(p.letThrough, r.Target)
		at := now
		switch {
		case r.AppliedAt != nil:
			at = r.AppliedAt.Time
		case !would:
			continue
		}
		p.last[r.Target] = at
		accepted = append(accepted, at)
	}
	// in the order they were accepted: a restart patched before an
	// eviction that was refused for minutes takes its token then
	slices.SortFunc(accepted, time.Time.Compare)
	for _, at := range accepted {
		if p.bucket != nil {
			if at.After(p.takenAt) {
				p.takenAt = at
			}
			p.bucket.ReserveN(p.takenAt, 1)
		}
	}
}

// intervalName names where a workload's interval comes from.
func intervalName(interval, flag time.Duration) string {
	if interval == flag {
		return fmt.Sprintf("--min-restart-interval %s", flag)
	}
	return fmt.Sprintf("its %s %s", ReloaderPausePeriod, interval)
}

// scheduleHold is why the restart of t waits for its schedule: outside
// its restart window (until it opens), or paced (see pacer), from its
// annotations m (metaOf). A schedule that cannot be read (an invalid
// annotation) holds the restart for good: it is reported, never sent at
// a time the workload did not ask for. Nor is one whose annotations could
// not be read: held and checked again with a backoff while the failure may
// pass, else for good.
func (l *Loop) scheduleHold(t refresh.Target, m subjectMeta) Hold {
	now := l.Now()
	if m.err != nil {
		why := fmt.Sprintf("the restart window and pause period of %s cannot be read (%v)", t, m.err)
		if refresh.Transient(m.err) {
			return Hold{Reason: why + ": held until they can be", Kind: HoldUnreadable}
		}
		return Hold{Reason: why, Kind: HoldUnreadable, Stuck: true}
	}
	if h := windowHold(t, m, now); h.Reason != "" {
		return h
	}
	interval, err := pausePeriod(m)
	if err != nil {
		return Hold{Reason: fmt.Sprintf("%s: %v", t, err), Kind: HoldInvalid, Stuck: true}
	}
	interval = max(interval, l.pace.interval)
	var restartedAt time.Time
	if interval > 0 {
		restartedAt, _ = time.Parse(time.RFC3339, m.template[refresh.RestartedAtAnnotation])
	}
	return l.pace.hold(t, interval, restartedAt, now)
}

// metaOf are the annotations of t's workload and template: those the
// round read already (meta), else with one GET (a workload named in
// Reloader's reload list, whose uses the round did not read); none for a
// pod, or without a reader.
func (l *Loop) metaOf(ctx context.Context, t refresh.Target, meta map[inspect.WorkloadRef]subjectMeta) subjectMeta {
	m, ok := metaFor(meta, t.Kind, t.Name)
	if (!ok || m.err != nil) && l.Annotations != nil && t.Kind != "Pod" {
		m = subjectMeta{}
		m.workload, m.template, m.err = l.Annotations.Annotations(ctx, t.Kind, t.Namespace, t.Name)
	}
	return m
}

// pausePeriod is the workload's Reloader pause period (zero: none): with
// Reloader, a Deployment restarted is paused that long, so that the
// changes meanwhile make one rollout at its end. cmsync spaces the
// workload's restarts as far apart instead, which rolls the same way and
// leaves spec.paused alone.
func pausePeriod(m subjectMeta) (time.Duration, error) {
	v := cmp.Or(m.workload[ReloaderPausePeriod], m.template[ReloaderPausePeriod])
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q is not a duration such as 5m", ReloaderPausePeriod, v)
	}
	return d, nil
}
