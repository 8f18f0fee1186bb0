package reconcile

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// listPage is how many objects the informers' lists ask for at a time.
const listPage = 500

// lister lists or watches one kind of object.
type lister struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// objectInformers registers in the factory the ConfigMap and Secret
// informers whose objects are trimmed as they are read: each page of a
// list before the next is asked for, each watch event as it arrives. The
// informers' own transform would trim them only once the whole list is
// decoded, and a reflector's first list (resourceVersion 0, served by the
// API server's watch cache, which ignores the limit) comes whole: the
// controller then held every ConfigMap's and Secret's data at once while
// starting, twice (the response and the objects), and its RSS stayed
// there long after.
func (l *Loop) objectInformers(factory informers.SharedInformerFactory) {
	ns := l.Namespace
	kinds := map[runtime.Object]lister{
		&corev1.ConfigMap{}: {
			list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return l.Client.CoreV1().ConfigMaps(ns).List(ctx, o)
			},
			watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return l.Client.CoreV1().ConfigMaps(ns).Watch(ctx, o)
			},
		},
	}
	if l.watchSecrets() { // the factory starts every informer it holds: none for Secrets unless they are watched
		kinds[&corev1.Secret{}] = lister{
			list: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return l.Client.CoreV1().Secrets(ns).List(ctx, o)
			},
			watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return l.Client.CoreV1().Secrets(ns).Watch(ctx, o)
			},
		}
	}
	for obj, ls := range kinds {
		factory.InformerFor(obj, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			lw := &cache.ListWatch{
				ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
					l.objectListOptions(&o)
					return trimmedList(ctx, o, ls.list)
				},
				WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
					l.objectListOptions(&o)
					w, err := ls.watch(ctx, o)
					if err != nil {
						return nil, err
					}
					return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
						e.Object, _ = trimObject(e.Object)
						return e, true
					}), nil
				},
			}
			return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), obj, cache.SharedIndexInformerOptions{
				ResyncPeriod: resync,
				Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			})
		})
	}
}

// trimmedList lists page by page (listPage objects), trimming each page's
// objects before it asks for the next, and returns them as one list at the
// resourceVersion of the first page (a paged list is one consistent
// snapshot). A list at resourceVersion 0 (the reflector's first) is asked
// for as a consistent read instead: the watch cache answers 0 whole,
// whatever the limit; a consistent read is as new or newer, which is what
// 0 asks for.
func trimmedList(ctx context.Context, o metav1.ListOptions, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) (runtime.Object, error) {
	if o.ResourceVersion == "0" {
		o.ResourceVersion, o.ResourceVersionMatch = "", ""
	}
	o.Limit = listPage
	var first runtime.Object
	var items []runtime.Object
	for {
		page, err := list(ctx, o)
		if err != nil {
			return nil, err
		}
		objs, err := meta.ExtractList(page)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			obj, _ = trimObject(obj)
			items = append(items, obj)
		}
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		next := lm.GetContinue()
		if first == nil {
			first = page
		}
		if next == "" {
			break
		}
		o.Continue, o.ResourceVersion, o.ResourceVersionMatch = next, "", ""
	}
	if err := meta.SetList(first, items); err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(first)
	lm.SetContinue("")
	lm.SetRemainingItemCount(nil)
	return first, nil
}

// trimObject is trim for a runtime.Object.
func trimObject(obj runtime.Object) (runtime.Object, error) {
	out, err := trim(obj)
	if o, ok := out.(runtime.Object); ok {
		return o, err
	}
	return obj, err
}
