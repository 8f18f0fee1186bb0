package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// movedManagers returns entries with the Update entries of
// version.OtherFieldManagers owned by version.FieldManager instead: each is
// renamed, or merged into the Update entry FieldManager has (or was given)
// for the same apiVersion and subresource. moved is false when there was
// none.
func movedManagers(entries []metav1.ManagedFieldsEntry) (out []metav1.ManagedFieldsEntry, moved bool, err error) {
	out = make([]metav1.ManagedFieldsEntry, len(entries))
	mine := map[string]int{} // apiVersion/subresource -> index in out of FieldManager's Update entry
	for i, e := range entries {
		out[i] = *e.DeepCopy()
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Manager == version.FieldManager {
			mine[e.APIVersion+"/"+e.Subresource] = i
		}
	}
	drop := make([]bool, len(out))
	for i, e := range out {
		if e.Operation != metav1.ManagedFieldsOperationUpdate || e.Manager == version.FieldManager || !slices.Contains(version.OtherFieldManagers, e.Manager) {
			continue
		}
		moved = true
		key := e.APIVersion + "/" + e.Subresource
		j, ok := mine[key]
		if !ok {
			out[i].Manager = version.FieldManager
			mine[key] = i
			continue
		}
		if err := unionFields(&out[j], e); err != nil {
			return nil, false, err
		}
		drop[i] = true
	}
	keep := out[:0]
	for i, e := range out {
		if !drop[i] {
			keep = append(keep, e)
		}
	}
	return keep, moved, nil
}

// unionFields adds the fields of e to into's, keeping the later time.
func unionFields(into *metav1.ManagedFieldsEntry, e metav1.ManagedFieldsEntry) error {
	a, b := &fieldpath.Set{}, &fieldpath.Set{}
	if into.FieldsV1 != nil {
		if err := a.FromJSON(bytes.NewReader(into.FieldsV1.Raw)); err != nil {
			return err
		}
	}
	if e.FieldsV1 != nil {
		if err := b.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return err
		}
	}
	raw, err := a.Union(b).ToJSON()
	if err != nil {
		return err
	}
	into.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	into.FieldsType = "FieldsV1"
	if e.Time != nil && (into.Time == nil || into.Time.Before(e.Time)) {
		into.Time = e.Time
	}
	return nil
}

// managedFieldsPatch is a JSON patch that sets managedFields, on the
// condition that the object is still at resourceVersion: the patched
// object carries it, so the API server refuses the write (409 Conflict)
// when the object changed since it was read.
func managedFieldsPatch(resourceVersion string, entries []metav1.ManagedFieldsEntry) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": resourceVersion},
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
	})
}

// MoveFieldManagers gives version.FieldManager the fields that other
// builds of cmsync own on the workloads of namespace ("" for all): the
// restart annotations and records they wrote. Under their names, Flux
// takes those fields over and drops them on its next apply. It returns how
// many workloads it changed and the ones it could not (each named in the
// error); an object that changed meanwhile is left for the next start.
//
// It also returns the restarts under way that cmsync sent (a template
// restartedAt, or a Rollout's spec.restartAt, that version.FieldManager
// or another build of cmsync owns, on a workload whose rollout may not be
// complete), with when they were sent: a new leader counts them against
// --max-concurrent-restarts until it sees their rollouts complete. The
// Argo Rollouts are read through rollouts (nil, or a cluster that serves
// no Rollout CRD: none); their fields are not moved.
func MoveFieldManagers(ctx context.Context, c kubernetes.Interface, rollouts func(namespace string) dynamic.ResourceInterface, namespace string) (int, map[refresh.Target]time.Time, error) {
	objs, err := listWorkloads(ctx, c, namespace)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	var errs []error
	underWay := map[refresh.Target]time.Time{}
	for _, o := range objs {
		if at, ok := restartUnderWay(o); ok {
			underWay[refresh.Target{Kind: o.kind, Namespace: o.meta.Namespace, Name: o.meta.Name}] = at
		}
		changed, err := moveManagersOf(ctx, c, o)
		if err != nil { // one refusal (a webhook, a policy) does not keep the others
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", o.kind, o.meta.Namespace, o.meta.Name, err))
		}
		if changed {
			n++
		}
	}
	argo, err := rolloutsUnderWay(ctx, rollouts, namespace)
	if err != nil {
		errs = append(errs, err)
	}
	maps.Copy(underWay, argo)
	return n, underWay, errors.Join(errs...)
}

// rolloutsUnderWay are the Argo Rollouts of namespace ("" for all) whose
// restart cmsync sent may be under way (restartUnderWay), with when it was
// sent; none where the Rollout CRD is not served.
func rolloutsUnderWay(ctx context.Context, rollouts func(namespace string) dynamic.ResourceInterface, namespace string) (map[refresh.Target]time.Time, error) {
	out := map[refresh.Target]time.Time{}
	if rollouts == nil {
		return out, nil
	}
	l, err := rollouts(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return out, nil // no Rollout CRD: no Rollout
	}
	if err != nil {
		return out, fmt.Errorf("listing rollouts: %w", err)
	}
	var errs []error
	for i := range l.Items {
		u := &l.Items[i]
		restartedAt, rolling, err := refresh.RolloutRestart(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := workloadMeta{refresh.RolloutKind, metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), ManagedFields: u.GetManagedFields()}, restartedAt, rolling}
		if at, ok := restartUnderWay(o); ok {
			out[refresh.Target{Kind: refresh.RolloutKind, Namespace: o.meta.Namespace, Name: o.meta.Name}] = at
		}
	}
	return out, errors.Join(errs...)
}

// restartedAtPath is the template's restart annotation in managedFields,
// and restartAtPath a Rollout's spec.restartAt (how cmsync restarts a
// Rollout by default).
var (
	restartedAtPath = fieldpath.MakePathOrDie("spec", "template", "metadata", "annotations", refresh.RestartedAtAnnotation)
	restartAtPath   = fieldpath.MakePathOrDie("spec", "restartAt")
)

// restartUnderWay tells whether o's rollout may be under way after a
// restart cmsync sent (the restart field it owns), and when that restart
// was sent.
func restartUnderWay(o workloadMeta) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339, o.restartedAt)
	if !o.rolling || err != nil {
		return time.Time{}, false
	}
	for _, e := range o.meta.ManagedFields {
		if e.Manager != version.FieldManager && !slices.Contains(version.OtherFieldManagers, e.Manager) || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) == nil && (set.Has(restartedAtPath) || set.Has(restartAtPath)) {
			return at, true
		}
	}
	return time.Time{}, false
}

// workloadMeta is the metadata of one Deployment, StatefulSet, DaemonSet
// or Argo Rollout, with its last restart (its template's restartedAt; a
// Rollout's spec.restartAt when later) and whether a rollout of it may be
// under way (rolling: its status does not show every replica updated and
// available; a Rollout's restart is not done).
type workloadMeta struct {
	kind        string
	meta        metav1.ObjectMeta
	restartedAt string
	rolling     bool
}

// listWorkloads lists the Deployments, StatefulSets and DaemonSets of
// namespace ("" for all).
func listWorkloads(ctx context.Context, c kubernetes.Interface, namespace string) ([]workloadMeta, error) {
	var objs []workloadMeta
	deps, err := c.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	for _, d := range deps.Items {
		st := d.Status
		rolling := st.ObservedGeneration < d.Generation || st.UpdatedReplicas < st.Replicas || st.AvailableReplicas < st.UpdatedReplicas ||
			(d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas)
		objs = append(objs, workloadMeta{"Deployment", d.ObjectMeta, d.Spec.Template.Annotations[refresh.RestartedAtAnnotation], rolling})
	}
	sts, err := c.AppsV1().StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing statefulsets: %w", err)
	}
	for _, s := range sts.Items {
		st := s.Status
		rolling := st.ObservedGeneration < s.Generation || st.UpdateRevision != st.CurrentRevision || st.ReadyReplicas < st.Replicas
		objs = append(objs, workloadMeta{"StatefulSet", s.ObjectMeta, s.Spec.Template.Annotations[refresh.RestartedAtAnnotation], rolling})
	}
	dss, err := c.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing daemonsets: %w", err)
	}
	for _, d := range dss.Items {
		st := d.Status
		rolling := st.ObservedGeneration < d.Generation || st.UpdatedNumberScheduled < st.DesiredNumberScheduled || st.NumberAvailable < st.DesiredNumberScheduled
		objs = append(objs, workloadMeta{"DaemonSet", d.ObjectMeta, d.Spec.Template.Annotations[refresh.RestartedAtAnnotation], rolling})
	}
	return objs, nil
}

// patchWorkload sends one patch to the workload o names.
func patchWorkload(ctx context.Context, c kubernetes.Interface, o workloadMeta, pt types.PatchType, patch []byte, opts metav1.PatchOptions) error {
	var err error
	switch o.kind {
	case "Deployment":
		_, err = c.AppsV1().Deployments(o.meta.Namespace).Patch(ctx, o.meta.Name, pt, patch, opts)
	case "StatefulSet":
		_, err = c.AppsV1().StatefulSets(o.meta.Namespace).Patch(ctx, o.meta.Name, pt, patch, opts)
	case "DaemonSet":
		_, err = c.AppsV1().DaemonSets(o.meta.Namespace).Patch(ctx, o.meta.Name, pt, patch, opts)
	default:
		err = fmt.Errorf("not a workload kind: %s", o.kind)
	}
	return err
}

func moveManagersOf(ctx context.Context, c kubernetes.Interface, o workloadMeta) (bool, error) {
	entries, moved, err := movedManagers(o.meta.ManagedFields)
	if err != nil || !moved {
		return false, err
	}
	patch, err := managedFieldsPatch(o.meta.ResourceVersion, entries)
	if err != nil {
		return false, err
	}
	err = patchWorkload(ctx, c, o, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: version.FieldManager})
	if apierrors.IsConflict(err) {
		return false, nil // changed meanwhile: the next start moves it
	}
	return err == nil, err
}
