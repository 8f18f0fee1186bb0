package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// AnnotationWatermark on the key Secret is the time (RFC 3339, the API
// server's clock) up to which a leader acted on every change of the objects
// it watches. A new leader checks the consumers with no record whose
// objects changed since (reconcile.Config.Watermark); none is written
// until a leader acted, which tells a first install from a resume.
const AnnotationWatermark = "kubectl-cmsync.io/acted-until"

// watermarkEvery is the least time between two writes of the watermark.
const watermarkEvery = 10 * time.Second

// watermarkUnknown is the watermark of a leader that could not read it: a
// time before any change, so that every consumer with no record whose
// object changed is checked (verified, restarted only if stale), never
// recorded as current.
var watermarkUnknown = time.Unix(0, 0).UTC()

// readWatermark is the key Secret's watermark: zero when it has none (no
// leader acted with this key: a first install), watermarkUnknown when it
// cannot be read or parsed (after three tries), with the error.
func readWatermark(ctx context.Context, c kubernetes.Interface, namespace, name string) (time.Time, error) {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return watermarkUnknown, ctx.Err()
			case <-time.After(time.Second << attempt):
			}
		}
		var s *corev1.Secret
		if s, err = c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			continue
		}
		v, ok := s.Annotations[AnnotationWatermark]
		if !ok {
			return time.Time{}, nil
		}
		t, perr := time.Parse(time.RFC3339Nano, v)
		if perr != nil {
			return watermarkUnknown, fmt.Errorf("%s %q: %w", AnnotationWatermark, v, perr)
		}
		return t, nil
	}
	return watermarkUnknown, err
}

// watermarkWriter writes the watermark on the key Secret, at most once per
// watermarkEvery and only forward; a failed write is tried again at the
// next step (the watermark only ever lags, which costs checks, not
// changes).
type watermarkWriter struct {
	client          kubernetes.Interface
	namespace, name string
	clock           func() time.Time
	report          func(error)

	mu      sync.Mutex
	written time.Time // the value written last
	at      time.Time // when (clock)
}

func (w *watermarkWriter) acted(ctx context.Context, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !until.After(w.written) || (!w.at.IsZero() && w.clock().Sub(w.at) < watermarkEvery) {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		AnnotationWatermark: until.UTC().Format(time.RFC3339Nano)}}})
	_, err := w.client.CoreV1().Secrets(w.namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: version.FieldManager})
	if err != nil {
		if ctx.Err() == nil && w.report != nil {
			w.report(err)
		}
		return
	}
	w.written, w.at = until, w.clock()
}
