package inspect

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// precheck decides the uses that need no exec: nothing to read, a
// required object or key that is missing, a pod or container not running.
func precheck(it Use, pod *corev1.Pod, in useInputs) (Comparison, bool) {
	if it.Mode == ModeUnmounted || it.Container == nil {
		return Comparison{State: StateNA, Reason: "no container mounts this volume: there is nothing to check"}, true
	}
	if c, done := precheckObject(it, in); done {
		return c, true
	}
	if pod == nil {
		return Comparison{State: StateUnverifiable, Reason: "not running: the pod is not in the snapshot", Cause: CauseNotRunning}, true
	}
	if pod.DeletionTimestamp != nil {
		return Comparison{State: StateNA, Reason: "the pod is terminating: its replacement, if any, is checked instead"}, true
	}
	if PodTerminated(pod) {
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the pod has completed (%s): nothing runs to check", pod.Status.Phase)}, true
	}
	return precheckContainer(it, pod, in.obj)
}

// precheckObject decides the uses whose object, key or payload is missing
// or cannot be written.
func precheckObject(it Use, in useInputs) (Comparison, bool) {
	obj := in.obj
	what := fmt.Sprintf("%s %q", it.Object.Kind, it.Object.Name)
	switch it.Mode {
	case ModeEnv, ModeEnvFrom:
		if !obj.Exists && !it.Optional {
			return Comparison{State: StateMissing, Reason: fmt.Sprintf("%s does not exist; a running container keeps the values it started with, and a restart fails until it is created", what)}, true
		}
		if it.Mode == ModeEnv && obj.Exists && !it.Optional && len(it.Keys) > 0 {
			if _, ok := envValue(obj, it.Keys[0]); !ok {
				return Comparison{State: StateMissing, Reason: fmt.Sprintf("key %q is not in %s; a running container keeps the value it started with, and a restart fails until the key is added", it.Keys[0], what)}, true
			}
		}
	default:
		if it.Volume == nil {
			return Comparison{State: StateNA, Reason: "no volume mount recorded for this use"}, true
		}
		if err := in.plErr; err != nil {
			var pe *PayloadError
			if errors.As(err, &pe) && (pe.ObjectMissing || len(pe.MissingKeys) > 0) {
				return Comparison{State: StateMissing, Reason: pe.Error() + "; the kubelet cannot update the volume, so the container keeps what it had (a new container cannot start)"}, true
			}
			return Comparison{State: StateUnverifiable, Reason: "the kubelet cannot write this volume: " + err.Error(), Cause: CauseVolumeNotWritable}, true
		}
	}
	return Comparison{}, false
}

// precheckContainer decides by the container's status, whatever the pod's
// phase: a Pending pod whose other containers run still holds what they
// read. A running container is for the read (false).
func precheckContainer(it Use, pod *corev1.Pod, obj Object) (Comparison, bool) {
	st, found := containerStatus(pod, it.Container.Name, it.Container.Type)
	if it.Container.Type == ContainerInit && found && st.State.Terminated != nil {
		return initContainerByTime(it, obj, st.State.Terminated), true
	}
	switch {
	case !found && it.Container.Type == ContainerInit:
		return Comparison{State: StateNA, Reason: "the init container has not run yet (no status): it reads the current content when it starts"}, true
	case !found:
		return Comparison{State: StateUnverifiable, Reason: "not running: the container has no status yet (it never started)", Cause: CauseNotRunning}, true
	case st.State.Running != nil:
		return Comparison{}, false
	case st.State.Waiting != nil:
		r := cmp.Or(st.State.Waiting.Reason, "Waiting")
		if it.Container.Type == ContainerInit {
			return Comparison{State: StateNA, Reason: fmt.Sprintf("the init container has not run yet (%s): it reads the current content when it starts", r)}, true
		}
		if msg, ok := restartingReason(st); ok {
			return Comparison{State: StateUnverifiable, Reason: containerread.VerifyNotRunning + ": " + msg, Cause: CauseNotRunning}, true
		}
		if st.LastTerminationState.Terminated == nil && st.RestartCount == 0 {
			return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("not running: the container never started (waiting: %s)", r), Cause: CauseNotRunning}, true
		}
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("not running: the container is waiting (%s)", r), Cause: CauseNotRunning}, true
	case st.State.Terminated != nil:
		r := cmp.Or(st.State.Terminated.Reason, "Terminated")
		return Comparison{State: StateNA, Reason: fmt.Sprintf("the container has terminated (%s): nothing to check", r)}, true
	}
	return Comparison{State: StateUnverifiable, Reason: "not running: the container state is unknown", Cause: CauseNotRunning}, true
}

// PodTerminated reports whether the pod has finished for good (phase
// Succeeded or Failed): nothing in it reads anything any more.
func PodTerminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// initContainerByTime judges a use of an init container that has finished:
// it cannot be read, and what it read (and copied or rendered, e.g. into an
// emptyDir) is fixed for the pod's life. So compare the object's last change
// with when the container ran: changed after it finished is stale, before it
// started is current, in between cannot be told. The last change is the
// object's (any key), to the second.
func initContainerByTime(it Use, obj Object, t *corev1.ContainerStateTerminated) Comparison {
	kind := strings.ToLower(it.Object.Kind)
	last := useLastChange(it, obj)
	started, finished := t.StartedAt.Time, t.FinishedAt.Time
	stamp := func(x time.Time) string { return x.UTC().Format(time.RFC3339) }
	switch {
	case last.IsZero() || finished.IsZero():
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the init container has finished and cannot be read, and the %s's last change time or the container's run time is unknown", kind)}
	case last.After(finished):
		return Comparison{State: StateStale, Reason: fmt.Sprintf("the %s changed at %s, after the init container finished at %s (judged by time: it cannot be read): what it read, and whatever it copied or rendered, is fixed for the pod's life; restart the workload so that a new pod runs it again",
			kind, stamp(last), stamp(finished))}
	case !started.IsZero() && last.Before(started):
		return Comparison{State: StateCurrent, Reason: fmt.Sprintf("the init container ran at %s, after the %s's last change at %s (judged by time: it cannot be read); it will not see the next change until a new pod runs it",
			stamp(started), kind, stamp(last))}
	}
	return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("the %s changed at %s, while the init container ran (%s to %s): whether it read the old or the new content cannot be told; restart the workload to be sure",
		kind, stamp(last), stamp(started), stamp(finished))}
}

func containerStatus(pod *corev1.Pod, name string, t ContainerType) (corev1.ContainerStatus, bool) {
	var list []corev1.ContainerStatus
	switch t {
	case ContainerInit, ContainerSidecar:
		list = pod.Status.InitContainerStatuses
	case ContainerEphemeral:
		list = pod.Status.EphemeralContainerStatuses
	default:
		list = pod.Status.ContainerStatuses
	}
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return corev1.ContainerStatus{}, false
}
