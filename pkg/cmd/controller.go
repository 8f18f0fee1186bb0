package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/memlimit"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/controller"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

var (
	controllerLong = templates.LongDesc(`
		Run the continuous refresh of 'watch' in the cluster, as a Deployment
		(deploy/controller): the same engine, the same flags and the same
		JSON lines on standard output, with what an in-cluster controller needs.

		Replicas elect one leader on a coordination.k8s.io Lease; only the leader
		acts, the others stand by and take over when it goes. On each workload (or
		bare pod) it makes current, it records a keyed digest of what the
		consumers read of each object (annotation ` + reconcile.AnnotationApplied + `;
		HMAC-SHA256 under a key kept in a Secret of its namespace, never a plain
		hash of a Secret's values). When it starts leading it compares the records
		with the objects: consumers current by their record are left alone (no
		read, no restart), those whose objects changed since are checked and made
		current, those with no record are recorded and left alone (checked with
		--sync-existing). A new leader or a restarted controller therefore
		restarts nothing that is current.

		It serves Prometheus metrics on /metrics, and /healthz and /readyz, on
		--metrics-addr, and posts Kubernetes Events (Refreshing, Refreshed,
		RefreshFailed, RestartDeferred, RefreshError) on the workloads and pods it
		acts on. --require-opt-in is on by default: only workloads annotated
		` + reconcile.AnnotationWatch + `=true or with one of Reloader's annotations are
		acted on.`)

	controllerExample = templates.Examples(`
		# Install it (2 replicas, least-privilege RBAC, a PodDisruptionBudget)
		kubectl apply -k deploy/controller

		# Run it outside the cluster for a try: one namespace, no election
		kubectl cmsync controller -n team-a --leader-elect=false --key-namespace team-a`)
)

// ControllerOptions holds the flags and state of `kubectl cmsync controller`.
type ControllerOptions struct {
	WatchOptions

	LeaderElect   bool
	KeyNamespace  string
	LeaseName     string
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	KeySecret     string
	MetricsAddr   string
	EnablePprof   bool

	// Set by Complete.
	recorder    record.EventRecorder
	broadcaster record.EventBroadcaster
}

// serviceAccountNamespace is where a pod finds its own namespace.
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// NewControllerOptions returns options with the in-cluster defaults.
func NewControllerOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ControllerOptions {
	o := &ControllerOptions{WatchOptions: *NewWatchOptions(flags, streams), LeaderElect: true, LeaseName: "kubectl-cmsync-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		KeySecret: "kubectl-cmsync-controller-key", MetricsAddr: ":8080"}
	o.RequireOptIn = true
	o.Output = "json"
	return o
}

// NewCmdController builds `kubectl cmsync controller`.
func NewCmdController(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewControllerOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "controller [NAME | configmap/NAME | secret/NAME ...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Run the continuous refresh in the cluster: leader election, records of what was made current, metrics",
		Long:                  controllerLong,
		Example:               controllerExample,
		RunE:                  runOptions(o),
	}
	o.addFlags(cmd, true)
	cmd.AddCommand(NewCmdUninstall(flags, streams))
	fs := cmd.Flags()
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect one acting replica on a Lease (--leader-elect=false: this process always acts; run one only).")
	fs.StringVar(&o.KeyNamespace, "key-namespace", "", "The namespace of the Lease and of the key Secret (default: $POD_NAMESPACE, else the pod's own namespace).")
	fs.StringVar(&o.LeaseName, "lease-name", o.LeaseName, "The name of the coordination.k8s.io Lease.")
	fs.StringVar(&o.Identity, "identity", "", "This replica's name in the Lease (default: $POD_NAME, else the host name).")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", o.LeaseDuration, "How long standbys wait after the last renewal before taking over a leader that vanished.")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up leading.")
	fs.DurationVar(&o.RetryPeriod, "retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the Lease.")
	fs.StringVar(&o.KeySecret, "key-secret", o.KeySecret, "The Secret (in --key-namespace) holding the key of the records; created with a random key when missing.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Where /metrics, /healthz and /readyz are served.")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false, "Also serve Go's runtime profiles (heap, CPU, goroutines) at /debug/pprof/ on --metrics-addr.")
	return cmd
}

// Complete resolves the watch options, the namespace and identity of the
// election, and the event recorder.
func (o *ControllerOptions) Complete(args []string) error {
	shadowNamespace := o.Shadow.Namespace
	if err := o.WatchOptions.Complete(args); err != nil {
		return err
	}
	if o.KeyNamespace == "" {
		o.KeyNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.KeyNamespace == "" {
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			o.KeyNamespace = strings.TrimSpace(string(b))
		}
	}
	if shadowNamespace == "" { // the controller's own, not the kubeconfig's
		o.Shadow.Namespace = o.KeyNamespace
	}
	if o.Identity == "" {
		o.Identity = os.Getenv("POD_NAME")
	}
	if o.Identity == "" {
		o.Identity, _ = os.Hostname()
	}
	if o.recorder == nil {
		o.broadcaster = record.NewBroadcaster()
		o.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.Client.CoreV1().Events("")})
		o.recorder = o.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller.Component})
	}
	return nil
}

// Validate checks the watch flags and the election's.
func (o *ControllerOptions) Validate() error {
	if err := o.WatchOptions.Validate(); err != nil {
		return err
	}
	if o.KeyNamespace == "" {
		return usageError("no namespace for the Lease and the key Secret: set --key-namespace (in a pod it is the pod's own)")
	}
	for _, v := range []struct{ flag, value string }{{"--key-namespace", o.KeyNamespace}, {"--lease-name", o.LeaseName}, {"--key-secret", o.KeySecret}} {
		if errs := validation.IsDNS1123Subdomain(v.value); len(errs) > 0 {
			return usageError("%s %q: %s", v.flag, v.value, strings.Join(errs, "; "))
		}
	}
	if o.Identity == "" {
		return usageError("no identity for the Lease: set --identity (in a pod, POD_NAME from the downward API)")
	}
	if o.LeaderElect {
		switch {
		case o.RetryPeriod <= 0:
			return usageError("--retry-period must be positive, got %s", o.RetryPeriod)
		case o.RenewDeadline <= time.Duration(1.2*float64(o.RetryPeriod)):
			return usageError("--renew-deadline (%s) must be more than 1.2 times --retry-period (%s)", o.RenewDeadline, o.RetryPeriod)
		case o.LeaseDuration <= o.RenewDeadline:
			return usageError("--lease-duration (%s) must be more than --renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
		}
	}
	return nil
}

// Run runs the controller until interrupted (SIGTERM in a pod).
func (o *ControllerOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer o.Verify.Close(o.ErrOut)
	if soft, limit := memlimit.FromContainer(); soft > 0 {
		fmt.Fprintf(o.ErrOut, "memory: the Go runtime's soft limit is %d MiB, %.0f%% of the container's limit of %d MiB (GOMEMLIMIT overrides it)\n",
			soft>>20, memlimit.Ratio*100, limit>>20)
	}
	if o.broadcaster != nil {
		defer o.broadcaster.Shutdown() // the Events queued are sent
	}
	metrics := controller.NewMetrics()
	o.Verify.ReaderPodFailed = metrics.ReaderPodFailed
	events := controller.EventPoster{EventRecorder: o.recorder}
	if o.DryRun != string(refresh.DryRunNone) {
		events = controller.EventPoster{} // nothing is done: no Event says otherwise
	}
	log := o.startShadow(ctx, o.Now, serialized(o.logLine), metrics.Shadow, func(d shadow.Double) {
		metrics.PeerDoubleRestart()
		events.Double(d)
	})
	attach, stopAlerts := o.Alert.start(alertReport(log), metrics.AlertResult)
	defer stopAlerts() // after the loop: its last rounds' messages are flushed
	c := &controller.Controller{
		Config: controller.Config{Namespace: o.KeyNamespace, LeaderElect: o.LeaderElect, LeaseName: o.LeaseName, Identity: o.Identity,
			LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod, KeySecret: o.KeySecret,
			MetricsAddr: o.MetricsAddr, Pprof: o.EnablePprof, DryRun: o.DryRun != string(refresh.DryRunNone)},
		Client:   o.Client,
		Rollouts: func(ns string) dynamic.ResourceInterface { return refresh.RolloutsOf(o.Client, ns) },
		NewLoop: func(key []byte) *reconcile.Loop {
			l := o.newLoop()
			l.DigestKey, l.Resume = key, len(key) > 0
			attach(l)
			return l
		},
		Log:     log,
		Metrics: metrics,
		Events:  events,
	}
	if o.RESTConfig != nil {
		lc, err := kubernetes.NewForConfig(rest.CopyConfig(o.RESTConfig)) // a rate limiter of its own
		if err != nil {
			return err
		}
		c.LeaseClient = lc
	}
	if err := c.Run(ctx); err != nil {
		return explainAPIError(err, o.server(), o.KeyNamespace)
	}
	return nil
}

// logLine writes one event as a JSON line (the structured log).
func (o *ControllerOptions) logLine(e reconcile.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		fmt.Fprintf(o.ErrOut, "cannot encode an event: %v\n", err)
		return
	}
	fmt.Fprintln(o.Out, string(b))
}
