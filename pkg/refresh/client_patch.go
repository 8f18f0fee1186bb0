package refresh

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// ClientPatcher patches through client-go.
type ClientPatcher struct{ Client kubernetes.Interface }

// Patch implements Patcher. The object is matched by API group and kind:
// a kind the plan qualifies with another group (a StatefulSet of
// apps.kruise.io) is refused, never sent to the built-in resource of the
// same name.
func (p ClientPatcher) Patch(ctx context.Context, t Target, pt types.PatchType, patch []byte, dryRun bool) error {
	o := metav1.PatchOptions{FieldManager: version.FieldManager}
	if dryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	if IsRollout(t.Kind) {
		_, err := rollouts(p.Client, t.Namespace).Patch(ctx, t.Name, pt, patch, o)
		return err
	}
	gk, ok := BuiltinKind(t.Kind)
	if !ok {
		return fmt.Errorf("cannot patch a %s: not a built-in kind", gk)
	}
	var err error
	switch gk {
	case schema.GroupKind{Kind: "Pod"}:
		_, err = p.Client.CoreV1().Pods(t.Namespace).Patch(ctx, t.Name, pt, patch, o)
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		_, err = p.Client.AppsV1().Deployments(t.Namespace).Patch(ctx, t.Name, pt, patch, o)
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		_, err = p.Client.AppsV1().StatefulSets(t.Namespace).Patch(ctx, t.Name, pt, patch, o)
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		_, err = p.Client.AppsV1().DaemonSets(t.Namespace).Patch(ctx, t.Name, pt, patch, o)
	default:
		err = fmt.Errorf("cannot patch a %s", gk)
	}
	return err
}
