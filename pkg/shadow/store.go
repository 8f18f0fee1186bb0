package shadow

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// The record: one ConfigMap, its rows as JSON lines under RecordKey, the
// count of rows its cap dropped in DroppedAnnotation.
const (
	DefaultRecordName = "cmsync-shadow"
	RecordKey         = "records.jsonl"
	DroppedAnnotation = "kubectl-cmsync.io/shadow-dropped"
	// DefaultRecordMax keeps the record well under a ConfigMap's 1 MiB.
	DefaultRecordMax = 512 << 10
)

// Store keeps the record.
type Store interface {
	Append(ctx context.Context, rows []Row) error
	Read(ctx context.Context) (rows []Row, dropped int, err error)
}

// ConfigMapStore keeps the record in a ConfigMap.
type ConfigMapStore struct {
	Client          kubernetes.Interface
	Namespace, Name string
	// Max is the record's size in bytes (default DefaultRecordMax).
	Max int
}

// Append adds rows, the oldest dropped past Max, and creates the
// ConfigMap the first time.
func (s ConfigMapStore) Append(ctx context.Context, rows []Row) error {
	lines, err := Lines(rows)
	if err != nil || len(lines) == 0 {
		return err
	}
	max := s.Max
	if max <= 0 {
		max = DefaultRecordMax
	}
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			rec, dropped := Cap("", lines, max)
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "kubectl-cmsync"},
				Annotations: map[string]string{DroppedAnnotation: strconv.Itoa(dropped)}}, Data: map[string]string{RecordKey: rec}}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: version.FieldManager})
			return err
		}
		if err != nil {
			return err
		}
		rec, dropped := Cap(cm.Data[RecordKey], lines, max)
		before, _ := strconv.Atoi(cm.Annotations[DroppedAnnotation])
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Data[RecordKey] = rec
		cm.Annotations[DroppedAnnotation] = strconv.Itoa(before + dropped)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: version.FieldManager})
		return err
	})
}

// Read reads the record.
func (s ConfigMapStore) Read(ctx context.Context) ([]Row, int, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return nil, 0, err
	}
	rows, unreadable := ParseRecord(cm.Data[RecordKey])
	dropped, _ := strconv.Atoi(cm.Annotations[DroppedAnnotation])
	if unreadable > 0 && len(rows) == 0 {
		return nil, dropped, fmt.Errorf("configmap %s/%s holds no shadow row this version can read (%d lines): is it a shadow record?", s.Namespace, s.Name, unreadable)
	}
	return rows, dropped, nil
}
