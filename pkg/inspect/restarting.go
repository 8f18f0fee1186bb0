package inspect

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// restartingReason says that a container is restarting, with what its
// status tells: the reason it waits (CrashLoopBackOff, ...), its restart
// count and how it last ended. ok is false when the status shows no restart.
// A read that fails while a container restarts and a container seen waiting
// between two runs get this one answer (not running), whichever the read
// happened to meet.
func restartingReason(st corev1.ContainerStatus) (string, bool) {
	last := st.LastTerminationState.Terminated
	if st.RestartCount == 0 && last == nil {
		return "", false
	}
	var parts []string
	switch {
	case st.State.Waiting != nil:
		parts = append(parts, "waiting: "+cmp.Or(st.State.Waiting.Reason, "Waiting"))
	case st.State.Terminated != nil:
		parts = append(parts, "terminated: "+cmp.Or(st.State.Terminated.Reason, "Terminated"))
	}
	parts = append(parts, fmt.Sprintf("restart count %d", st.RestartCount))
	if last != nil {
		parts = append(parts, fmt.Sprintf("last exit: %s, code %d", cmp.Or(last.Reason, "Terminated"), last.ExitCode))
	}
	return "the container is restarting (" + strings.Join(parts, "; ") + ")", true
}

// explainRestart turns a failed read of a container that the pod's status
// shows restarting into "not running" with its restart state: whether the
// exec met the container stopping, gone or not yet started, the answer is
// the same.
func explainRestart(obs *containerread.Verified, pod *corev1.Pod, c *ContainerRef) *containerread.Verified {
	if obs == nil || obs.Err == nil || pod == nil || c == nil {
		return obs
	}
	if obs.Err.Reason != containerread.VerifyFailed && obs.Err.Reason != containerread.VerifyNotRunning {
		return obs
	}
	m := exitCodeMessage.FindStringSubmatch(obs.Err.Message)
	killed := m != nil && (m[1] == "137" || m[1] == "143")
	if m != nil && !killed {
		// the read ran and failed by itself; 137 and 143 are the kill
		// and the stop of a container that goes down
		return obs
	}
	st, found := containerStatus(pod, c.Name, c.Type)
	if !found || (st.State.Running != nil && obs.Err.Reason == containerread.VerifyFailed && !killed) {
		// a container the status shows running, whose read failed for a
		// reason of its own (an earlier restart does not explain it)
		return obs
	}
	msg, ok := restartingReason(st)
	if !ok && !killed {
		return obs
	}
	if !ok {
		// killed while the status read before it still showed the first
		// run: the read met the container going down (its stop kills every
		// process in it), not a failure of its own
		msg = fmt.Sprintf("the container stopped while it was read (%s)", obs.Err.Message)
	}
	out := *obs
	out.Err = &containerread.VerifyError{Reason: containerread.VerifyNotRunning, Message: msg, Hint: "verify again once it runs"}
	return &out
}

// exitCodeMessage matches the message of a read that exited non-zero.
var exitCodeMessage = regexp.MustCompile(`\bexit code (\d+)`)
