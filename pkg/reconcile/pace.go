package reconcile

import (
	"context"
	"fmt"
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
type pacer struct {
	mu       sync.Mutex // the workers of several namespaces ask it
	interval time.Duration
	bucket   *rate.Limiter // nil: no rate limit
	last     map[refresh.Target]time.Time
}

func newPacer(interval time.Duration, perSecond float64, burst int) *pacer {
	p := &pacer{interval: interval, last: map[refresh.Target]time.Time{}}
	if perSecond > 0 {
		p.bucket = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
	}
	return p
}

// hold says why the restart of t waits, and until when; restartedAt is the
// time its template says it was last restarted (zero: never). A restart
// that is not held takes a token and is remembered as sent at now.
func (p *pacer) hold(t refresh.Target, restartedAt, now time.Time) Hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.last[t]
	if restartedAt.After(now) { // written by a client whose clock is ahead
		restartedAt = now
	}
	if restartedAt.After(last) {
		last = restartedAt
	}
	if p.interval > 0 && !last.IsZero() && now.Sub(last) < p.interval {
		return Hold{Reason: fmt.Sprintf("%s was restarted %s ago, less than --min-restart-interval %s", t, max(now.Sub(last), 0).Round(time.Second), p.interval),
			Paced: true, Until: last.Add(p.interval)}
	}
	if p.bucket != nil {
		r := p.bucket.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			return Hold{Reason: fmt.Sprintf("the restart rate limit is reached (--restart-rate %g/s, --restart-burst %d)", float64(p.bucket.Limit()), p.bucket.Burst()),
				Paced: true, Until: now.Add(d)}
		}
	}
	p.last[t] = now
	return Hold{}
}

// paceHold is the pacer's hold of the restart of t, its restartedAt read
// from the workload's template (only with an interval): from the
// annotations the round read already (meta), else with one GET (a
// workload named in Reloader's reload list, whose uses the round did not
// read).
func (l *Loop) paceHold(ctx context.Context, t refresh.Target, meta map[inspect.WorkloadRef]subjectMeta) Hold {
	var restartedAt time.Time
	if l.pace.interval > 0 && t.Kind != "Pod" {
		tmpl, ok := meta[inspect.WorkloadRef{Kind: t.Kind, Name: t.Name}]
		if (!ok || tmpl.err != nil) && l.Annotations != nil {
			tmpl = subjectMeta{}
			_, tmpl.template, tmpl.err = l.Annotations.Annotations(ctx, t.Kind, t.Namespace, t.Name)
		}
		restartedAt, _ = time.Parse(time.RFC3339, tmpl.template[refresh.RestartedAtAnnotation])
	}
	return l.pace.hold(t, restartedAt, l.Now())
}
