package refresh

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// rollouts is the Argo Rollouts resource of namespace, through a dynamic
// client over the clientset's own REST client (the paths are absolute, so
// no second configuration is needed): cmsync imports no Argo type.
func rollouts(c kubernetes.Interface, namespace string) dynamic.ResourceInterface {
	return dynamic.New(c.Discovery().RESTClient()).Resource(RolloutResource).Namespace(namespace)
}

// RolloutsOf is the Argo Rollouts resource of namespace ("" for all), for
// the callers outside this package that read or patch Rollouts by name.
func RolloutsOf(c kubernetes.Interface, namespace string) dynamic.ResourceInterface {
	return rollouts(c, namespace)
}

// argoRollout is what cmsync reads of a Rollout.
type argoRollout struct {
	UID         types.UID         `json:"-"`
	Annotations map[string]string `json:"-"`
	Generation  int64             `json:"-"`
	Spec        rolloutSpec       `json:"spec"`
	Status      rolloutStatus     `json:"status"`
}

// rolloutSpec is what cmsync reads of a Rollout's spec.
type rolloutSpec struct {
	Selector  *metav1.LabelSelector `json:"selector"`
	Paused    bool                  `json:"paused"`
	RestartAt *metav1.Time          `json:"restartAt"`
	Template  struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"template"`
}

// rolloutStatus is what cmsync reads of a Rollout's status.
type rolloutStatus struct {
	Phase   string `json:"phase"`
	Message string `json:"message"`
	Abort   bool   `json:"abort"`
	// ObservedGeneration is a string in Argo's status (an integer in some
	// older objects): both are read.
	ObservedGeneration any          `json:"observedGeneration"`
	RestartedAt        *metav1.Time `json:"restartedAt"`
	PauseConditions    []struct {
		Reason string `json:"reason"`
	} `json:"pauseConditions"`
	CurrentPodHash string `json:"currentPodHash"`
	StableRS       string `json:"stableRS"`
}

// getRollout reads one Rollout by group, kind and name.
func getRollout(ctx context.Context, c kubernetes.Interface, namespace, name string) (argoRollout, error) {
	var r argoRollout
	u, err := rollouts(c, namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return r, err
	}
	return rolloutOf(u)
}

// rolloutOf converts an unstructured Rollout.
func rolloutOf(u *unstructured.Unstructured) (argoRollout, error) {
	var r argoRollout
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return r, fmt.Errorf("rollout %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	r.UID, r.Annotations, r.Generation = u.GetUID(), u.GetAnnotations(), u.GetGeneration()
	return r, nil
}

// info is the planner's view of the Rollout.
// templateAnnotations are the annotations of the Rollout's pod template,
// with its last restart (spec.restartAt, which is how a Rollout is
// restarted) as RestartedAtAnnotation when it is later than the
// template's own: whoever paces its restarts reads the one annotation, as
// for a Deployment.
func (r argoRollout) templateAnnotations() map[string]string {
	ann := r.Spec.Template.Metadata.Annotations
	if r.Spec.RestartAt == nil {
		return ann
	}
	at := r.Spec.RestartAt.UTC()
	if t, err := time.Parse(time.RFC3339, ann[RestartedAtAnnotation]); err == nil && !t.Before(at) {
		return ann
	}
	out := maps.Clone(ann)
	if out == nil {
		out = map[string]string{}
	}
	out[RestartedAtAnnotation] = at.Format(time.RFC3339)
	return out
}

func (r argoRollout) info() *RolloutInfo {
	s := r.Annotations[RolloutStrategyAnnotation]
	if s == "" {
		s = RolloutStrategyRestart
	}
	return &RolloutInfo{Strategy: s, Paused: r.Spec.Paused || len(r.Status.PauseConditions) > 0, Aborted: r.Status.Abort}
}

// observed tells whether the controller has seen the Rollout's spec.
func (r argoRollout) observed() bool {
	switch g := r.Status.ObservedGeneration.(type) {
	case string:
		n, err := strconv.ParseInt(g, 10, 64)
		return err == nil && n >= r.Generation
	case int64:
		return g >= r.Generation
	case float64:
		return int64(g) >= r.Generation
	}
	return false
}

// RolloutStatus says whether a Rollout's restart is done, from its status:
// the controller has observed its spec, every pod older than spec.restartAt
// is restarted (status.restartedAt caught up), and it is Healthy, or Paused
// with no update under way (its current pods are its stable ones: a paused
// Rollout's pods are restarted all the same). Aborted and Degraded are not
// done, with Argo's message. It is pure.
func RolloutStatus(r argoRollout) (bool, string) {
	st := r.Status
	switch {
	case !r.observed():
		return false, "waiting for the Argo Rollouts controller to observe the Rollout's spec"
	case r.Spec.RestartAt != nil && (st.RestartedAt == nil || !st.RestartedAt.Equal(r.Spec.RestartAt)):
		return false, fmt.Sprintf("waiting for the Argo Rollouts controller to restart the pods older than spec.restartAt %s", r.Spec.RestartAt.UTC().Format("2006-01-02T15:04:05Z"))
	case st.Abort:
		return false, "the Rollout is aborted" + detail(st.Message) + ": retry it with kubectl argo rollouts retry rollout"
	case st.Phase == "Healthy":
		return true, "the Rollout is Healthy"
	case st.Phase == "Paused" && st.CurrentPodHash != "" && st.CurrentPodHash == st.StableRS:
		return true, "the Rollout is Paused with its stable pods current"
	case st.Phase == "Paused":
		return false, "the Rollout is paused part way through an update" + detail(st.Message) + ": promote it with kubectl argo rollouts promote"
	case st.Phase == "":
		return false, "waiting for the Argo Rollouts controller to report the Rollout's phase"
	}
	return false, "the Rollout is " + st.Phase + detail(st.Message)
}

// detail is Argo's status message in parentheses, or nothing.
func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}

// RolloutRestart reads what a new leader counts of a listed Rollout: its
// last restart (the later of spec.restartAt and its template's
// restartedAt, as RFC 3339; "" without one) and whether that restart may
// be under way (RolloutStatus does not say done).
func RolloutRestart(u *unstructured.Unstructured) (restartedAt string, rolling bool, err error) {
	r, err := rolloutOf(u)
	if err != nil {
		return "", false, err
	}
	done, _ := RolloutStatus(r)
	return r.templateAnnotations()[RestartedAtAnnotation], !done, nil
}
