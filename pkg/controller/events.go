package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// Component is the source of the controller's Kubernetes Events.
const Component = "kubectl-cmsync-controller"

// Event reasons on the workloads and pods the controller acts on.
const (
	ReasonRefreshing      = "Refreshing"      // an annotation, restart or eviction is sent
	ReasonRefreshed       = "Refreshed"       // verified current (or applied, where it cannot be verified)
	ReasonRefreshFailed   = "RefreshFailed"   // failed, timed out, or not applied
	ReasonRestartDeferred = "RestartDeferred" // held back: a rollout under way, or the restart limit
	ReasonRefreshError    = "RefreshError"    // a stuck rollout, a record that could not be written
	ReasonDoubleRestart   = "DoubleRestart"   // restarted by cmsync and by a peer (Reloader) for one change
)

// EventPoster posts the Kubernetes Event of each loop event about an object
// the controller acted on (record.EventRecorder: aggregated, rate-limited).
type EventPoster struct{ record.EventRecorder }

// Handle posts the Event of e, if it has one.
func (r EventPoster) Handle(e reconcile.Event) {
	if r.EventRecorder == nil {
		return
	}
	if ref, typ, reason, ok := kubeEvent(e); ok {
		r.Event(ref, typ, reason, eventMessage(e))
	}
}

// Double posts the Warning that a workload was restarted by cmsync and by
// a peer for one change.
func (r EventPoster) Double(d shadow.Double) {
	if r.EventRecorder == nil {
		return
	}
	gk, ok := refresh.BuiltinKind(d.Workload.Kind)
	if !ok {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: gk.Group + "/v1", Kind: gk.Kind, Namespace: d.Workload.Namespace, Name: d.Workload.Name}
	if gk.Group == "" {
		ref.APIVersion = "v1"
	}
	r.Event(ref, corev1.EventTypeWarning, ReasonDoubleRestart, text.TruncateBytes(d.Message(), maxEventMessage-len("..."), "..."))
}

// maxEventMessage is the longest message the API server accepts on an
// Event, in bytes.
const maxEventMessage = 1024

// eventMessage is what the loop event says of the object the Event is
// about (render.EventText), capped to the API's length at a character
// boundary.
func eventMessage(e reconcile.Event) string {
	return text.TruncateBytes(render.EventText(e), maxEventMessage-len("..."), "...")
}

// kubeEvent is the Kubernetes Event that reports a loop event on the object
// it acted on, if any: (reference, type, reason).
func kubeEvent(e reconcile.Event) (*corev1.ObjectReference, string, string, bool) {
	var t *refresh.Target
	switch {
	case e.Action != nil:
		t = &e.Action.Target
	case e.Target != nil && (e.Kind == reconcile.EventError || e.Kind == reconcile.EventDeferred):
		t = e.Target
	default:
		return nil, "", "", false
	}
	if t.Name == "" {
		return nil, "", "", false
	}
	gk, ok := refresh.BuiltinKind(t.Kind)
	if !ok {
		return nil, "", "", false
	}
	apiVersion := "v1"
	if gk.Group != "" {
		apiVersion = gk.Group + "/v1"
	}
	ref := &corev1.ObjectReference{APIVersion: apiVersion, Kind: gk.Kind, Namespace: t.Namespace, Name: t.Name}
	switch e.Kind {
	case reconcile.EventAction:
		if e.Action.Action == refresh.ActionManual || e.Action.Action == refresh.ActionNone {
			return nil, "", "", false
		}
		return ref, corev1.EventTypeNormal, ReasonRefreshing, true
	case reconcile.EventResult:
		if e.Action != nil && e.Action.Action == refresh.ActionNone {
			return nil, "", "", false // nothing was done to the object
		}
		switch e.Outcome {
		case refresh.OutcomeCurrent, refresh.OutcomeApplied, refresh.OutcomeUnverifiable:
			return ref, corev1.EventTypeNormal, ReasonRefreshed, true
		}
		return ref, corev1.EventTypeWarning, ReasonRefreshFailed, true
	case reconcile.EventDeferred:
		return ref, corev1.EventTypeNormal, ReasonRestartDeferred, true
	case reconcile.EventError:
		return ref, corev1.EventTypeWarning, ReasonRefreshError, true
	}
	return nil, "", "", false
}
