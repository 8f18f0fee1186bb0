package shadow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Double is one workload restarted twice for one change: by cmsync at
// Cmsync and by a peer's marker (Peer) within the window of it.
type Double struct {
	Workload Workload
	Cmsync   time.Time
	Peer     Marker
}

// Message says what happened and what to do, naming --shadow.
func (d Double) Message() string {
	gap := d.Peer.At.Sub(d.Cmsync).Round(time.Second)
	when := fmt.Sprintf("%s after", gap)
	if gap < 0 {
		when = fmt.Sprintf("%s before", -gap)
	}
	peer := fmt.Sprintf("a peer (Reloader's %s strategy", d.Peer.Strategy)
	if o := d.Peer.Name; o != "" {
		peer += fmt.Sprintf(", for %s/%s", d.Peer.Kind, o)
	} else if d.Peer.EnvObject != "" {
		peer += fmt.Sprintf(", for a %s named %s", d.Peer.Kind, d.Peer.EnvObject)
	}
	peer += ")"
	return fmt.Sprintf("%s restarted twice for one change: by cmsync and by %s %s it; every change restarts it twice while both act: "+
		"let one of them act (remove Reloader's annotations from it, or run cmsync with --shadow to compare them first)", d.Workload, peer, when)
}

// Doubles pairs cmsync's restarts with a peer's markers on the same
// workload: a marker within Window before or after a restart of cmsync's
// is a second restart. Each restart of cmsync's is reported once. Not safe
// for concurrent use.
type Doubles struct {
	Window time.Duration

	restarts []Double // Peer unset until paired
	markers  []Marker
}

// Restarted adds a restart cmsync sent; it returns the double it makes
// with a marker already seen, if any.
func (d *Doubles) Restarted(w Workload, at time.Time) []Double {
	d.forget(at)
	r := Double{Workload: w, Cmsync: at}
	for _, m := range d.markers {
		if m.Workload == w && near(m.At, at, d.Window) {
			r.Peer = m
			d.restarts = append(d.restarts, r)
			return []Double{r}
		}
	}
	d.restarts = append(d.restarts, r)
	return nil
}

// Marked adds a peer's marker; it returns the doubles it makes with the
// restarts of cmsync's not yet paired. A restart by an unknown hand
// (restartedAt, which cmsync's own restart moves) is no peer's.
func (d *Doubles) Marked(m Marker) []Double {
	if !m.Known() {
		return nil
	}
	d.forget(m.At)
	d.markers = append(d.markers, m)
	var out []Double
	for i := range d.restarts {
		r := &d.restarts[i]
		if r.Peer.Strategy == "" && r.Workload == m.Workload && near(m.At, r.Cmsync, d.Window) {
			r.Peer = m
			out = append(out, *r)
		}
	}
	return out
}

// forget drops what no restart or marker seen at now can pair any more.
func (d *Doubles) forget(now time.Time) {
	oldest := now.Add(-d.Window - Slack)
	rs := d.restarts[:0]
	for _, r := range d.restarts {
		if !r.Cmsync.Before(oldest) {
			rs = append(rs, r)
		}
	}
	d.restarts = rs
	ms := d.markers[:0]
	for _, m := range d.markers {
		if !m.At.Before(oldest) {
			ms = append(ms, m)
		}
	}
	d.markers = ms
}

func near(a, b time.Time, window time.Duration) bool {
	d := a.Sub(b)
	return d <= window+Slack && d >= -window-Slack
}

// RestartOf is the workload an acting loop's event says cmsync restarted
// (a restart or an eviction sent), if any.
func RestartOf(e reconcile.Event) (Workload, bool) {
	if e.Kind != reconcile.EventAction || e.Action == nil {
		return Workload{}, false
	}
	if a := e.Action.Action; a != refresh.ActionRestart && a != refresh.ActionEvict {
		return Workload{}, false
	}
	t := e.Action.Target
	return Workload{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}, true
}

// DoubleWatch runs beside an acting loop: it watches the workloads for a
// peer's markers and reports (Found) each workload restarted by both.
type DoubleWatch struct {
	Client kubernetes.Interface
	// Dynamic reads Argo Rollouts (nil: through Client).
	Dynamic   dynamic.Interface
	Namespace string // "" for all
	Window    time.Duration
	Now       func() time.Time
	Found     func(Double)
	// Note, when set, is told of a kind of workload it cannot watch.
	Note func(string)

	mu      sync.Mutex
	doubles Doubles
}

// Handle takes one event of the loop.
func (w *DoubleWatch) Handle(e reconcile.Event) {
	wl, ok := RestartOf(e)
	if !ok {
		return
	}
	at := e.Time
	if at.IsZero() {
		at = w.Now()
	}
	w.mu.Lock()
	w.doubles.Window = w.Window
	found := w.doubles.Restarted(wl, at)
	w.mu.Unlock()
	w.report(found)
}

// Run watches the workloads until ctx ends.
func (w *DoubleWatch) Run(ctx context.Context) {
	ww, note := watchWorkloads(ctx, w.Client, w.Dynamic, w.Namespace, func(ms []Marker) {
		now := w.Now()
		var found []Double
		w.mu.Lock()
		w.doubles.Window = w.Window
		for _, m := range ms {
			m.At = now
			found = append(found, w.doubles.Marked(m)...)
		}
		w.mu.Unlock()
		w.report(found)
	})
	if note != "" && w.Note != nil {
		w.Note(note)
	}
	ww.start(ctx.Done())
	<-ctx.Done()
	ww.shutdown()
}

func (w *DoubleWatch) report(ds []Double) {
	for _, d := range ds {
		if w.Found != nil {
			w.Found(d)
		}
	}
}

// Event is the loop event that reports the double: an error on the
// workload.
func (d Double) Event(now time.Time) reconcile.Event {
	return reconcile.Event{Time: now, Kind: reconcile.EventError, Message: d.Message(),
		Target: &refresh.Target{Kind: d.Workload.Kind, Namespace: d.Workload.Namespace, Name: d.Workload.Name}}
}
