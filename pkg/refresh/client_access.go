package refresh

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes"
)

// SelfAccessReviewer asks the API server with a SelfSubjectAccessReview
// (what `kubectl auth can-i` does; every authenticated user may create one).
type SelfAccessReviewer struct{ Client kubernetes.Interface }

// Allowed implements AccessReviewer.
func (r SelfAccessReviewer) Allowed(ctx context.Context, p Permission) (bool, error) {
	rev, err := r.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return rev.Status.Allowed, nil
}
