package refresh

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ClientEvictor evicts through client-go's policy/v1 Eviction API.
type ClientEvictor struct{ Client kubernetes.Interface }

// Evict implements Evictor.
func (c ClientEvictor) Evict(ctx context.Context, namespace, name, uid string, dryRun bool) error {
	do := &metav1.DeleteOptions{}
	if uid != "" {
		u := types.UID(uid)
		do.Preconditions = &metav1.Preconditions{UID: &u}
	}
	if dryRun {
		do.DryRun = []string{metav1.DryRunAll}
	}
	return c.Client.PolicyV1().Evictions(namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, DeleteOptions: do})
}

// WorkloadPods implements Evictor with the one workload-pod listing
// (ClientWorkloads).
func (c ClientEvictor) WorkloadPods(ctx context.Context, kind, namespace, name string) ([]WorkloadPod, error) {
	return ClientWorkloads{Client: c.Client}.WorkloadPods(ctx, kind, namespace, name)
}
