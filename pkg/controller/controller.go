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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
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
}

// Controller elects, serves and runs the loop while it leads.
type Controller struct {
	Config
	Client kubernetes.Interface
	// NewLoop builds the loop to run while leading, given the records' key
	// (its Emit is set by the controller).
	NewLoop func(key []byte) *reconcile.Loop
	// Log writes one structured line per event.
	Log      func(reconcile.Event)
	Metrics  *Metrics
	Recorder Recorder
	// Ready, when set, is told the address served once it listens.
	Ready func(addr string)

	probes Probes
	logMu  sync.Mutex
}

// Run serves and elects until ctx ends. It returns an error when it cannot
// serve, when the loop cannot start, or when it lost the lease while ctx
// was still running (so that the pod restarts as a standby, the usual way
// of client-go's leader election).
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var health *leaderelection.HealthzAdaptor
	if c.LeaderElect {
		health = leaderelection.NewLeaderHealthzAdaptor(c.RenewDeadline)
		c.probes.Healthy = health.Check
	}
	addr, serveErr, err := serve(ctx, c.MetricsAddr, Handler(c.Metrics, &c.probes))
	if err != nil {
		return err
	}
	if c.Ready != nil {
		c.Ready(addr.String())
	}
	if !c.LeaderElect {
		c.leading(true)
		return c.lead(ctx)
	}
	var leadErr error
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1ObjectMeta(c.Namespace, c.LeaseName),
			Client:     c.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
		},
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		ReleaseOnCancel: true, Name: c.LeaseName, WatchDog: health,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				c.leading(true)
				if leadErr = c.lead(lctx); leadErr != nil {
					cancel()
				}
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
	done := make(chan struct{})
	go func() { le.Run(ctx); close(done) }()
	select {
	case err := <-serveErr:
		cancel()
		<-done
		return err
	case <-done:
	}
	switch {
	case leadErr != nil:
		return leadErr
	case ctx.Err() == nil:
		return errors.New("lost the Lease " + c.Namespace + "/" + c.LeaseName + ": exiting, to start again as a standby")
	}
	return nil
}

// leading records a change of leadership.
func (c *Controller) leading(on bool) {
	c.probes.leading.Store(on)
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
	key, err := DigestKey(ctx, c.Client, c.Namespace, c.KeySecret)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l := c.NewLoop(key)
	l.Emit = c.observe
	return l.Run(ctx)
}

// observe logs, counts and posts one event of the loop.
func (c *Controller) observe(e reconcile.Event) {
	if e.Kind == reconcile.EventReady {
		c.probes.synced.Store(true)
	}
	c.log(e)
	c.Metrics.Observe(e)
	c.Recorder.Observe(e)
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
