package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// ShadowFlags are --shadow and its record's flags (watch and controller).
type ShadowFlags struct {
	Shadow bool
	Window time.Duration
	// Namespace and Name are the record's ConfigMap (Namespace default:
	// watch's kubeconfig namespace, the controller's own).
	Namespace, Name string
	MaxBytes        int
}

func defaultShadowFlags() ShadowFlags {
	return ShadowFlags{Window: 2 * time.Minute, Name: shadow.DefaultRecordName, MaxBytes: shadow.DefaultRecordMax}
}

func (f *ShadowFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.Shadow, "shadow", false, "Decide every change as cmsync would (selection, on-change policy, restart windows, pacing) and send nothing to workloads or pods; compare with what a peer (Reloader) did and keep the comparison in a ConfigMap (see `kubectl cmsync shadow report`).")
	fs.DurationVar(&f.Window, "shadow-window", f.Window, "With --shadow: how long after a change a peer's restart is paired with it.")
	fs.StringVar(&f.Namespace, "shadow-namespace", "", "With --shadow: the namespace of the record's ConfigMap (default: the controller's own namespace; for watch, the kubeconfig's).")
	fs.StringVar(&f.Name, "shadow-record", f.Name, "With --shadow: the name of the record's ConfigMap.")
	fs.IntVar(&f.MaxBytes, "shadow-record-max-bytes", f.MaxBytes, "With --shadow: the record's size; past it the oldest rows are dropped (and counted).")
}

// validate checks the shadow flags; dryRun is --dry-run.
func (f *ShadowFlags) validate(dryRun string, maxWait time.Duration) error {
	if !f.Shadow {
		return nil
	}
	if dryRun == string(refresh.DryRunServer) {
		return usageError("--shadow sends nothing, not even a server dry run: drop --dry-run=server")
	}
	if f.Window <= maxWait {
		return usageError("--shadow-window (%s) must be longer than --max-wait (%s): a change is decided at most --max-wait after its first edit", f.Window, maxWait)
	}
	if errs := validation.IsDNS1123Subdomain(f.Name); len(errs) > 0 {
		return usageError("--shadow-record %q: %s", f.Name, errs[0])
	}
	if f.MaxBytes < 4096 || f.MaxBytes > 900<<10 {
		return usageError("--shadow-record-max-bytes must be between 4096 and %d (a ConfigMap holds at most 1 MiB), got %d", 900<<10, f.MaxBytes)
	}
	return nil
}

// startShadow starts the observer beside the loop, when --shadow: it returns
// the emit that also feeds it (emit itself otherwise). An acting loop (no
// --shadow, no --dry-run) gets the double-restart watch instead: each
// workload a peer restarted within --shadow-window of cmsync's own restart
// is an error line, and double is told of it.
func (o *WatchOptions) startShadow(ctx context.Context, now func() time.Time, emit func(reconcile.Event), row func(shadow.Row), double func(shadow.Double)) func(reconcile.Event) {
	note := func(msg string) { emit(reconcile.Event{Time: now(), Kind: reconcile.EventError, Message: msg}) }
	if !o.Shadow.Shadow {
		if o.DryRun != string(refresh.DryRunNone) {
			return emit
		}
		if missing, rule := o.cannotWatchWorkloads(ctx); missing != "" {
			fmt.Fprintf(o.ErrOut, "note: the double-restart warning is off (a peer's restarts are not watched): cannot %s (forbidden); "+
				"a Role with this rule grants it: %s\n", missing, rule)
			return emit
		}
		dw := &shadow.DoubleWatch{Client: o.Client, Namespace: o.Namespace, Window: o.Shadow.Window, Now: now, Note: note,
			Found: func(d shadow.Double) {
				emit(d.Event(now()))
				if double != nil {
					double(d)
				}
			}}
		go dw.Run(ctx)
		return func(e reconcile.Event) {
			emit(e)
			dw.Handle(e)
		}
	}
	obs := &shadow.Observer{Client: o.Client, Namespace: o.Namespace, Window: o.Shadow.Window, Now: now, Row: row, Note: note,
		Store:  shadow.ConfigMapStore{Client: o.Client, Namespace: o.Shadow.Namespace, Name: o.Shadow.Name, Max: o.Shadow.MaxBytes},
		Record: shadow.Object{Kind: "ConfigMap", Namespace: o.Shadow.Namespace, Name: o.Shadow.Name},
		Owners: shadow.ClientOwners{Client: o.Client},
		Error: func(err error) {
			emit(reconcile.Event{Time: now(), Kind: reconcile.EventError, Message: fmt.Sprintf("writing the shadow record configmap/%s -n %s: %v; tried again", o.Shadow.Name, o.Shadow.Namespace, err)})
		}}
	go obs.Run(ctx)
	return func(e reconcile.Event) {
		emit(e)
		obs.Handle(e)
	}
}

// cannotWatchWorkloads asks the API server whether this user may list and
// watch the workloads a peer restarts (the double-restart warning's
// informers): "" when it may, else what it may not ("watch statefulsets in
// namespace \"shop\"") and the rule that grants it. An informer refused
// keeps retrying its list and fills the API server's audit log with
// refusals; it is not started then. A review that fails says nothing
// (as refresh's pre-check): the informer's own errors will.
func (o *WatchOptions) cannotWatchWorkloads(ctx context.Context) (missing, rule string) {
	rev := refresh.SelfAccessReviewer{Client: o.Client}
	where := "in every namespace"
	if o.Namespace != "" {
		where = fmt.Sprintf("in namespace %q", o.Namespace)
	}
	for _, res := range []string{"deployments", "statefulsets", "daemonsets"} {
		for _, verb := range []string{"list", "watch"} {
			if ok, err := rev.Allowed(ctx, refresh.Permission{Verb: verb, Group: rbac.Group(res), Resource: res, Namespace: o.Namespace}); err == nil && !ok {
				return fmt.Sprintf("%s %s %s", verb, res, where), rbac.RoleRule(verb, res)
			}
		}
	}
	return "", ""
}
