package lint

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Getter reads one ConfigMap or Secret from the cluster: the small
// interface at the I/O edge of --cluster.
type Getter interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// ClientGetter is a Getter over a clientset (one GET per object).
type ClientGetter struct{ Client kubernetes.Interface }

func (g ClientGetter) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return g.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g ClientGetter) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return g.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// LookUp asks the cluster about each key: found, absent (NotFound), or
// not known (any other error, such as Forbidden). Secret values are read to
// check keys and never leave the process.
func LookUp(ctx context.Context, g Getter, keys []inspect.ObjectKey) map[inspect.ObjectKey]Lookup {
	out := map[inspect.ObjectKey]Lookup{}
	for _, k := range keys {
		var l Lookup
		switch k.Kind {
		case inspect.KindConfigMap:
			cm, err := g.ConfigMap(ctx, k.Namespace, k.Name)
			if err == nil {
				l.ConfigMap = cm
			} else if !apierrors.IsNotFound(err) {
				l.Err = err
			}
		case inspect.KindSecret:
			s, err := g.Secret(ctx, k.Namespace, k.Name)
			if err == nil {
				l.Secret = s
			} else if !apierrors.IsNotFound(err) {
				l.Err = err
			}
		}
		out[k] = l
	}
	return out
}
