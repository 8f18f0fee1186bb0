package inspect

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
)

// RestartWindow is the restart window a use's workload asks for
// (restartwindow.Annotation), on a use that needs a restart: when it opens
// next, filled by NoteRestartWindows.
type RestartWindow struct {
	Value string `json:"value"`
	// Open: the window is open now; else Opens is when it opens next.
	Open  bool         `json:"open"`
	Opens *metav1.Time `json:"opens,omitempty"`
	// Error says why the value cannot be read: the controller restarts
	// nothing then.
	Error string `json:"error,omitempty"`
}

// restartWindowOf is the restart window of the pod's workload, as watch
// and the controller read it: the workload's own annotation first (a
// Deployment's, copied to its ReplicaSets by the Deployment controller),
// else the pod's (its template's). A StatefulSet's or DaemonSet's own
// annotation is not in the snapshot: only its template's shows here.
func restartWindowOf(pod *corev1.Pod, snap *Snapshot) string {
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		if ref.Kind == "ReplicaSet" && ref.Controller != nil && *ref.Controller {
			if rs := snap.ReplicaSets[NamespacedName{pod.Namespace, ref.Name}]; rs != nil && rs.Annotations[restartwindow.Annotation] != "" {
				return rs.Annotations[restartwindow.Annotation]
			}
		}
	}
	return pod.Annotations[restartwindow.Annotation]
}

// NoteRestartWindows says, on each use with a restart window, whether the
// window is open at now and else when it opens: the controller and watch
// hold the use's restart until then. Pure: now is the caller's clock.
func NoteRestartWindows(items []Use, now time.Time) {
	type parsed struct {
		s   restartwindow.Schedule
		err error
	}
	seen := map[string]parsed{} // every pod of a workload has the same value: parsed (its zone loaded) once
	for i := range items {
		w := items[i].RestartWindow
		if w == nil {
			continue
		}
		p, ok := seen[w.Value]
		if !ok {
			p.s, p.err = restartwindow.Parse(w.Value)
			seen[w.Value] = p
		}
		s, err := p.s, p.err
		switch open, next := s.Open(now); {
		case err != nil:
			w.Error = err.Error()
			items[i].Reason += "; its restart window cannot be read, so watch and the controller do not restart it: " + err.Error()
		case open:
			w.Open = true
			items[i].Reason += fmt.Sprintf("; its %s %q is open now", restartwindow.Annotation, w.Value)
		default:
			t := metav1.NewTime(next)
			w.Opens = &t
			items[i].Reason += fmt.Sprintf("; watch and the controller restart it only in its %s %q, which opens at %s",
				restartwindow.Annotation, w.Value, next.UTC().Format(time.RFC3339))
		}
	}
}

// keptOwnerAnnotations are the annotations of a ReplicaSet listed as
// metadata that the snapshot keeps: the others are dropped, to keep the
// owners small.
func keptOwnerAnnotations(a map[string]string) map[string]string {
	if v := a[restartwindow.Annotation]; v != "" {
		return map[string]string{restartwindow.Annotation: v}
	}
	return nil
}
