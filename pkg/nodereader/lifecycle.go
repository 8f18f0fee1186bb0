package nodereader

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// readerPod is a node's reader pod, or why it could not run; ready is
// closed once either is known.
type readerPod struct {
	ready chan struct{}
	name  string
	err   *containerread.VerifyError
	// prepared: started by Prepare, whose failure is kept for the first
	// read to report (and fall back on) rather than tried again at once
	prepared bool
	// sent is closed once the create has been answered
	sent chan struct{}
	// reads counts the reads using the pod, from podFor until their exec
	// is over; lastUsed is when the last of them ended, or the pod started
	// (idle.go). Both under Reader.mu.
	reads    int
	lastUsed time.Time
	// session is the pod's open read session (session.go), under
	// Reader.mu; nil when it has none
	session *session
}

// endSession closes rp's session, if any; r.mu is held.
func (rp *readerPod) endSession() {
	if rp.session != nil {
		rp.session.close()
		rp.session = nil
	}
}

// prepareWait bounds Prepare's wait for the API server to answer the
// creates.
const prepareWait = 2 * time.Second

// Prepare implements containerread.Preparer: it starts the reader pods of the
// nodes that have none yet, so that they start while the caller does
// other work (a refresh, while it patches). It returns once the API
// server has answered the creates (at most prepareWait), not when the
// pods run: requests sent after it, such as a refresh's patches, do not
// hold the creates back. A reader that fails to start is reported by the
// first read of its node.
func (r *Reader) Prepare(ctx context.Context, nodes []string) {
	var sent []chan struct{}
	for _, node := range nodes {
		if node == "" || r.isUnavailable(node) {
			continue
		}
		r.mu.Lock()
		rp := r.startAhead(node)
		if rp != nil {
			r.prepared = append(r.prepared, rp)
		}
		r.mu.Unlock()
		if rp == nil {
			continue
		}
		sent = append(sent, rp.sent)
		go func() {
			// no more creates at once than the reads would make
			select {
			case r.prepares <- struct{}{}:
				defer func() { <-r.prepares }()
			case <-r.bg.Done():
			}
			r.create(ctx, node, rp)
		}()
	}
	timeout := time.NewTimer(prepareWait)
	defer timeout.Stop()
	for _, c := range sent {
		select {
		case <-c:
		case <-timeout.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// AwaitPrepared implements containerread.Preparer: it waits until the
// reader pods Prepare started run or have failed, or ctx ends.
func (r *Reader) AwaitPrepared(ctx context.Context) {
	r.mu.Lock()
	starts := slices.Clone(r.prepared)
	r.mu.Unlock()
	for _, rp := range starts {
		select {
		case <-rp.ready:
		case <-ctx.Done():
			return
		}
	}
}

// startAhead tracks a reader pod for node, to be started before any read
// takes it: the first read that does reports how its start fared
// (podFor). Nil when the node has one or Close was called; r.mu is held.
func (r *Reader) startAhead(node string) *readerPod {
	if r.closed || r.pods[node] != nil {
		return nil
	}
	rp := &readerPod{ready: make(chan struct{}), prepared: true, sent: make(chan struct{})}
	r.track(node, rp)
	return rp
}

// awaitStart waits until the node's reader pod runs or has failed,
// starting it ahead when the node has none: the reads due meanwhile then
// make one batch (the queue's Ready), not a first of the earliest read
// and a second of the rest after it. A node whose reader runs returns at
// once.
func (r *Reader) awaitStart(ctx context.Context, node string) {
	r.mu.Lock()
	rp := r.pods[node]
	ahead := rp == nil
	if ahead {
		rp = r.startAhead(node)
	}
	r.mu.Unlock()
	switch {
	case rp == nil:
	case ahead:
		r.create(ctx, node, rp)
	default:
		select {
		case <-rp.ready:
		case <-ctx.Done():
		}
	}
}

// track makes rp the node's reader pod, its start counted in r.starts;
// r.mu is held and Close has not been called.
func (r *Reader) track(node string, rp *readerPod) {
	r.pods[node] = rp
	r.starts.Add(1)
	r.startJanitor()
}

// podFor returns the node's running reader pod, creating it the first
// time (or taking over the one Prepare started), counted as in use until
// the caller releases it (idle.go). Concurrent callers for one node wait
// for one pod.
func (r *Reader) podFor(ctx context.Context, node string) (*readerPod, *containerread.VerifyError) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "interrupted"}
	}
	rp := r.pods[node]
	switch {
	case rp != nil && rp.prepared:
		// this read reports how the pod Prepare started fares, even a
		// failure; the next read tries again
		rp.prepared = false
	case rp != nil && failed(rp):
		rp = nil // a failure already reported: try again
	}
	creator := rp == nil
	if creator {
		rp = &readerPod{ready: make(chan struct{}), sent: make(chan struct{})}
		r.track(node, rp)
	}
	rp.reads++
	r.mu.Unlock()
	if creator {
		r.create(ctx, node, rp)
	}
	select {
	case <-rp.ready:
	case <-ctx.Done():
		r.release(rp)
		return nil, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "interrupted"}
	}
	if rp.err != nil {
		r.release(rp)
		return nil, rp.err
	}
	return rp, nil
}

// create starts the node's reader pod rp and closes rp.ready once it runs
// or has failed. It ends with ctx or at Close (which waits for it: no
// create is still in flight when Close lists this run's pods); the caller
// has counted it in r.starts.
func (r *Reader) create(ctx context.Context, node string, rp *readerPod) {
	defer r.starts.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.bg, cancel)()
	r.sweep.Do(func() { r.removeEnded(ctx) })
	var s *session
	rp.name, s, rp.err = r.start(ctx, node, rp.sent)
	if rp.err != nil {
		r.podFailed(ctx)
	}
	if rp.err != nil && r.bg.Err() != nil {
		rp.err = &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "interrupted"}
	}
	r.mu.Lock()
	rp.lastUsed = r.opts.Clock.Now() // a start counts as a use: idle from now on
	if r.closed && rp.err == nil {
		// it started after Close listed this run's pods
		_ = r.delete(rp.name)
		rp.name, rp.err = "", &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "interrupted"}
	}
	if se, ok := r.exec.(StdinExecutor); ok && rp.err == nil {
		if s == nil {
			// its exec starts while the first reads gather
			s = r.openSession(se, rp.name, readDir)
		}
		rp.session, s = s, nil
		rp.session.lastUsed = rp.lastUsed
	}
	if s != nil {
		s.close()
	}
	close(rp.ready)
	if rp.err != nil && !rp.prepared && r.pods[node] == rp {
		// this read fails; the next one tries to start a reader again (a
		// passing failure must not make the node unreadable for the rest
		// of the run or of the dashboard)
		delete(r.pods, node)
	}
	r.mu.Unlock()
}

// isReady tells whether rp's start is over, run or failed.
func isReady(rp *readerPod) bool { return closed(rp.ready) }

// closed tells whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// failed tells whether rp's start is over and failed (err is set before
// ready is closed).
func failed(rp *readerPod) bool { return isReady(rp) && rp.err != nil }

// forget drops a node's pod that stopped running, and deletes it.
func (r *Reader) forget(node, name string) {
	r.mu.Lock()
	if rp := r.pods[node]; rp != nil && rp.name == name {
		delete(r.pods, node)
		rp.endSession()
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
		if !isReady(rp) {
			continue // its creator deletes it when it gives up
		}
		if rp.name != "" {
			names = append(names, rp.name)
		}
		rp.endSession()
	}
	r.pods = map[string]*readerPod{}
	janitorDone := r.janitorDone
	r.mu.Unlock()
	// end the starts under way and wait for them: each deletes its pod
	// once it sees closed, and none is left in flight for deleteRun; so
	// does the janitor (a pod whose deletion it gave up has this run's
	// label: deleteRun deletes it)
	r.stopBg()
	r.starts.Wait()
	if janitorDone != nil {
		<-janitorDone
	}
	first := r.deleteAll(names)
	// a pod whose name never came back (an interrupted create), or whose
	// deletion failed, still has this run's label; when every create
	// answered with its pod and every deletion passed, nothing is left to
	// list
	if !r.unsure.Load() {
		return first
	}
	if err := r.deleteRun(); err != nil && first == nil {
		first = err
	}
	return first
}

// deleteAll deletes the named reader pods at once (one round trip for all
// the nodes at the end of a command) and returns the first error.
func (r *Reader) deleteAll(names []string) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.delete(n)
		}()
	}
	wg.Wait()
	return cmp.Or(errs...)
}

// delete deletes the reader pod name, within deleteTimeout of its own.
func (r *Reader) delete(name string) error {
	return r.deleteWithin(context.Background(), name)
}

// deleteTimeout bounds one deletion of a reader pod.
const deleteTimeout = 10 * time.Second

// deleteWithin deletes the reader pod name, within deleteTimeout and ctx;
// one already gone is no error.
func (r *Reader) deleteWithin(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	zero := int64(0)
	err := r.client.CoreV1().Pods(r.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		r.unsure.Store(true)
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
// does not run is deleted. sent is closed once the create has been
// answered. With a StdinExecutor it returns the pod's session too, opened
// as soon as the container ran (probe), or nil.
func (r *Reader) start(ctx context.Context, node string, sent chan struct{}) (string, *session, *containerread.VerifyError) {
	pod := ReaderPod(r.opts.Namespace, node, r.opts.Image, r.runID, r.opts.Lifetime)
	created, err := r.client.CoreV1().Pods(r.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: version.FieldManager})
	close(sent)
	if err != nil {
		r.unsure.Store(true)
		return "", nil, r.createError(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	running := make(chan struct{})
	var probed <-chan *session
	if se, ok := r.exec.(StdinExecutor); ok {
		probed = r.probe(pctx, se, created.Name, running)
	}
	s, verr := r.waitRunning(ctx, created.Name, node, created.ResourceVersion, probed)
	if s == nil && verr == nil {
		// the status came first: the probe's session, under way or tried
		// at once, has probeGrace to greet
		close(running)
		defer time.AfterFunc(probeGrace, cancel).Stop()
	} else {
		cancel()
	}
	if probed != nil {
		for ps := range probed {
			if ps != nil && s == nil && verr == nil {
				s = ps
			} else if ps != nil {
				ps.close()
			}
		}
	}
	if verr != nil {
		_ = r.delete(created.Name)
		return "", nil, verr
	}
	return created.Name, s, nil
}

// createError says why the reader pod could not be created, and what to do.
func (r *Reader) createError(err error) *containerread.VerifyError {
	ns := r.opts.Namespace
	msg := err.Error()
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(msg, "PodSecurity"):
		return &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "Pod Security admission rejects the node reader in namespace " + ns + ": " + firstLine(msg),
			Hint: "it needs hostPID and the capabilities SYS_PTRACE and DAC_READ_SEARCH, which only the privileged level allows: " +
				"label the namespace pod-security.kubernetes.io/enforce=privileged, or pass --reader-namespace with one that allows it, or use --reader=exec"}
	case apierrors.IsNotFound(err):
		return &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "namespace " + ns + ", where the node reader pods run, does not exist",
			Hint: fmt.Sprintf("create it for the readers alone: `kubectl create namespace %s` and `kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged`; "+
				"or pass --reader-namespace, or use --reader=exec", ns, ns)}
	case apierrors.IsForbidden(err):
		return &containerread.VerifyError{Reason: containerread.VerifyForbidden, Message: "create pods in namespace " + ns + " (" + firstLine(msg) + ")",
			Hint: "the node reader needs create, get, list, watch and delete on pods and get and create on pods/exec in namespace " + ns + "; see deploy/rbac.yaml, or use --reader=exec"}
	}
	return &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: "creating the node reader in namespace " + ns + ": " + firstLine(msg)}
}

// waitRunning waits until the pod's container runs, failing early on
// what will not pass by itself (an image that cannot be pulled, a pod the
// kubelet rejected) and at StartTimeout with the pod's last event. It
// watches the pod from rv (the create's resourceVersion) and GETs it now
// and then too: a watch that is refused or ends only slows it down. A
// session that probed sends (nil: none) says the container runs before
// the pod's status does; it is returned.
func (r *Reader) waitRunning(ctx context.Context, name, node, rv string, probed <-chan *session) (*session, *containerread.VerifyError) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	pods := r.client.CoreV1().Pods(r.opts.Namespace)
	where := fmt.Sprintf("the node reader %s/%s on node %s", r.opts.Namespace, name, node)
	var events <-chan watch.Event
	if w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv}); err == nil {
		defer w.Stop()
		events = w.ResultChan()
	}
	for delay := 250 * time.Millisecond; ; delay = min(delay*2, 2*time.Second) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if done, verr := podStarted(p, where, r.opts.Image); done {
				return nil, verr
			}
		} else if apierrors.IsNotFound(err) {
			return nil, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: where + " was deleted before it ran"}
		} else if ctx.Err() == nil {
			return nil, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: where + ": " + firstLine(err.Error())}
		}
		if s, verr, done := r.nextEvent(ctx, &events, &probed, delay, name, where); done {
			return s, verr
		}
	}
}

// nextEvent waits for the next watch event of the pod (or delay, or the
// end of ctx) and says whether the start is decided. A closed watch is
// set to nil: the caller polls from then on.
func (r *Reader) nextEvent(ctx context.Context, events *<-chan watch.Event, probed *<-chan *session, delay time.Duration, name, where string) (*session, *containerread.VerifyError, bool) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, &containerread.VerifyError{Reason: containerread.VerifyTimeout,
				Message: fmt.Sprintf("%s did not run within %s%s", where, r.opts.StartTimeout, r.lastEvent(name))}, true
		case <-timer.C:
			return nil, nil, false
		case s := <-*probed:
			*probed = nil // a nil session: the probe gave up, the status tells
			if s != nil {
				return s, nil, true
			}
		case ev, ok := <-*events:
			if !ok {
				*events = nil
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: where + " was deleted before it ran"}, true
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod {
				if done, verr := podStarted(p, where, r.opts.Image); done {
					return nil, verr, true
				}
			}
		}
	}
}

// podStarted says whether the pod's start is decided: running (no error),
// or failed for a reason waiting cannot mend.
func podStarted(p *corev1.Pod, where, image string) (bool, *containerread.VerifyError) {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return true, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprintf("%s ended: %s %s", where, p.Status.Reason, p.Status.Message)}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			return true, nil
		}
		if w := s.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError":
				return true, &containerread.VerifyError{Reason: containerread.VerifyFailed, Message: fmt.Sprintf("%s cannot start: %s: %s", where, w.Reason, firstLine(w.Message)),
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
