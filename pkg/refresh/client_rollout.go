package refresh

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"k8s.io/client-go/kubernetes"
)

// ClusterRollout checks rollouts with kubectl's own status viewers, and an
// Argo Rollout's from its status (RolloutStatus).
type ClusterRollout struct{ Client kubernetes.Interface }

// RolloutDone implements RolloutChecker.
func (c ClusterRollout) RolloutDone(ctx context.Context, kind, namespace, name string) (bool, string, error) {
	if IsRollout(kind) {
		r, err := getRollout(ctx, c.Client, namespace, name)
		if err != nil {
			return false, "", err
		}
		done, msg := RolloutStatus(r)
		return done, msg, nil
	}
	var obj runtime.Object
	var err error
	gk, _ := BuiltinKind(kind) // by group and kind: another group's StatefulSet has no status here
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		obj, err = c.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		obj, err = c.Client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		obj, err = c.Client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	default:
		return false, "", fmt.Errorf("no rollout status for a %s", gk)
	}
	if err != nil {
		return false, "", err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false, "", err
	}
	viewer, err := polymorphichelpers.StatusViewerFor(gk)
	if err != nil {
		return false, "", err
	}
	msg, done, err := viewer.Status(&unstructured.Unstructured{Object: m}, 0)
	return done, msg, err
}
