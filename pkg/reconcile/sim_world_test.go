package reconcile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The simulated world of the simulator (sim_test.go): the fake clientset's
// object tracker as the API server, a Deployment controller that rolls out
// in virtual time (completes, stalls or passes its progress deadline), a
// kubelet that remounts volumes after its sync delay or at once on a pod
// annotation and gives env its values at container start, and faults that
// are windows of virtual time. Everything moves on simClock: the world
// advances lazily, before every API call and exec, to the clock's time,
// so that what the loop sees is a function of the clock alone, whatever
// the order of the engine's concurrent reads.

// simClock is the virtual clock: Now for the loop and the engine, Sleep
// moves it on at once.
type simClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// set moves the clock to t; never back.
func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

func (c *simClock) Sleep(ctx context.Context, d time.Duration) {
	if d > 0 && ctx.Err() == nil {
		c.mu.Lock()
		c.now = c.now.Add(d)
		c.mu.Unlock()
	}
}

// simFault is a window of virtual time in which a verb on a resource
// fails with err.
type simFault struct {
	from, to time.Time
	verb     string // get, list, patch, create
	resource string // pods, deployments, replicasets, configmaps, pods/eviction
	class    int    // index into faultErrors
}

// faultErrors are the error classes a fault answers with: every one a
// failure that may pass.
var faultErrors = []func(string) error{
	func(r string) error { return apierrors.NewInternalError(errors.New("etcdserver: leader changed")) },
	func(r string) error {
		return apierrors.NewTooManyRequests("the server has received too many requests", 1)
	},
	func(r string) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: r}, "x", errors.New("the object has been modified"))
	},
	func(r string) error { return apierrors.NewTimeoutError("request timed out", 1) },
	func(r string) error { return apierrors.NewServerTimeout(schema.GroupResource{Resource: r}, "get", 1) },
	func(r string) error {
		return &url.Error{Op: "Patch", URL: "https://api/" + r, Err: errors.New("http2: client connection lost")}
	},
	func(r string) error {
		return &url.Error{Op: "Get", URL: "https://api/" + r, Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}
	},
	func(r string) error {
		return &url.Error{Op: "Get", URL: "https://api/" + r, Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	},
}

// simUse is one thing a workload's container reads: an env variable from
// a key of a ConfigMap, or a whole ConfigMap as a volume.
type simUse struct {
	cm, key string // key "": a volume of the whole object
}

func (u simUse) envName() string { return strings.ToUpper(u.cm + "_" + u.key) }

// simWorkload is a Deployment of the world.
type simWorkload struct {
	ns, name string
	replicas int
	uses     []simUse
	rev      int    // the ReplicaSet revision its pods run
	seenAt   string // the template's restartedAt the world last saw
	rollout  *simRollout
	pods     []string
	podSeq   int
}

// simRollout is one rollout of a workload: sent by cmsync (a restart or an
// eviction) or by a deploy; it completes at done (zero: stalls for good),
// or its progress deadline passes at deadline first (it may still
// complete at done, later).
type simRollout struct {
	w              *simWorkload
	byCmsync       bool
	sent, done     time.Time
	stamp          time.Time // the template's restartedAt (a restart of cmsync's)
	deadline       time.Time
	completed      bool
	completedAt    time.Time
	deadlinePassed bool
}

// underWayAt tells whether the rollout counts against
// --max-concurrent-restarts at t: sent, not complete, its deadline not
// passed, and younger than rolloutWait.
func (r *simRollout) underWayAt(t time.Time, rolloutWait time.Duration) bool {
	if t.Before(r.sent) || t.Sub(r.sent) >= rolloutWait {
		return false
	}
	if !r.done.IsZero() && !t.Before(r.done) {
		return false
	}
	return r.deadline.IsZero() || t.Before(r.deadline)
}

// simPod is a pod of the world: what its container read at start (env) and
// has mounted now (volumes).
type simPod struct {
	ns, name, uid, workload string
	rev                     int
	env                     map[string]string            // variable -> value
	mounted                 map[string]map[string]string // ConfigMap -> data as mounted
	syncedAt                time.Time
	started, ended          time.Time
	annotated               string   // the refreshed-at annotation last seen
	uses                    []simUse // what its template reads
	syncDelay               time.Duration
}

// simWorld is the cluster.
type simWorld struct {
	mu        sync.Mutex
	seed      int64
	clock     *simClock
	client    *fake.Clientset
	data      map[string]map[string]string // "ns/cm" -> data (the API's truth)
	edited    map[string]time.Time         // "ns/cm" -> last edit
	workloads map[string]*simWorkload      // "ns/name"
	pods      map[string]*simPod           // "ns/name"
	rollouts  []*simRollout
	faults    []simFault
	// execFaults are windows in which reads of env containers fail
	// (an exec timing out): the consumers cannot be read
	execFaults []simFault
	// podLog is every pod started, in order, ended or not
	podLog []*simPod
	// evictions are the cmsync evictions accepted, with when
	evictions []simEviction
	// durations of rollouts and replacement starts, drawn per seed
	rolloutDur, deadlineAfter time.Duration
	stallEvery                int
	kubeletSync               time.Duration
	started                   time.Time
	uidSeq                    int
}

type simEviction struct {
	w   string
	pod string
	at  time.Time
	// repl is the replacement the eviction started: a later eviction of
	// it is another restart, never part of the round that started it
	repl string
	// podStarted is when the evicted pod started: a pod started after a
	// round's first eviction (by a rollout in between) is another round's
	podStarted time.Time
}

func newSimWorld(seed int64, clock *simClock) *simWorld {
	w := &simWorld{seed: seed, clock: clock, data: map[string]map[string]string{}, edited: map[string]time.Time{},
		workloads: map[string]*simWorkload{}, pods: map[string]*simPod{}, started: clock.Now()}
	// the simple tracker: the managed-fields one builds a REST mapper at
	// every create, most of a run's time; nothing here applies
	w.client = fake.NewSimpleClientset() //nolint:staticcheck // see above

	w.client.PrependReactor("*", "*", w.react)
	return w
}

// hash is a deterministic draw from the seed and the words given.
func (w *simWorld) hash(words ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, w.seed)
	for _, x := range words {
		fmt.Fprint(h, "/", x)
	}
	return h.Sum64()
}

// react runs before every API call: the world catches up with the clock,
// then a fault whose window covers the call answers it.
func (w *simWorld) react(a k8stesting.Action) (bool, runtime.Object, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance()
	res := a.GetResource().Resource
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	if f := w.faultAt(w.faults, a.GetVerb(), res); f != nil {
		return true, nil, faultErrors[f.class](res)
	}
	switch {
	case a.GetVerb() == "create" && res == "selfsubjectaccessreviews":
		return true, allowed(a), nil
	case a.GetVerb() == "create" && res == "pods/eviction":
		return true, nil, w.evict(a.(k8stesting.CreateAction))
	case a.GetVerb() == "patch" && res == "deployments":
		// the Deployment controller sees a restart at once: its rollout
		// starts at the patch
		handled, obj, err := k8stesting.ObjectReaction(w.tracker())(a)
		if wl := w.workloads[a.GetNamespace()+"/"+a.(k8stesting.PatchAction).GetName()]; err == nil && wl != nil {
			w.noticeRestart(wl, w.clock.Now())
		}
		return handled, obj, err
	}
	return false, nil, nil
}

func (w *simWorld) faultAt(faults []simFault, verb, res string) *simFault {
	now := w.clock.Now()
	for i := range faults {
		f := &faults[i]
		if (f.verb == verb || f.verb == "*") && (f.resource == res || f.resource == "*") && !now.Before(f.from) && now.Before(f.to) {
			return f
		}
	}
	return nil
}

// tracker is the object store, reached without the reactors.
func (w *simWorld) tracker() k8stesting.ObjectTracker { return w.client.Tracker() }

var (
	gvrConfigMaps  = corev1.SchemeGroupVersion.WithResource("configmaps")
	gvrPods        = corev1.SchemeGroupVersion.WithResource("pods")
	gvrDeployments = appsv1.SchemeGroupVersion.WithResource("deployments")
	gvrReplicaSets = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

func (w *simWorld) must(err error) {
	if err != nil {
		panic(fmt.Sprintf("simulated world: %v", err))
	}
}

// putConfigMap writes the ConfigMap's data (an edit at the clock's time).
func (w *simWorld) putConfigMap(ns, name string, data map[string]string) {
	now := metav1.NewTime(w.clock.Now())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("cm-" + ns + "-" + name),
		CreationTimestamp: metav1.NewTime(w.started),
		ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "sim", Operation: metav1.ManagedFieldsOperationUpdate, Time: &now}}},
		Data: maps.Clone(data)}
	w.uidSeq++
	cm.ResourceVersion = fmt.Sprint(w.uidSeq) // the fake tracker sets none
	k := ns + "/" + name
	if _, ok := w.data[k]; ok {
		w.must(w.tracker().Update(gvrConfigMaps, cm, ns))
	} else {
		w.must(w.tracker().Add(cm))
	}
	w.data[k] = maps.Clone(data)
	w.edited[k] = now.Time
}

func (w *simWorld) configMap(ns, name string) *corev1.ConfigMap {
	o, err := w.tracker().Get(gvrConfigMaps, ns, name)
	w.must(err)
	return o.(*corev1.ConfigMap)
}

// addWorkload creates Deployment name with its ReplicaSet and pods.
func (w *simWorld) addWorkload(ns, name string, replicas int, uses []simUse, ann map[string]string) {
	wl := &simWorkload{ns: ns, name: name, replicas: replicas, uses: uses, rev: 1}
	w.workloads[ns+"/"+name] = wl
	one := int32(replicas)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("d-" + ns + "-" + name), Generation: 1, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: podSpec(uses)}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1}}
	w.must(w.tracker().Add(dep))
	w.newRevision(wl)
	w.setStatus(wl, true, false)
}

// podSpec is the pod spec of a workload's uses: one container "app".
func podSpec(uses []simUse) corev1.PodSpec {
	c := corev1.Container{Name: "app"}
	var vols []corev1.Volume
	for _, u := range uses {
		if u.key == "" {
			vols = append(vols, corev1.Volume{Name: u.cm, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: u.cm}}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: u.cm, MountPath: "/etc/" + u.cm})
			continue
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: u.envName(), ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: u.cm}, Key: u.key}}})
	}
	return corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{c}, Volumes: vols}
}

func (w *simWorld) deployment(wl *simWorkload) *appsv1.Deployment {
	o, err := w.tracker().Get(gvrDeployments, wl.ns, wl.name)
	w.must(err)
	return o.(*appsv1.Deployment).DeepCopy()
}

// newRevision makes the workload's next ReplicaSet and replaces every pod
// with one of it, which reads the data of now.
func (w *simWorld) newRevision(wl *simWorkload) {
	ctrl := true
	rsName := fmt.Sprintf("%s-%d", wl.name, wl.rev)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: wl.ns, UID: types.UID("rs-" + wl.ns + "-" + rsName),
		Labels:          map[string]string{"app": wl.name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: wl.name, UID: types.UID("d-" + wl.ns + "-" + wl.name), Controller: &ctrl}}}}
	w.must(w.tracker().Add(rs))
	for _, p := range slices.Clone(wl.pods) {
		w.deletePod(wl, p)
	}
	for range wl.replicas {
		w.startPod(wl)
	}
}

func (w *simWorld) deletePod(wl *simWorkload, name string) {
	w.must(w.tracker().Delete(gvrPods, wl.ns, name))
	w.pods[wl.ns+"/"+name].ended = w.clock.Now()
	delete(w.pods, wl.ns+"/"+name)
	wl.pods = slices.DeleteFunc(wl.pods, func(p string) bool { return p == name })
}

// startPod starts one pod of the workload's revision: its env and volumes
// read the data of now.
func (w *simWorld) startPod(wl *simWorkload) {
	wl.podSeq++
	w.uidSeq++
	ctrl := true
	name := fmt.Sprintf("%s-%d-%d", wl.name, wl.rev, wl.podSeq)
	rsName := fmt.Sprintf("%s-%d", wl.name, wl.rev)
	now := w.clock.Now()
	sp := &simPod{ns: wl.ns, name: name, uid: fmt.Sprintf("u%d", w.uidSeq), workload: wl.name, rev: wl.rev, env: map[string]string{},
		mounted: map[string]map[string]string{}, syncedAt: now, started: now, uses: slices.Clone(wl.uses), syncDelay: w.kubeletSync + time.Duration(w.hash("sync", name)%30)*time.Second}
	for _, u := range wl.uses {
		if u.key == "" {
			sp.mounted[u.cm] = maps.Clone(w.data[wl.ns+"/"+u.cm])
		} else if v, ok := w.data[wl.ns+"/"+u.cm][u.key]; ok {
			sp.env[u.envName()] = v
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: wl.ns, UID: types.UID(sp.uid), Labels: map[string]string{"app": wl.name},
		CreationTimestamp: metav1.NewTime(now),
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: types.UID("rs-" + wl.ns + "-" + rsName), Controller: &ctrl}}},
		Spec: podSpec(wl.uses),
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}}}}
	w.must(w.tracker().Add(pod))
	w.pods[wl.ns+"/"+name] = sp
	w.podLog = append(w.podLog, sp)
	wl.pods = append(wl.pods, name)
}

// setStatus writes the Deployment's status: rolled out (observed, every
// replica updated and available), or under way; deadline: its progress
// deadline passed.
func (w *simWorld) setStatus(wl *simWorkload, done, deadline bool) {
	d := w.deployment(wl)
	n := int32(wl.replicas)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n}
	switch {
	case done:
		d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n, n
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}
	case deadline:
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
	default:
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
		d.Status.ObservedGeneration = d.Generation - 1
	}
	w.must(w.tracker().Update(gvrDeployments, d, wl.ns))
}

// advance brings the world to the clock's time: template restarts seen
// (a rollout starts), rollouts completed or past their deadline, annotated
// pods remounted, volumes synced after the kubelet's delay.
func (w *simWorld) advance() {
	now := w.clock.Now()
	for _, k := range slices.Sorted(maps.Keys(w.workloads)) {
		// a restart is seen at its patch (react): here, how rollouts go on
		if r := w.workloads[k].rollout; r != nil {
			w.progress(r, now)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.pods)) {
		w.kubelet(w.pods[k], now)
	}
}

// noticeRestart starts a rollout when the template's restartedAt changed.
func (w *simWorld) noticeRestart(wl *simWorkload, now time.Time) {
	d := w.deployment(wl)
	at := d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]
	if at == wl.seenAt {
		return
	}
	wl.seenAt = at
	d.Generation++
	w.must(w.tracker().Update(gvrDeployments, d, wl.ns))
	w.startRollout(wl, true, now)
	wl.rollout.stamp, _ = time.Parse(time.RFC3339, at)
}

// startRollout draws how the rollout goes: most complete within
// rolloutDur, some stall for good, some pass their progress deadline first.
func (w *simWorld) startRollout(wl *simWorkload, byCmsync bool, now time.Time) {
	n := len(w.rollouts)
	r := &simRollout{w: wl, byCmsync: byCmsync, sent: now}
	h := w.hash("rollout", wl.ns, wl.name, n)
	r.done = now.Add(time.Second + time.Duration(h%uint64(w.rolloutDur/time.Second+1))*time.Second)
	switch {
	case w.stallEvery > 0 && h/7%uint64(w.stallEvery) == 0:
		r.done = time.Time{} // stalls: a crash-looping pod, no progress deadline
	case w.stallEvery > 0 && h/11%uint64(w.stallEvery) == 1:
		r.deadline = now.Add(w.deadlineAfter)
		if h/13%2 == 0 {
			r.done = time.Time{}
		} else {
			r.done = r.deadline.Add(w.deadlineAfter)
		}
	}
	for _, old := range w.rollouts {
		if old.w != wl || old.completed {
			continue
		}
		// superseded: the Deployment rolls out the newest template, the
		// old restarts' pods with it; each ends as the new rollout does
		// (a deadline that passed was seen: it stays), an older one that
		// a stalled rollout superseded before as well
		old.done = r.done
		if old.deadline.IsZero() || now.Before(old.deadline) {
			old.deadline = r.deadline
		}
	}
	wl.rollout = r
	w.rollouts = append(w.rollouts, r)
	w.setStatus(wl, false, false)
}

func (w *simWorld) progress(r *simRollout, now time.Time) {
	switch {
	case r.completed:
	case !r.done.IsZero() && !now.Before(r.done):
		for _, old := range w.rollouts { // the rollouts it superseded end with it
			if old.w == r.w && !old.completed {
				old.completed, old.completedAt, old.done = true, r.done, r.done
			}
		}
		r.completed, r.completedAt = true, r.done
		r.w.rev++
		w.newRevision(r.w)
		w.setStatus(r.w, true, false)
	case !r.deadline.IsZero() && !now.Before(r.deadline) && !r.deadlinePassed:
		r.deadlinePassed = true
		w.setStatus(r.w, false, true)
	}
}

// kubelet remounts a pod's volumes at once when its refreshed-at
// annotation changed, else once the kubelet's sync delay has passed since
// the object's last edit.
func (w *simWorld) kubelet(p *simPod, now time.Time) {
	o, err := w.tracker().Get(gvrPods, p.ns, p.name)
	if err != nil {
		return
	}
	ann := o.(*corev1.Pod).Annotations[refresh.RefreshedAtAnnotation]
	bumped := ann != p.annotated
	p.annotated = ann
	for cm, mounted := range p.mounted {
		k := p.ns + "/" + cm
		if maps.Equal(mounted, w.data[k]) {
			continue
		}
		if bumped || now.Sub(w.edited[k]) >= p.syncDelay {
			p.mounted[cm] = maps.Clone(w.data[k])
			p.syncedAt = now
		}
	}
}

// evict answers an eviction: the pod goes and a replacement of the same
// revision starts at once (it reads the data of now).
func (w *simWorld) evict(a k8stesting.CreateAction) error {
	name := a.GetObject().(metav1.Object).GetName()
	p := w.pods[a.GetNamespace()+"/"+name]
	if p == nil {
		return apierrors.NewNotFound(gvrPods.GroupResource(), name)
	}
	wl := w.workloads[p.ns+"/"+p.workload]
	w.deletePod(wl, name)
	w.startPod(wl)
	w.evictions = append(w.evictions, simEviction{w: wl.ns + "/" + wl.name, pod: name, at: w.clock.Now(), repl: wl.pods[len(wl.pods)-1], podStarted: p.started})
	return nil
}

// Exec implements containerread.Executor: the container as the world has
// it now, answered by readtest's script reader; an env container's read
// fails inside an exec fault's window.
func (w *simWorld) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	w.mu.Lock()
	w.advance()
	p := w.pods[t.Namespace+"/"+t.Pod]
	var c *readtest.Container
	if p != nil {
		c = &readtest.Container{Env: maps.Clone(p.env), Volumes: map[string]readtest.Volume{}}
		for cm, data := range p.mounted {
			files := map[string][]byte{}
			for k, v := range data {
				files[k] = []byte(v)
			}
			c.Volumes["/etc/"+cm] = readtest.Volume{Target: p.syncedAt.UTC().Format("..2006_01_02_15_04_05.000000000"), Files: files}
		}
		if len(p.env) > 0 && w.faultAt(w.execFaults, "exec", "*") != nil {
			c.Err = context.DeadlineExceeded
		}
	}
	w.mu.Unlock()
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{}}
	if c != nil {
		ex.Containers[t.Namespace+"/"+t.Pod+"/"+t.Container] = c
	}
	return ex.Exec(ctx, t, argv, stdout, stderr)
}

// stale lists the consumers whose container does not have the API's data
// of a key it reads: "ns/workload cm/key" (key "*" for a volume).
func (w *simWorld) stale() map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance()
	out := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(w.pods)) {
		p := w.pods[k]
		for _, u := range p.uses {
			data := w.data[p.ns+"/"+u.cm]
			var ok bool
			if u.key == "" {
				ok = maps.Equal(p.mounted[u.cm], data)
			} else {
				ok = p.env[u.envName()] == data[u.key]
			}
			if !ok {
				id := p.ns + "/" + p.workload
				out[id] = append(out[id], u.cm+"/"+cmpKey(u.key))
			}
		}
	}
	for id := range out {
		sort.Strings(out[id])
		out[id] = slices.Compact(out[id])
	}
	return out
}

func cmpKey(k string) string {
	if k == "" {
		return "*"
	}
	return k
}

// allowed answers a SelfSubjectAccessReview: every permission is granted.
func allowed(a k8stesting.Action) runtime.Object {
	r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
	r.Status.Allowed = true
	return r
}

// isPodOf tells whether pod name was started for workload w ("ns/name").
func (w *simWorld) isPodOf(name, workload string) bool {
	return slices.ContainsFunc(w.podLog, func(p *simPod) bool {
		return p.name == name && p.ns+"/"+p.workload == workload
	})
}
