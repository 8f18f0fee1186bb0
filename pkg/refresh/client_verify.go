package refresh

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// ClusterVerifier re-reads one namespace and verifies the uses of the given
// objects by running pods (terminating pods are left out).
type ClusterVerifier struct {
	Client   kubernetes.Interface
	Executor inspect.Executor
	Verify   inspect.VerifyOptions
	Secrets  bool
	// PodSelector is the user's -l: pods outside it are never touched.
	PodSelector string
}

// VerifyPods implements Verifier.
func (c ClusterVerifier) VerifyPods(ctx context.Context, namespace string, objects []inspect.ObjectKey, want func(inspect.Item) bool) ([]inspect.Item, error) {
	snap, err := inspect.Load(ctx, c.Client, inspect.LoadOptions{Namespace: namespace, PodSelector: c.PodSelector, Secrets: c.Secrets || inspect.NamesSecret(objects)})
	if err != nil {
		return nil, err
	}
	live := snap.Pods[:0]
	for _, p := range snap.Pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
	}
	snap.Pods = live
	return c.verify(ctx, snap, objects, want)
}

// verify reads by exec the uses of objects in snap that want picks.
func (c ClusterVerifier) verify(ctx context.Context, snap *inspect.Snapshot, objects []inspect.ObjectKey, want func(inspect.Item) bool) ([]inspect.Item, error) {
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: objects, Secrets: true, IncludeSystem: true})
	if err != nil {
		return nil, err
	}
	var picked []inspect.Item
	for _, it := range items {
		if want(it) {
			picked = append(picked, it)
		}
	}
	return inspect.Verify(ctx, picked, snap, c.Executor, c.Verify), nil
}

// VerifyPod implements Verifier: one GET of the pod and one of each
// object, then one exec per consuming container. A pod that no longer
// exists (or left -l) yields no items: the wait says its uses are gone.
func (c ClusterVerifier) VerifyPod(ctx context.Context, namespace, pod string, objects []inspect.ObjectKey) ([]inspect.Item, error) {
	p, err := c.Client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c.PodSelector != "" {
		sel, err := labels.Parse(c.PodSelector)
		if err != nil {
			return nil, err
		}
		if !sel.Matches(labels.Set(p.Labels)) {
			return nil, nil
		}
	}
	snap, err := c.podSnapshot(ctx, p, objects)
	if err != nil {
		return nil, err
	}
	return c.verify(ctx, snap, objects, func(it inspect.Item) bool { return it.Pod.Name == pod && it.Object.Namespace == namespace })
}

// podSnapshot is the snapshot of one pod: the pod, the objects asked for,
// and every other ConfigMap and Secret its spec references (the sibling
// sources of a projected volume, the other envFrom sources): without them
// a sibling's files would look removed from the API. A Secret is read only
// when Secrets may be (--secrets, or one of the objects is a Secret it
// names); otherwise it is marked unread, never taken for absent.
func (c ClusterVerifier) podSnapshot(ctx context.Context, p *corev1.Pod, objects []inspect.ObjectKey) (*inspect.Snapshot, error) {
	snap := &inspect.Snapshot{Pods: []corev1.Pod{*p}, ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{},
		Secrets: map[inspect.ObjectKey]*corev1.Secret{}, SecretsListed: true, Unread: map[inspect.ObjectKey]bool{}}
	asked := map[inspect.ObjectKey]bool{}
	keys := append([]inspect.ObjectKey{}, objects...)
	for _, k := range objects {
		asked[k] = true
	}
	for _, it := range inspect.Uses(p) {
		if k := it.Key(); !asked[k] {
			asked[k] = true
			keys = append(keys, k)
		}
	}
	readSecrets := c.Secrets || inspect.NamesSecret(objects)
	for _, k := range keys {
		switch k.Kind {
		case inspect.KindConfigMap:
			cm, err := c.Client.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err) && !slices.Contains(objects, k):
				// another source of the pod's volumes that a Role limited
				// by resourceNames does not grant: unknown, never absent
				snap.Unread[k] = true
			case err != nil:
				return nil, err
			default:
				snap.ConfigMaps[k] = cm
			}
		case inspect.KindSecret:
			if !readSecrets {
				snap.Unread[k] = true
				continue
			}
			sec, err := c.Client.CoreV1().Secrets(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err):
				snap.Unread[k] = true // the uses say the Secret was not read
			case err != nil:
				return nil, err
			default:
				snap.Secrets[k] = sec
			}
		}
	}
	return snap, nil
}
