// Package controller runs the continuous refresh (pkg/reconcile) in the
// cluster: one replica at a time acts, elected on a coordination.k8s.io
// Lease; what it made current is recorded on the consumers, keyed by a
// Secret of its namespace, so that a new leader or a restarted controller
// restarts nothing that is current; it serves Prometheus metrics, /healthz
// and /readyz, and posts Kubernetes Events on what it acts on. `kubectl
// cmsync controller` runs it.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// EventLeader is the log line of a leader election change.
const EventLeader reconcile.EventKind = "leader"

// Config is how the controller is elected and served.
type Config struct {
	// Namespace holds the Lease and the key Secret (the controller's own).
	Namespace string
	// LeaderElect: one replica acts at a time; without it this one always
	// acts (a single replica, or a test).
	LeaderElect                               bool
	LeaseName, Identity                       string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// KeySecret is the Secret holding the key of the records (DigestKey).
	KeySecret string
	// MetricsAddr serves /metrics, /healthz and /readyz.
	MetricsAddr string
	// Pprof also serves Go's runtime profiles at /debug/pprof/ on
	// MetricsAddr.
	Pprof bool
	// DryRun: the key Secret is read, never created (without it nothing is
	// compared at start).
	DryRun bool
}

// Controller elects, serves and runs the loop while it leads.
type Controller struct {
	Config
	Client kubernetes.Interface
	// LeaseClient renews the Lease (default Client). Give it a client of its
	// own: behind the loop's requests in one client's rate limiter, a
	// renewal can miss its deadline and the leader steps down.
	LeaseClient kubernetes.Interface
	// NewLoop builds the loop to run while leading, given the records' key
	// (its Emit is set by the controller).
	NewLoop func(key []byte) *reconcile.Loop
	// Log writes one structured line per event.
	Log     func(reconcile.Event)
	Metrics *Metrics
	Events  EventPoster
	// Ready, when set, is told the address served once it listens.
	Ready func(addr string)
	// Rollouts, when set, is the Argo Rollouts resource of a namespace
	// (refresh.RolloutsOf): a new leader counts the Rollout restarts under
	// way too. A cluster without the Rollout CRD has none.
	Rollouts func(namespace string) dynamic.ResourceInterface

	probes Probes
	logMu  sync.Mutex
}

// Run serves and elects until ctx ends. It returns an error when it cannot
// serve, when the loop cannot start, or when it lost the lease while ctx
// was still running (so that the pod restarts as a standby, the usual way
// of client-go's leader election). On ctx's end the loop stops first, then
// the Lease is released: a standby never acts beside a loop still winding
// down.
func (c *Controller) Run(ctx context.Context) error {
	sctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	var health *leaderelection.HealthzAdaptor
	if c.LeaderElect {
		health = leaderelection.NewLeaderHealthzAdaptor(c.RenewDeadline)
		c.probes.Healthy = health.Check
	}
	h := Handler(c.Metrics, &c.probes)
	if c.Pprof {
		h = WithProfiles(h)
	}
	addr, serveErr, err := serve(sctx, c.MetricsAddr, h)
	if err != nil {
		return err
	}
	if c.Ready != nil {
		c.Ready(addr.String())
	}
	if !c.LeaderElect {
		c.leading(true)
		return c.untilServeFails(ctx, serveErr, func(ctx context.Context) error { return c.lead(ctx) })
	}
	return c.untilServeFails(ctx, serveErr, func(ctx context.Context) error { return c.elect(ctx, health) })
}

// untilServeFails runs f until it returns, or until the server fails (then
// f's context ends and its error is the server's).
func (c *Controller) untilServeFails(ctx context.Context, serveErr <-chan error, f func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case err := <-serveErr:
		cancel()
		<-done
		return err
	}
}

// elect runs the loop while this replica holds the Lease.
func (c *Controller) elect(ctx context.Context, health *leaderelection.HealthzAdaptor) error {
	// the elector's own context ends after the loop has returned (or at
	// once when ctx ends before this replica led), so that the Lease is
	// released only once nothing acts any more
	ectx, release := context.WithCancel(context.WithoutCancel(ctx))
	defer release()
	var mu sync.Mutex
	var leadErr error
	started := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			release()
		}
	})
	defer stop()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.LeaseName},
			Client:     c.leaseClient().CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
		},
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		ReleaseOnCancel: true, Name: c.LeaseName, WatchDog: health,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				started = true
				mu.Unlock()
				c.leading(true)
				lctx, cancel := context.WithCancel(lctx)
				defer context.AfterFunc(ctx, cancel)()
				err := c.lead(lctx)
				cancel()
				mu.Lock()
				leadErr = err
				mu.Unlock()
				release()
			},
			OnStoppedLeading: func() { c.leading(false) },
			OnNewLeader: func(id string) {
				if id != c.Identity {
					c.log(reconcile.Event{Kind: EventLeader, Message: fmt.Sprintf("%s leads; %s stands by", id, c.Identity)})
				}
			},
		},
	})
	if err != nil {
		return err
	}
	c.log(reconcile.Event{Kind: EventLeader, Message: fmt.Sprintf("%s is a candidate for Lease %s/%s", c.Identity, c.Namespace, c.LeaseName)})
	le.Run(ectx)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case leadErr != nil:
		return leadErr
	case ctx.Err() == nil:
		return errors.New("lost the Lease " + c.Namespace + "/" + c.LeaseName + ": exiting, to start again as a standby")
	}
	return nil
}

func (c *Controller) leaseClient() kubernetes.Interface {
	if c.LeaseClient != nil {
		return c.LeaseClient
	}
	return c.Client
}

// leading records a change of leadership (client-go also says "stopped"
// to a standby that never led: that is no change).
func (c *Controller) leading(on bool) {
	if was := c.probes.leading.Swap(on); !on && !was {
		return
	}
	if !on {
		c.probes.synced.Store(false)
	}
	c.Metrics.SetLeader(on)
	if on {
		c.log(reconcile.Event{Kind: EventLeader, Message: c.Identity + " leads: acting on changes"})
	} else {
		c.log(reconcile.Event{Kind: EventLeader, Message: c.Identity + " stopped leading"})
	}
}

// lead runs the loop until ctx ends.
func (c *Controller) lead(ctx context.Context) error {
	key, err := DigestKey(ctx, c.Client, c.Namespace, c.KeySecret, !c.DryRun)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l := c.NewLoop(key)
	l.Emit = c.handle
	l.QueueMetrics = c.Metrics.Queue()
	c.Metrics.FollowRestarts(l.Restarts)
	defer c.Metrics.FollowRestarts(nil)
	if !c.DryRun {
		l.UnderWay = c.moveFieldManagers(ctx, l.Namespace)
		var err error
		if l.Watermark, err = readWatermark(ctx, c.Client, c.Namespace, c.KeySecret); err != nil && ctx.Err() == nil {
			c.handle(reconcile.Event{Kind: reconcile.EventError, Message: fmt.Sprintf("reading the watermark on Secret %s/%s: %v; every consumer with no record whose objects changed is checked",
				c.Namespace, c.KeySecret, err)})
		}
		w := &watermarkWriter{client: c.Client, namespace: c.Namespace, name: c.KeySecret, clock: time.Now, report: func(err error) {
			c.handle(reconcile.Event{Kind: reconcile.EventError, Message: fmt.Sprintf("writing the watermark on Secret %s/%s: %v (tried again; a new leader checks more consumers meanwhile)",
				c.Namespace, c.KeySecret, err)})
		}}
		l.Acted = func(until time.Time) { w.acted(ctx, until) }
	}
	return l.Run(ctx)
}

// moveFieldManagers gives version.FieldManager what other builds of cmsync
// own on the workloads (MoveFieldManagers), before the loop acts; a failure
// is reported and leaves them for the next start. It returns the restarts
// cmsync sent whose rollouts may be under way, for the loop's count.
func (c *Controller) moveFieldManagers(ctx context.Context, namespace string) map[refresh.Target]time.Time {
	n, underWay, err := MoveFieldManagers(ctx, c.Client, c.Rollouts, namespace)
	switch {
	case err != nil && ctx.Err() == nil:
		c.handle(reconcile.Event{Kind: reconcile.EventError, Message: fmt.Sprintf("moving the fields other builds of cmsync own to field manager %s: %v "+
			"(tried again at the next start; until then Flux may revert the restarts and records they wrote)", version.FieldManager, err)})
	case n > 0:
		c.log(reconcile.Event{Kind: EventLeader, Message: fmt.Sprintf("moved the fields of %d workloads to field manager %s", n, version.FieldManager)})
	}
	return underWay
}

// handle logs, counts and posts one event of the loop.
func (c *Controller) handle(e reconcile.Event) {
	if e.Kind == reconcile.EventReady {
		c.probes.synced.Store(true)
	}
	c.log(e)
	c.Metrics.Handle(e)
	c.Events.Handle(e)
}

func (c *Controller) log(e reconcile.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.Log != nil {
		c.Log(e)
	}
}
