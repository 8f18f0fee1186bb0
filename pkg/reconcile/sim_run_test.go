package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// simStart is Monday 2026-01-05 01:55 UTC: restart windows open within
// minutes, and close again.
var simStart = time.Date(2026, 1, 5, 1, 55, 0, 0, time.UTC)

// simEvent is an event of the loop of leader n.
type simEvent struct {
	Event
	leader int
}

// simEdit is one edit of a ConfigMap: the keys it changed.
type simEdit struct {
	// seen is how many events the loop had said when the edit reached it
	// (-1: not yet, a watch cut)
	seen int
	at   time.Time
	ns   string
	cm   string
	keys []string
}

// simAnn is a workload's annotations and uses from at on.
type simAnn struct {
	at   time.Time
	ann  map[string]string
	uses []simUse
}

// simRun is one run of a plan: the world, the loop of the current leader
// and what happened.
type simRun struct {
	plan   simPlan
	ctx    context.Context
	clock  *simClock
	world  *simWorld
	loop   *Loop
	leader int
	events []simEvent
	edits  []simEdit
	anns   map[string][]simAnn // "ns/workload"
	// the watch: what the informer delivered, whether it is cut, its
	// version, and the loop's state of it
	delivered map[string]*corev1.ConfigMap
	cut       bool
	rv        int
	watch     *watchState
	watermark time.Time
	steps     int
	values    int
	draws     int
	leaders   []time.Time // when each leader started
	end       time.Time
	// horizon is when the run was cut; horizonCut: the loop still had
	// work due after it
	horizon    time.Time
	horizonCut bool
	// flights are the violations of the restarts' states under way,
	// found between steps (checkFlights), each said once
	flights    []string
	flightSeen map[string]bool
	// faultLog are the faults as applied (on the clock, a heal ending
	// them); verifying are the workloads (ns/name) whose restart the loop
	// still verified when the horizon cut the run
	faultLog  []simFault
	verifying map[string]bool
}

func (r *simRun) LastSyncResourceVersion() string { return fmt.Sprint(r.rv) }

// runPlan runs p and returns what happened, for the checker.
func runPlan(p simPlan) *simRun {
	clock := &simClock{now: simStart}
	r := &simRun{plan: p, ctx: context.Background(), clock: clock, world: newSimWorld(p.seed, clock), anns: map[string][]simAnn{},
		delivered: map[string]*corev1.ConfigMap{}}
	s := p.settings
	r.world.rolloutDur, r.world.deadlineAfter, r.world.stallEvery, r.world.kubeletSync = s.rolloutDur, s.deadlineIn, s.stallEvery, s.kubeletSync
	for n := range s.namespaces {
		for _, cm := range simConfigMaps {
			ns := fmt.Sprintf("ns%d", n)
			r.world.putConfigMap(ns, cm, map[string]string{"k0": "a", "k1": "a", "k2": "a"})
			r.delivered[ns+"/"+cm] = r.world.configMap(ns, cm)
		}
	}
	for _, w := range p.workloads {
		r.world.addWorkload(w.ns, w.name, w.replicas, w.uses, maps.Clone(w.ann))
		r.anns[w.ns+"/"+w.name] = []simAnn{{at: simStart, ann: maps.Clone(w.ann), uses: slices.Clone(w.uses)}}
	}
	r.newLeader(false)
	r.drive()
	return r
}

// newLoop is a leader's Loop on the world, as the controller configures
// it, on the virtual clock.
func (r *simRun) newLoop() *Loop {
	s := r.plan.settings
	vo := inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Now: r.clock.Now}
	via := refresh.RestartViaTemplate
	if s.evict {
		via = refresh.RestartViaEvict
	}
	l := &Loop{
		Config: Config{Debounce: s.debounce, MaxWait: s.maxWait, MaxConcurrentRestarts: s.maxConcurrent, MinRestartInterval: s.minInterval,
			RestartRate: s.rate, RestartBurst: s.burst, RolloutWait: s.rolloutWait, VerifyInRound: s.verifyInRound, RequireOptIn: s.requireOptIn,
			DigestKey: []byte("0123456789abcdef0123"), Resume: true, Watermark: r.watermark, UnderWay: r.underWay(), Now: r.clock.Now,
			Refresh: refresh.Config{Strategy: refresh.StrategyAuto, RestartVia: via, MaxRestarts: -1, Yes: true, Wait: true, Timeout: s.timeout,
				Verify: vo, Now: r.clock.Now, Sleep: r.clock.Sleep, PodDelay: -1, Concurrency: 1, Serial: true,
				PatchBackoff: &wait.Backoff{Steps: 5, Duration: 200 * time.Millisecond, Factor: 2}}},
		Client:      r.world.client,
		Cluster:     refresh.ClientCluster(r.world.client, r.world, vo, false, ""),
		Annotations: refresh.ClientWorkloads{Client: r.world.client},
		Named:       refresh.ClientWorkloads{Client: r.world.client},
		Clock:       r.clock.Now,
		Acted:       func(t time.Time) { r.watermark = t },
	}
	l.jitter = r.jitter
	leader := r.leader
	l.Emit = func(e Event) { r.events = append(r.events, simEvent{Event: e, leader: leader}) }
	l.defaults()
	return l
}

// jitter is wait.Jitter drawn from the seed, in the order asked.
func (r *simRun) jitter(d time.Duration, f float64) time.Duration {
	r.draws++
	return d + time.Duration(float64(d)*f*float64(r.world.hash("jitter", r.draws)%1000)/1000)
}

// underWay are the restarts a new leader finds under way, as the
// controller's start finds them: a Deployment that rolls out and whose
// template has a restartedAt cmsync wrote, with that time, whoever's
// change the rollout is of (a deploy that superseded the restart).
func (r *simRun) underWay() map[refresh.Target]time.Time {
	out := map[refresh.Target]time.Time{}
	r.world.mu.Lock()
	defer r.world.mu.Unlock()
	for _, ro := range r.world.rollouts { // in the order sent: the last restart of each workload
		if wl := ro.w; ro.byCmsync && wl.rollout != nil && !wl.rollout.completed {
			out[refresh.Target{Kind: "Deployment", Namespace: wl.ns, Name: wl.name}] = ro.sent
		}
	}
	return out
}

// newLeader stops the current loop (if any) as losing the lease stops it
// and starts the next from the records and the watermark.
func (r *simRun) newLeader(resume bool) {
	if r.loop != nil {
		r.loop.dropPending()
		r.loop.dropVerifications()
		r.leader++
	}
	r.leaders = append(r.leaders, r.clock.Now())
	r.loop = r.newLoop()
	r.cut = false
	r.world.mu.Lock()
	for k := range r.delivered { // a new informer lists: what it finds is no change
		ns, name, _ := strings.Cut(k, "/")
		r.delivered[k] = r.world.configMap(ns, name)
	}
	r.world.mu.Unlock()
	r.rv++
	r.watch = r.loop.watchOf("ConfigMaps", r)
	if !resume {
		return
	}
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	for ns := range r.plan.settings.namespaces {
		r.loop.resumeIn(r.ctx, fmt.Sprintf("ns%d", ns), out, &n)
	}
	r.loop.putDue(out)
}

// simHorizon bounds a run after its last operation: what is still due
// then (a restart window of tomorrow) is not waited for.
const simHorizon = 3 * time.Hour

// drive applies the operations at their times and lets the loop act on
// what falls due in between, on the virtual clock; after the last
// operation the faults stop, the watch lists again, and the loop runs
// until nothing is due (or the horizon).
func (r *simRun) drive() {
	ops := r.plan.ops
	var last time.Duration
	if len(ops) > 0 {
		last = ops[len(ops)-1].at
	}
	healed := false
	horizon := simStart.Add(last + simHorizon) // from the last operation as applied, once it is (clock jumps move it)
	for r.steps = 0; r.steps < 20000; r.steps++ {
		next := r.loop.settle(r.ctx)
		r.checkFlights()
		r.loop.Acted(r.loop.actedUntil())
		now := r.clock.Now()
		if len(ops) > 0 && !simStart.Add(ops[0].at).After(now) {
			r.apply(ops[0])
			ops = ops[1:]
			continue
		}
		if len(ops) == 0 && !healed {
			r.heal()
			healed = true
			if h := now.Add(simHorizon); h.After(horizon) {
				horizon = h
			}
			continue
		}
		t := horizon
		if len(ops) > 0 {
			t = simStart.Add(ops[0].at)
		}
		if !next.IsZero() && next.Before(t) {
			t = next
		}
		if !t.Before(horizon) && len(ops) == 0 {
			r.horizon, r.horizonCut = horizon, !next.IsZero()
			r.verifying = r.loop.verifyingTargets()
			break
		}
		if floor := now.Add(time.Millisecond); t.Before(floor) {
			t = floor
		}
		r.clock.set(t)
	}
	// the kubelet's sync delay passes: every volume follows by itself
	r.clock.set(r.clock.Now().Add(3 * time.Minute))
	r.end = r.clock.Now()
}

// heal ends every fault and lists the watch again.
func (r *simRun) heal() {
	r.world.mu.Lock()
	r.world.faults, r.world.execFaults = nil, nil
	r.world.mu.Unlock()
	for i := range r.faultLog {
		if now := r.clock.Now(); r.faultLog[i].to.After(now) {
			r.faultLog[i].to = now
		}
	}
	if r.cut {
		r.relist()
	}
}

// apply carries out one operation at the clock's time.
func (r *simRun) apply(o simOp) {
	now := r.clock.Now()
	switch o.kind {
	case "edit":
		r.edit(o.ns, o.name, o.key)
	case "read":
		r.addRead(o.ns, o.name, o.key)
	case "annotate":
		r.annotate(o.ns, o.name, o.ann)
	case "replace":
		r.world.mu.Lock()
		if wl := r.world.workloads[o.ns+"/"+o.name]; wl != nil && len(wl.pods) > 0 {
			r.world.deletePod(wl, wl.pods[0])
			r.world.startPod(wl)
		}
		r.world.mu.Unlock()
	case "cut":
		if !r.cut {
			r.cut = true
			r.loop.watchFailed(r.watch)
		}
	case "relist":
		r.relist()
	case "recut": // listed again, and cut again before the loop looks
		r.relist()
		r.cut = true
		r.loop.watchFailed(r.watch)
	case "leader":
		r.newLeader(true)
	case "jump":
		r.clock.set(now.Add(o.dur))
	case "fault":
		r.world.mu.Lock()
		f := simFault{from: now, to: now.Add(o.dur), verb: o.verb, resource: o.res, class: o.cls}
		r.world.faults = append(r.world.faults, f)
		r.faultLog = append(r.faultLog, f)
		r.world.mu.Unlock()
	case "unreadable":
		r.world.mu.Lock()
		r.world.execFaults = append(r.world.execFaults, simFault{from: now, to: now.Add(o.dur), verb: "exec", resource: "*"})
		r.world.mu.Unlock()
	}
}

// edit gives key of ConfigMap ns/name a new value, and delivers the
// change to the loop unless the watch is cut.
func (r *simRun) edit(ns, name, key string) {
	r.values++
	r.world.mu.Lock()
	data := maps.Clone(r.world.data[ns+"/"+name])
	data[key] = fmt.Sprintf("v%d", r.values)
	r.world.putConfigMap(ns, name, data)
	r.world.mu.Unlock()
	r.edits = append(r.edits, simEdit{seen: -1, at: r.clock.Now(), ns: ns, cm: name, keys: []string{key}})
	if !r.cut {
		r.deliver(ns + "/" + name)
	}
}

// deliver hands the informer's update of one ConfigMap to the loop.
func (r *simRun) deliver(k string) {
	ns, name, _ := strings.Cut(k, "/")
	r.world.mu.Lock()
	cur := r.world.configMap(ns, name)
	r.world.mu.Unlock()
	old := r.delivered[k]
	r.delivered[k] = cur
	for i := range r.edits {
		if e := &r.edits[i]; e.seen < 0 && e.ns == ns && e.cm == name {
			e.seen = len(r.events)
		}
	}
	r.rv++
	r.loop.noteChange(inspect.ConfigMapObject(old), inspect.ConfigMapObject(cur))
}

// relist is the informer listing again after a cut: each ConfigMap that
// differs from its cache is an update.
func (r *simRun) relist() {
	r.cut = false
	r.rv++
	for _, k := range slices.Sorted(maps.Keys(r.delivered)) {
		ns, name, _ := strings.Cut(k, "/")
		r.world.mu.Lock()
		cur := r.world.configMap(ns, name)
		r.world.mu.Unlock()
		if cur.ResourceVersion != r.delivered[k].ResourceVersion {
			r.deliver(k)
		}
	}
}

// addRead is a deploy that makes the workload's pods read one more key of
// an existing ConfigMap: its template changes and it rolls out.
func (r *simRun) addRead(ns, name, ref string) {
	cm, key, _ := strings.Cut(ref, "/")
	u := simUse{cm: cm, key: key}
	r.world.mu.Lock()
	defer r.world.mu.Unlock()
	r.world.advance() // the rollout under way as of now, before the deploy supersedes it
	wl := r.world.workloads[ns+"/"+name]
	if slices.Contains(wl.uses, u) {
		return
	}
	wl.uses = append(wl.uses, u)
	d := r.world.deployment(wl)
	d.Spec.Template.Spec = podSpec(wl.uses)
	d.Generation++
	r.world.must(r.world.tracker().Update(gvrDeployments, d, ns))
	r.world.startRollout(wl, false, r.clock.Now())
	prev := r.anns[ns+"/"+name]
	r.anns[ns+"/"+name] = append(prev, simAnn{at: r.clock.Now(), ann: prev[len(prev)-1].ann, uses: slices.Clone(wl.uses)})
}

// annotate sets the workload's annotations (its opt-in and schedule) to
// ann, keeping cmsync's record.
func (r *simRun) annotate(ns, name string, ann map[string]string) {
	r.world.mu.Lock()
	defer r.world.mu.Unlock()
	wl := r.world.workloads[ns+"/"+name]
	d := r.world.deployment(wl)
	rec, ok := d.Annotations[AnnotationApplied]
	d.Annotations = maps.Clone(ann)
	if ok {
		d.Annotations[AnnotationApplied] = rec
	}
	r.world.must(r.world.tracker().Update(gvrDeployments, d, ns))
	prev := r.anns[ns+"/"+name]
	r.anns[ns+"/"+name] = append(prev, simAnn{at: r.clock.Now(), ann: maps.Clone(ann), uses: prev[len(prev)-1].uses})
}

// verifyingTargets are the workloads (ns/name) whose handed-over restart
// or eviction the loop still verifies.
func (l *Loop) verifyingTargets() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, vs := range l.verifying {
		for _, v := range vs {
			for _, res := range v.results {
				if isRestart(res.Action) {
					out[res.Target.Namespace+"/"+res.Target.Name] = true
				}
			}
		}
	}
	return out
}
