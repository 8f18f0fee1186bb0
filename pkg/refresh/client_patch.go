package refresh

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ClientPatcher patches through client-go.
type ClientPatcher struct{ Client kubernetes.Interface }

// Patch implements Patcher.
func (p ClientPatcher) Patch(ctx context.Context, kind, namespace, name string, pt types.PatchType, patch []byte, dryRun bool) error {
	o := metav1.PatchOptions{FieldManager: "kubectl-cmsync"}
	if dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch kind {
	case "Pod":
		_, err = p.Client.CoreV1().Pods(namespace).Patch(ctx, name, pt, patch, o)
	case "Deployment":
		_, err = p.Client.AppsV1().Deployments(namespace).Patch(ctx, name, pt, patch, o)
	case "StatefulSet":
		_, err = p.Client.AppsV1().StatefulSets(namespace).Patch(ctx, name, pt, patch, o)
	case "DaemonSet":
		_, err = p.Client.AppsV1().DaemonSets(namespace).Patch(ctx, name, pt, patch, o)
	default:
		err = fmt.Errorf("cannot patch a %s", kind)
	}
	return err
}
