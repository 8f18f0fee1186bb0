package reconcile

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// objectListOptions has the ConfigMap and Secret informers list and watch
// only the objects Scope.Objects selects: the others are never cached.
func (l *Loop) objectListOptions(o *metav1.ListOptions) {
	if l.Scope.Objects != nil {
		o.LabelSelector = l.Scope.Objects.String()
	}
}

// namespaceListOptions has the namespace informer watch only the
// namespace of -n, when one is given.
func (l *Loop) namespaceListOptions(o *metav1.ListOptions) {
	if l.Namespace != "" {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", l.Namespace).String()
	}
}

// watchNamespaces starts the informer on Namespaces that Scope.Namespaces
// is judged with, each round: a namespace labelled into scope is handled
// from its next change on, one labelled out of it no longer is.
func (l *Loop) watchNamespaces(ctx context.Context) cache.InformerSynced {
	factory := informers.NewSharedInformerFactoryWithOptions(l.Client, 0, informers.WithTransform(trim),
		informers.WithTweakListOptions(l.namespaceListOptions))
	inf := factory.Core().V1().Namespaces()
	_ = inf.Informer().SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		l.emit(Event{Kind: EventError, Message: fmt.Sprintf("watching Namespaces: %v (retried; labels changed meanwhile are seen once it is back)", err)})
	})
	lister := inf.Lister()
	l.namespaceLabels = func(ns string) (map[string]string, bool) {
		n, err := lister.Get(ns)
		if err != nil {
			return nil, false
		}
		return n.Labels, true
	}
	factory.Start(ctx.Done())
	go func() { <-ctx.Done(); factory.Shutdown() }()
	return inf.Informer().HasSynced
}

// namespaceOutOfScope says why ns is not handled now ("" when it is).
func (l *Loop) namespaceOutOfScope(ns string) string {
	var nsLabels map[string]string
	known := l.namespaceLabels != nil
	if known {
		nsLabels, known = l.namespaceLabels(ns)
	}
	return l.Scope.NamespaceOutOfScope(ns, nsLabels, known)
}

// ignoreOutOfScope reports each change of a namespace out of scope as
// ignored; false when ns is in scope.
func (l *Loop) ignoreOutOfScope(ns string, changes map[inspect.ObjectKey]*pending, keys []inspect.ObjectKey) bool {
	why := l.namespaceOutOfScope(ns)
	if why == "" {
		return false
	}
	for _, k := range keys {
		l.ignored(k, changes[k], why)
	}
	return true
}

// ignored reports a change out of scope as ignored, unless it is only the
// start's check of an existing object (nothing changed to report).
func (l *Loop) ignored(k inspect.ObjectKey, p *pending, why string) {
	if !p.existing {
		l.emit(Event{Kind: EventIgnored, Object: &k, Keys: p.change.Keys, Message: why})
	}
}

// objectsInScope drops, and reports as ignored, the changes of objects the
// snapshot holds with labels out of Scope.Objects: an object whose labels
// stop matching leaves the informers' caches as if deleted, and must not
// be acted on as deleted.
func (l *Loop) objectsInScope(snap *inspect.Snapshot, changes map[inspect.ObjectKey]*pending, keys []inspect.ObjectKey) (map[inspect.ObjectKey]*pending, []inspect.ObjectKey) {
	if l.Scope.Objects == nil {
		return changes, keys
	}
	kept := map[inspect.ObjectKey]*pending{}
	var keptKeys []inspect.ObjectKey // in the order of keys, which are sorted
	for _, k := range keys {
		if why := l.objectOutOfScope(snap, k); why != "" {
			l.ignored(k, changes[k], why)
			continue
		}
		kept[k] = changes[k]
		keptKeys = append(keptKeys, k)
	}
	return kept, keptKeys
}

// objectOutOfScope says why the snapshot's object k is not handled ("" when
// it is, or when it does not exist: a missing object is missing).
func (l *Loop) objectOutOfScope(snap *inspect.Snapshot, k inspect.ObjectKey) string {
	var objLabels map[string]string
	switch {
	case snap.ConfigMaps[k] != nil:
		objLabels = snap.ConfigMaps[k].Labels
	case snap.Secrets[k] != nil:
		objLabels = snap.Secrets[k].Labels
	default:
		return ""
	}
	return l.Scope.ObjectOutOfScope(k.Kind, objLabels)
}

// scopeMessage is the scope, as the ready line says it.
func (l *Loop) scopeMessage() string {
	var parts []string
	if l.Scope.Namespaces != nil {
		parts = append(parts, fmt.Sprintf("namespaces labelled %q", l.Scope.Namespaces.String()))
	}
	if len(l.Scope.IgnoreNamespaces) > 0 {
		parts = append(parts, "not namespaces "+strings.Join(l.Scope.IgnoreNamespaces, ", "))
	}
	if l.Scope.Objects != nil {
		parts = append(parts, fmt.Sprintf("objects labelled %q", l.Scope.Objects.String()))
	}
	if len(l.Scope.IgnoreKinds) > 0 {
		parts = append(parts, "not through "+strings.Join(l.Scope.IgnoreKinds, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (only " + strings.Join(parts, "; ") + ")"
}
