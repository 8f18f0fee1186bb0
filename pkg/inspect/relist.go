package inspect

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// listPageFunc sends one LIST request with lo, hands its items on (each through
// handedOn.pass), and returns the list's continue token ("" on the last
// page).
type listPageFunc func(ctx context.Context, lo metav1.ListOptions) (string, error)

// listPaged runs a paginated LIST to its end. When a page after the first
// answers 410 Expired (its continue token fell out of the API server's
// compaction window, which a long list on a busy cluster can outlast), it
// lists again from the start in one request, at the first request's
// resourceVersion, as client-go's pager does for a whole list; h then lets
// through only the items the expired pages did not already hand on.
func listPaged(ctx context.Context, lo metav1.ListOptions, h *handedOn, page listPageFunc) error {
	first := lo
	for {
		cont, err := page(ctx, lo)
		if err != nil {
			if lo.Continue == "" || !apierrors.IsResourceExpired(err) {
				return err
			}
			full := first
			full.Limit, full.Continue = 0, ""
			h.relisting = true
			_, err = page(ctx, full)
			return err
		}
		if cont == "" {
			return nil
		}
		// the next pages continue the first one's snapshot
		lo.Continue, lo.ResourceVersion, lo.ResourceVersionMatch = cont, "", ""
	}
}

// handedOn remembers the UIDs of the items a paged LIST handed on, so that
// the list started again after an expired page hands on only the others.
type handedOn struct {
	seen      map[types.UID]struct{}
	relisting bool
}

// pass reports whether the item of this UID is to be handed on, and
// remembers it.
func (h *handedOn) pass(uid types.UID) bool {
	if h.seen == nil {
		h.seen = map[types.UID]struct{}{}
	}
	if _, ok := h.seen[uid]; ok && h.relisting {
		return false
	}
	h.seen[uid] = struct{}{}
	return true
}

// eachListItem runs a paginated LIST of typed objects through listPaged and
// calls each once per object.
func eachListItem(ctx context.Context, lo metav1.ListOptions, fn func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object) error) error {
	var h handedOn
	return listPaged(ctx, lo, &h, func(ctx context.Context, lo metav1.ListOptions) (string, error) {
		list, err := fn(ctx, lo)
		if err != nil {
			return "", err
		}
		err = meta.EachListItem(list, func(obj runtime.Object) error {
			if m, err := meta.Accessor(obj); err == nil && !h.pass(m.GetUID()) {
				return nil
			}
			return each(obj)
		})
		if err != nil {
			return "", err
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return "", fmt.Errorf("the LIST did not answer a list: %w", err)
		}
		return lm.GetContinue(), nil
	})
}
