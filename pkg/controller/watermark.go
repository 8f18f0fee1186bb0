package controller

import (
	"context"
	"encoding/json"
	"sync"
	"time"

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

// readWatermark is the key Secret's watermark (zero: none, or unreadable).
func readWatermark(ctx context.Context, c kubernetes.Interface, namespace, name string) time.Time {
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, s.Annotations[AnnotationWatermark])
	return t
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
