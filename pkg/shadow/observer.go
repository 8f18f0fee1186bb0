package shadow

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// Observer runs beside a shadow loop: it collects the loop's decisions
// (Handle, given every event), watches the workloads' pod templates for
// the peer's markers, and, once a change's window has passed, pairs them
// and appends the row to the record. Its only writes are the record's.
type Observer struct {
	Client kubernetes.Interface
	// Dynamic reads Argo Rollouts (nil: through Client).
	Dynamic   dynamic.Interface
	Namespace string // "" for all
	Window    time.Duration
	Store     Store
	// Record is the record's ConfigMap (Kind unused), left out of the
	// comparison.
	Record Object
	Owners Owners
	// Now stamps the markers; it must be the loop's Now (a change's first
	// edit is on it).
	Now func() time.Time
	// Row, when set, is told of each row recorded; Error of a record that
	// could not be written (the rows are kept for the next attempt); Note
	// of a kind of workload it cannot watch.
	Row   func(Row)
	Error func(error)
	Note  func(string)

	mu        sync.Mutex
	collector Collector
	sizes     Sizes // the informers' once Run made them
	markers   []Marker
	unsaved   []Row
}

// Handle takes one event of the loop. The record's own ConfigMap is not a
// change to compare: each write of it would make a row, and that row
// another write.
func (o *Observer) Handle(e reconcile.Event) {
	if r := o.Record; e.Object != nil && r.Name != "" && e.Object.Kind == "ConfigMap" && e.Object.Namespace == r.Namespace && e.Object.Name == r.Name {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.collector.Handle(e, o.Owners, o.sizes)
}

// Run watches the workloads and records the rows as they fall due, until
// ctx ends.
func (o *Observer) Run(ctx context.Context) {
	ww, note := watchWorkloads(ctx, o.Client, o.Dynamic, o.Namespace, func(ms []Marker) {
		now := o.Now()
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, m := range ms {
			m.At = now
			o.markers = append(o.markers, m)
		}
	})
	if note != "" && o.Note != nil {
		o.Note(note)
	}
	ww.start(ctx.Done())
	defer ww.shutdown()
	ww.sync(ctx.Done())
	o.mu.Lock()
	o.sizes = ww
	o.mu.Unlock()
	tick := time.NewTicker(max(o.Window/20, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			o.flush(ctx)
		}
	}
}

// flush records the rows due, and forgets the markers no open change can
// pair any more.
func (o *Observer) flush(ctx context.Context) {
	now := o.Now()
	o.mu.Lock()
	rows := o.collector.Due(now, o.Window, o.markers)
	oldest := now.Add(-o.Window)
	for _, d := range o.collector.Open {
		if d.At.Before(oldest) {
			oldest = d.At
		}
	}
	kept := o.markers[:0]
	for _, m := range o.markers {
		if !m.At.Before(oldest.Add(-Slack)) {
			kept = append(kept, m)
		}
	}
	o.markers = kept
	pending := append(o.unsaved, rows...)
	o.unsaved = nil
	o.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	if err := o.Store.Append(ctx, pending); err != nil {
		if o.Error != nil {
			o.Error(err)
		}
		o.mu.Lock()
		o.unsaved = append(pending, o.unsaved...)
		if len(o.unsaved) > 1000 { // the record cannot be written: keep the newest
			o.unsaved = o.unsaved[len(o.unsaved)-1000:]
		}
		o.mu.Unlock()
		return
	}
	for _, r := range rows {
		if o.Row != nil {
			o.Row(r)
		}
	}
}

// ClientOwners finds a pod's workload with GETs: its controller, and a
// ReplicaSet's Deployment (or Argo Rollout), named as cmsync's actions
// name it (inspect.WorkloadRef.GroupKind: a Rollout is
// Rollout.argoproj.io).
type ClientOwners struct{ Client kubernetes.Interface }

// Owner is the workload that owns the pod; the pod itself when none does
// or it cannot be read.
func (c ClientOwners) Owner(ns, pod string) Workload {
	self := Workload{Kind: "Pod", Namespace: ns, Name: pod}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return self
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return self
	}
	if ref.Kind == "ReplicaSet" {
		rs, err := c.Client.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if up := metav1.GetControllerOf(rs); up != nil {
				ref = up
			}
		}
	}
	return Workload{Kind: inspect.OwnerRef(ref).GroupKind(), Namespace: ns, Name: ref.Name}
}
