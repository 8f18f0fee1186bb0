package nodereader

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// readerPod is a node's reader pod, or why it could not run; ready is
// closed once either is known.
type readerPod struct {
	ready chan struct{}
	name  string
	err   *inspect.VerifyError
}

// podFor returns the name of the node's running reader pod, creating it
// the first time. Concurrent callers for one node wait for one pod.
func (r *Reader) podFor(ctx context.Context, node string) (string, *inspect.VerifyError) {
	r.sweep.Do(func() { r.removeEnded(ctx) })
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return "", &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: "interrupted"}
	}
	rp := r.pods[node]
	creator := rp == nil
	if creator {
		rp = &readerPod{ready: make(chan struct{})}
		r.pods[node] = rp
	}
	r.mu.Unlock()
	if creator {
		rp.name, rp.err = r.start(ctx, node)
		r.mu.Lock()
		if r.closed && rp.err == nil {
			// it started after Close listed this run's pods
			_ = r.delete(rp.name)
			rp.name, rp.err = "", &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: "interrupted"}
		}
		r.mu.Unlock()
		close(rp.ready)
		if rp.err != nil {
			// this read fails; the next one tries to start a reader again
			// (a passing failure must not make the node unreadable for the
			// rest of the run or of the dashboard)
			r.mu.Lock()
			if r.pods[node] == rp {
				delete(r.pods, node)
			}
			r.mu.Unlock()
		}
	}
	select {
	case <-rp.ready:
	case <-ctx.Done():
		return "", &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: "interrupted"}
	}
	return rp.name, rp.err
}

// forget drops a node's pod that stopped running, and deletes it.
func (r *Reader) forget(node, name string) {
	r.mu.Lock()
	if rp := r.pods[node]; rp != nil && rp.name == name {
		delete(r.pods, node)
	}
	r.mu.Unlock()
	r.delete(name)
}

// Close deletes every reader pod of this run (with a context of its own:
// the run's may be cancelled by Ctrl-C). It returns the first error.
func (r *Reader) Close() error {
	r.mu.Lock()
	r.closed = true
	var names []string
	for _, rp := range r.pods {
		select {
		case <-rp.ready:
		default:
			continue // its creator deletes it when it gives up
		}
		if rp.name != "" {
			names = append(names, rp.name)
		}
	}
	r.pods = map[string]*readerPod{}
	r.mu.Unlock()
	var first error
	for _, n := range names {
		if err := r.delete(n); err != nil && first == nil {
			first = err
		}
	}
	// a pod whose name never came back (an interrupted create) still has
	// this run's label
	if !r.created.Load() {
		return first
	}
	if err := r.deleteRun(); err != nil && first == nil {
		first = err
	}
	return first
}

func (r *Reader) delete(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	zero := int64(0)
	err := r.client.CoreV1().Pods(r.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteRun deletes what is left with this run's label.
func (r *Reader) deleteRun() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sel := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy, LabelComponent: Component, LabelRun: r.runID}).String()
	list, err := r.client.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	var first error
	for _, p := range list.Items {
		if err := r.delete(p.Name); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeEnded deletes reader pods of other runs that have ended: their
// phase is final (a killed run's pod ended by activeDeadlineSeconds), or
// they have outlived their deadline. A reader of a run still going is
// never touched. Errors are ignored: leftovers are harmless and bounded.
func (r *Reader) removeEnded(ctx context.Context) {
	sel := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy, LabelComponent: Component}).String()
	list, err := r.client.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	now := r.opts.Now()
	for _, p := range list.Items {
		if p.Labels[LabelRun] != r.runID && Ended(&p, now) {
			_ = r.delete(p.Name)
		}
	}
}

// Ended says whether a reader pod can no longer serve its run.
func Ended(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if p.Spec.ActiveDeadlineSeconds == nil {
		return false
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	return now.After(start.Add(time.Duration(*p.Spec.ActiveDeadlineSeconds)*time.Second + time.Minute))
}

// start creates the node's reader pod and waits until it runs; a pod that
// does not run is deleted.
func (r *Reader) start(ctx context.Context, node string) (string, *inspect.VerifyError) {
	pod := ReaderPod(r.opts.Namespace, node, r.opts.Image, r.runID, r.opts.Lifetime)
	r.created.Store(true)
	created, err := r.client.CoreV1().Pods(r.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", r.createError(err)
	}
	if verr := r.waitRunning(ctx, created.Name, node); verr != nil {
		_ = r.delete(created.Name)
		return "", verr
	}
	return created.Name, nil
}

// createError says why the reader pod could not be created, and what to do.
func (r *Reader) createError(err error) *inspect.VerifyError {
	ns := r.opts.Namespace
	msg := err.Error()
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(msg, "PodSecurity"):
		return &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: "Pod Security admission rejects the node reader in namespace " + ns + ": " + firstLine(msg),
			Hint: "it needs hostPID and the capabilities SYS_PTRACE and DAC_READ_SEARCH, which only the privileged level allows: " +
				"label the namespace pod-security.kubernetes.io/enforce=privileged, or pass --reader-namespace with one that allows it, or use --reader=exec"}
	case apierrors.IsForbidden(err):
		return &inspect.VerifyError{Reason: inspect.VerifyForbidden, Message: "create pods in namespace " + ns + " (" + firstLine(msg) + ")",
			Hint: "the node reader needs create, get, list and delete on pods and get and create on pods/exec in namespace " + ns + "; see deploy/rbac.yaml, or use --reader=exec"}
	}
	return &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: "creating the node reader in namespace " + ns + ": " + firstLine(msg)}
}

// waitRunning polls the pod until its container runs, failing early on
// what will not pass by itself (an image that cannot be pulled, a pod the
// kubelet rejected) and at StartTimeout with the pod's last event.
func (r *Reader) waitRunning(ctx context.Context, name, node string) *inspect.VerifyError {
	ctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	pods := r.client.CoreV1().Pods(r.opts.Namespace)
	where := fmt.Sprintf("the node reader %s/%s on node %s", r.opts.Namespace, name, node)
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, time.Second) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if done, verr := podStarted(p, where, r.opts.Image); done {
				return verr
			}
		} else if ctx.Err() == nil && !apierrors.IsNotFound(err) {
			return &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: where + ": " + firstLine(err.Error())}
		}
		select {
		case <-ctx.Done():
			return &inspect.VerifyError{Reason: inspect.VerifyTimeout,
				Message: fmt.Sprintf("%s did not run within %s%s", where, r.opts.StartTimeout, r.lastEvent(name))}
		case <-time.After(delay):
		}
	}
}

// podStarted says whether the pod's start is decided: running (no error),
// or failed for a reason waiting cannot mend.
func podStarted(p *corev1.Pod, where, image string) (bool, *inspect.VerifyError) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return true, &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: fmt.Sprintf("%s ended: %s %s", where, p.Status.Reason, p.Status.Message)}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			return true, nil
		}
		if w := s.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
				return true, &inspect.VerifyError{Reason: inspect.VerifyFailed, Message: fmt.Sprintf("%s cannot start: %s: %s", where, w.Reason, firstLine(w.Message)),
					Hint: "pass --reader-image with an image the node can pull (it has " + image + "), or use --reader=exec"}
			}
		}
	}
	return false, nil
}

// lastEvent is the newest Warning event of the pod, as ": reason: message".
func (r *Reader) lastEvent(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sel := fields.SelectorFromSet(fields.Set{"involvedObject.name": name, "involvedObject.kind": "Pod"}).String()
	evs, err := r.client.CoreV1().Events(r.opts.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	items := evs.Items
	sort.Slice(items, func(a, b int) bool { return items[a].LastTimestamp.Before(&items[b].LastTimestamp) })
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == corev1.EventTypeWarning {
			return ": " + items[i].Reason + ": " + firstLine(items[i].Message)
		}
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
