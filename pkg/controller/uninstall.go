package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// Uninstall removes what the controller keeps in the cluster besides its
// own manifests: the records (reconcile.AnnotationApplied) on the
// Deployments, StatefulSets, DaemonSets, Argo Rollouts and pods of Namespace ("" for
// all), the refresh annotation on pods (refresh.RefreshedAtAnnotation:
// removing it restarts nothing), and, for all namespaces, the key Secret
// with its watermark and the Lease. It leaves
// kubectl.kubernetes.io/restartedAt on the templates: it is kubectl's, and
// removing it would roll every workload once more.
type Uninstall struct {
	Client kubernetes.Interface
	// Rollouts, when set, is the Argo Rollouts resource of a namespace
	// (refresh.RolloutsOf): their records go too. A cluster without the
	// Rollout CRD has none.
	Rollouts                           func(namespace string) dynamic.ResourceInterface
	Namespace                          string
	KeyNamespace, KeySecret, LeaseName string
	DryRun                             bool
	Done                               func(what string) // told of each change, as it is made
	changed                            int
}

// UninstallError says where an uninstall stopped: what it changed before
// and what is left, and how to finish.
type UninstallError struct {
	Changed int
	Err     error
}

func (e *UninstallError) Error() string {
	return fmt.Sprintf("%v; %d changes were made before it stopped, the rest were not: run the same command again to finish (it only removes what is still there)", e.Err, e.Changed)
}

func (e *UninstallError) Unwrap() error { return e.Err }

// Run removes them, each object once, and returns how many it changed.
func (u *Uninstall) Run(ctx context.Context) (int, error) {
	steps := []func(context.Context) error{u.workloads, u.rollouts, u.pods, u.objects}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return u.changed, &UninstallError{Changed: u.changed, Err: err}
		}
	}
	return u.changed, nil
}

func (u *Uninstall) patchOptions() metav1.PatchOptions {
	o := metav1.PatchOptions{FieldManager: version.FieldManager}
	if u.DryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

// removal is the merge patch that removes the annotations keys.
func removal(keys ...string) []byte {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q:null", k)
	}
	return []byte(`{"metadata":{"annotations":{` + strings.Join(parts, ",") + `}}}`)
}

// workloads removes the records of Deployments, StatefulSets and DaemonSets.
func (u *Uninstall) workloads(ctx context.Context) error {
	objs, err := listWorkloads(ctx, u.Client, u.Namespace)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, ok := o.meta.Annotations[reconcile.AnnotationApplied]; !ok {
			continue
		}
		err := patchWorkload(ctx, u.Client, o, types.MergePatchType, removal(reconcile.AnnotationApplied), u.patchOptions())
		if apierrors.IsNotFound(err) {
			continue // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("removing the record of %s/%s -n %s: %w", strings.ToLower(o.kind), o.meta.Name, o.meta.Namespace, err)
		}
		u.tell(fmt.Sprintf("%s/%s -n %s: record removed", strings.ToLower(o.kind), o.meta.Name, o.meta.Namespace))
	}
	return nil
}

// rollouts removes the records of Argo Rollouts, where their CRD is
// installed.
func (u *Uninstall) rollouts(ctx context.Context) error {
	if u.Rollouts == nil {
		return nil
	}
	l, err := u.Rollouts(u.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil // no Rollout CRD: no Rollout
	}
	if err != nil {
		return fmt.Errorf("listing rollouts: %w", err)
	}
	for _, r := range l.Items {
		if _, ok := r.GetAnnotations()[reconcile.AnnotationApplied]; !ok {
			continue
		}
		_, err := u.Rollouts(r.GetNamespace()).Patch(ctx, r.GetName(), types.MergePatchType, removal(reconcile.AnnotationApplied), u.patchOptions())
		if apierrors.IsNotFound(err) {
			continue // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("removing the record of rollout/%s -n %s: %w", r.GetName(), r.GetNamespace(), err)
		}
		u.tell(fmt.Sprintf("rollout/%s -n %s: record removed", r.GetName(), r.GetNamespace()))
	}
	return nil
}

// pods removes the records and refresh annotations of pods.
func (u *Uninstall) pods(ctx context.Context) error {
	l, err := u.Client.CoreV1().Pods(u.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range l.Items {
		var keys []string
		for _, k := range []string{reconcile.AnnotationApplied, refresh.RefreshedAtAnnotation} {
			if _, ok := p.Annotations[k]; ok {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		_, err := u.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, removal(keys...), u.patchOptions())
		if apierrors.IsNotFound(err) {
			continue // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("removing %s from pod/%s -n %s: %w", strings.Join(keys, " and "), p.Name, p.Namespace, err)
		}
		u.tell(fmt.Sprintf("pod/%s -n %s: %s removed", p.Name, p.Namespace, strings.Join(keys, " and ")))
	}
	return nil
}

// objects deletes the key Secret and the Lease, when every namespace is
// uninstalled: they serve the records of all of them.
func (u *Uninstall) objects(ctx context.Context) error {
	if u.Namespace != "" {
		return nil
	}
	o := metav1.DeleteOptions{}
	if u.DryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	err := u.Client.CoreV1().Secrets(u.KeyNamespace).Delete(ctx, u.KeySecret, o)
	switch {
	case err == nil:
		u.tell(fmt.Sprintf("secret/%s -n %s: deleted (the key of the records and the watermark)", u.KeySecret, u.KeyNamespace))
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("deleting secret/%s -n %s: %w", u.KeySecret, u.KeyNamespace, err)
	}
	err = u.Client.CoordinationV1().Leases(u.KeyNamespace).Delete(ctx, u.LeaseName, o)
	switch {
	case err == nil:
		u.tell(fmt.Sprintf("lease/%s -n %s: deleted", u.LeaseName, u.KeyNamespace))
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("deleting lease/%s -n %s: %w", u.LeaseName, u.KeyNamespace, err)
	}
	return nil
}

// tell counts one change made and reports it.
func (u *Uninstall) tell(what string) {
	u.changed++
	if u.Done != nil {
		u.Done(what)
	}
}
