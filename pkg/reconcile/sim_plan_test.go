package reconcile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// simSettings are the loop's settings of one run, drawn from its seed.
type simSettings struct {
	namespaces             int
	maxConcurrent, burst   int
	rate                   float64
	minInterval            time.Duration
	debounce, maxWait      time.Duration
	rolloutWait, timeout   time.Duration
	verifyInRound          time.Duration
	evict, requireOptIn    bool
	rolloutDur, deadlineIn time.Duration
	stallEvery             int
	kubeletSync            time.Duration
}

func (s simSettings) String() string {
	return fmt.Sprintf("ns=%d limit=%d rate=%g/s burst=%d interval=%s debounce=%s maxWait=%s rolloutWait=%s timeout=%s verifyInRound=%s evict=%t optIn=%t rollout=%s deadline=%s stallEvery=%d kubelet=%s",
		s.namespaces, s.maxConcurrent, s.rate, s.burst, s.minInterval, s.debounce, s.maxWait, s.rolloutWait, s.timeout, s.verifyInRound,
		s.evict, s.requireOptIn, s.rolloutDur, s.deadlineIn, s.stallEvery, s.kubeletSync)
}

// simWorkloadSpec is a workload of the initial world: what it reads and
// its annotations.
type simWorkloadSpec struct {
	ns, name string
	replicas int
	uses     []simUse
	ann      map[string]string
}

// simOp is one operation of a run, at an offset from its start.
type simOp struct {
	at   time.Duration
	kind string
	ns   string
	name string // ConfigMap or workload
	key  string
	ann  map[string]string
	dur  time.Duration
	verb string
	res  string
	cls  int
}

func (o simOp) String() string {
	s := fmt.Sprintf("%s %s", o.at, o.kind)
	for _, f := range []string{o.ns, o.name, o.key, o.verb, o.res} {
		if f != "" {
			s += " " + f
		}
	}
	if o.dur > 0 {
		s += " for " + o.dur.String()
	}
	if o.kind == "fault" {
		s += fmt.Sprintf(" class %d", o.cls)
	}
	if len(o.ann) > 0 {
		s += fmt.Sprintf(" %v", o.ann)
	}
	return s
}

// simPlan is a run: its settings, initial world and operations.
type simPlan struct {
	seed      int64
	settings  simSettings
	workloads []simWorkloadSpec
	ops       []simOp
}

var simKeys = []string{"k0", "k1", "k2"}
var simConfigMaps = []string{"c0", "c1", "c2"}

// newSimPlan draws a run from its seed.
func newSimPlan(seed int64) simPlan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	p := simPlan{seed: seed, settings: drawSettings(r)}
	for n := range p.settings.namespaces {
		ns := fmt.Sprintf("ns%d", n)
		for i := range 1 + r.IntN(4) {
			p.workloads = append(p.workloads, drawWorkload(r, ns, fmt.Sprintf("w%d", i)))
		}
	}
	p.ops = drawOps(r, p)
	if p.settings.evict {
		p.ops = withLongRefusal(p.ops, seed, p.settings.timeout)
	}
	return p
}

// withLongRefusal adds, to one evicting run in two, a window in which
// evictions are refused (429, as a PodDisruptionBudget refuses them) for
// longer than --timeout: the engine gives up its retries, and the
// eviction fails for a cause that may pass. The faults drawn with the
// other operations last at most three minutes, and --timeout is 30 s to 5
// minutes, so few of them outlast it. Drawn from its own source, so that
// the draws of every other operation are what they were.
func withLongRefusal(ops []simOp, seed int64, timeout time.Duration) []simOp {
	r := rand.New(rand.NewPCG(uint64(seed), 0xe71c7))
	if r.IntN(2) != 0 {
		return ops
	}
	at := time.Duration(r.IntN(1200)) * time.Second
	dur := timeout + time.Duration(1+r.IntN(180))*time.Second
	ops = append(ops, simOp{at: at, kind: "fault", verb: "create", res: "pods/eviction", cls: 1, dur: dur})
	slices.SortStableFunc(ops, func(a, b simOp) int { return int(a.at - b.at) })
	return ops
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func drawSettings(r *rand.Rand) simSettings {
	s := simSettings{
		namespaces:    1 + r.IntN(2),
		maxConcurrent: pick(r, 0, 1, 1, 2, 3),
		burst:         pick(r, 1, 2, 3),
		minInterval:   pick(r, 0, 0, 30*time.Second, 5*time.Minute),
		debounce:      pick(r, time.Second, 2*time.Second, 5*time.Second),
		rolloutWait:   pick(r, 2*time.Minute, 5*time.Minute, 10*time.Minute),
		timeout:       pick(r, 30*time.Second, 2*time.Minute, 5*time.Minute),
		verifyInRound: pick(r, time.Second, 5*time.Second),
		evict:         r.IntN(4) == 0,
		requireOptIn:  r.IntN(2) == 0,
		rolloutDur:    pick(r, 5*time.Second, 30*time.Second, 3*time.Minute),
		deadlineIn:    pick(r, 20*time.Second, time.Minute),
		stallEvery:    pick(r, 0, 0, 4, 8),
		kubeletSync:   pick(r, 30*time.Second, 60*time.Second),
	}
	s.maxWait = s.debounce * time.Duration(pick(r, 3, 10))
	if r.IntN(2) == 0 {
		s.rate = pick(r, 1.0/60, 1.0/600, 1.0/3600)
	}
	return s
}

func drawWorkload(r *rand.Rand, ns, name string) simWorkloadSpec {
	w := simWorkloadSpec{ns: ns, name: name, replicas: 1 + r.IntN(2), ann: map[string]string{}}
	for range 1 + r.IntN(2) {
		u := simUse{cm: pick(r, simConfigMaps...)}
		if r.IntN(3) > 0 {
			u.key = pick(r, simKeys...)
		}
		if !slices.Contains(w.uses, u) {
			w.uses = append(w.uses, u)
		}
	}
	for k, v := range drawAnnotations(r, w.uses) {
		w.ann[k] = v
	}
	return w
}

// drawAnnotations opts a workload in (or not) and gives it a schedule.
func drawAnnotations(r *rand.Rand, uses []simUse) map[string]string {
	ann := map[string]string{}
	switch r.IntN(5) {
	case 0:
		ann[AnnotationWatch] = "true"
	case 1:
		ann[ReloaderAuto] = "true"
	case 2:
		ann[ReloaderConfigMapReload] = uses[0].cm
	case 3:
		ann[AnnotationWatch] = "true"
		ann[AnnotationOnChange] = pick(r, OnChangeRestart, OnChangeRemount)
	}
	switch r.IntN(6) {
	case 0:
		ann["kubectl-cmsync.io/restart-window"] = pick(r, "Mon-Sun 02:00-02:10", "Mon-Sun 02:20-02:30", "Mon-Sun 01:00-01:30")
	case 1:
		ann[ReloaderPausePeriod] = pick(r, "1m", "5m")
	}
	return ann
}

// drawOps draws the run's operations over its first twenty minutes.
func drawOps(r *rand.Rand, p simPlan) []simOp {
	var ops []simOp
	n := 4 + r.IntN(14)
	for i := range n {
		at := time.Duration(r.IntN(1200)) * time.Second
		ns := fmt.Sprintf("ns%d", r.IntN(p.settings.namespaces))
		ops = append(ops, drawOp(r, p, i, at, ns)...)
	}
	slices.SortStableFunc(ops, func(a, b simOp) int { return int(a.at - b.at) })
	return ops
}

func drawOp(r *rand.Rand, p simPlan, i int, at time.Duration, ns string) []simOp {
	cm, key := pick(r, simConfigMaps...), pick(r, simKeys...)
	switch k := r.IntN(20); {
	case k < 7:
		return []simOp{{at: at, kind: "edit", ns: ns, name: cm, key: key}}
	case k < 9: // a burst: several edits a second apart
		var out []simOp
		for j := range 2 + r.IntN(4) {
			out = append(out, simOp{at: at + time.Duration(j)*time.Second, kind: "edit", ns: ns, name: pick(r, simConfigMaps...), key: pick(r, simKeys...)})
		}
		return out
	case k < 10:
		return []simOp{{at: at, kind: "read", ns: ns, name: workloadIn(r, p, ns), key: cm + "/" + key}}
	case k < 11:
		return []simOp{{at: at, kind: "annotate", ns: ns, name: workloadIn(r, p, ns), ann: drawAnnotations(r, []simUse{{cm: cm}})}}
	case k < 12:
		return []simOp{{at: at, kind: "replace", ns: ns, name: workloadIn(r, p, ns)}}
	case k < 13: // a watch cut, relisted later; sometimes cut again soon after
		d := time.Duration(1+r.IntN(120)) * time.Second
		out := []simOp{{at: at, kind: "cut"}, {at: at + d, kind: "relist"}}
		if r.IntN(2) == 0 {
			out = secondCut(out, at, i, d, ns, cm, key)
		}
		return out
	case k < 15:
		return []simOp{{at: at, kind: "leader"}}
	case k < 16:
		return []simOp{{at: at, kind: "jump", dur: time.Duration(5+r.IntN(40)) * time.Minute}}
	case k < 18:
		return []simOp{{at: at, kind: "fault", verb: pick(r, "get", "list", "patch", "create", "*"),
			res: pick(r, "pods", "deployments", "replicasets", "configmaps", "pods/eviction", "*"),
			cls: r.IntN(len(faultErrors)), dur: time.Duration(1+r.IntN(180)) * time.Second}}
	default:
		return []simOp{{at: at, kind: "unreadable", dur: time.Duration(5+r.IntN(360)) * time.Second}}
	}
}

// secondCut adds to a cut and its relist (out) a second cut right after
// the relist. One time in two, the relist and the second cut come with no
// look of the loop's in between (a 429 storm: the watch fails again as
// soon as it lists), an edit is made during the second cut, and a new
// leader starts before the watch lists again: the edit reaches no
// informer of the old leader, and the new one finds it only by the
// watermark where no record covers it. Drawn from its own source (the
// op's time and place), so that the draws of every other operation, and
// the seeds kept for them, are what they were.
func secondCut(out []simOp, at time.Duration, i int, d time.Duration, ns, cm, key string) []simOp {
	r := rand.New(rand.NewPCG(uint64(at), uint64(i)))
	if r.IntN(2) != 0 || d < 2*time.Second {
		return append(out, simOp{at: at + d, kind: "cut"}, simOp{at: at + 2*d, kind: "relist"})
	}
	secs := int64(d / time.Second)
	edit := r.Int64N(secs - 1)                 // 0 to secs-2 s into the second cut
	leader := edit + 1 + r.Int64N(secs-1-edit) // after the edit, before the relist
	return []simOp{out[0], {at: at + d, kind: "recut"},
		{at: at + d + time.Duration(edit)*time.Second, kind: "edit", ns: ns, name: cm, key: key},
		{at: at + d + time.Duration(leader)*time.Second, kind: "leader"}, {at: at + 2*d, kind: "relist"}}
}

func workloadIn(r *rand.Rand, p simPlan, ns string) string {
	var names []string
	for _, w := range p.workloads {
		if w.ns == ns {
			names = append(names, w.name)
		}
	}
	return pick(r, names...)
}

// opsString lists ops, one a line.
func opsString(ops []simOp) string {
	var b strings.Builder
	for _, o := range ops {
		b.WriteString("  " + o.String() + "\n")
	}
	return b.String()
}
