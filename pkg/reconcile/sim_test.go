package reconcile

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The simulator: the loop's production code (rounds, gate, pacer, unread
// retries, hand-over, records, resume and the watermark) driven against a
// simulated world (sim_world_test.go) on a virtual clock, under a seeded
// schedule of operations and faults (sim_plan_test.go), with every promise
// checked at the end (sim_check_test.go). A seed replays exactly: the
// world is a function of the clock, every fault a window of it, and the
// loop runs its rounds one at a time (settle) with the engine's sleeps on
// the same clock.
//
//	go test ./pkg/reconcile -run 'TestSimulate$' -sim.seed=N -v   one seed, its trace
//	... -sim.seed=N -sim.shrink -v                                  its shortest failing operations' trace
//	make simulate SEEDS=100000                                      many fresh seeds
//
// In the unit suite it runs the corpus (testdata/sim-corpus.txt: seeds
// that found a defect, kept) and fresh seeds for -sim.budget.

var (
	simSeed   = flag.Int64("sim.seed", -1, "replay this seed alone, printing its operations and trace")
	simSeeds  = flag.Int("sim.seeds", 0, "run this many fresh seeds (0: as many as -sim.budget allows)")
	simFrom   = flag.Int64("sim.from", 0, "the first fresh seed (0: drawn from the time, and printed)")
	simBudget = flag.Duration("sim.budget", 0, "how long the fresh seeds may run when -sim.seeds is 0")
	simCorpus = flag.Bool("sim.corpus", true, "run the corpus of seeds first (and check that each replays)")
	simShrink = flag.Bool("sim.shrink", false, "with -sim.seed: shrink the seed's operations first, and trace the shortest list that still fails")
)

func TestSimulate(t *testing.T) {
	if *simSeed >= 0 {
		replaySeed(t, *simSeed)
		return
	}
	var corpus []int64
	if *simCorpus {
		corpus = readCorpus(t)
	}
	traces := map[int64]uint64{}
	for _, seed := range corpus {
		v := simulate(seed)
		if len(v.violations) > 0 {
			t.Errorf("corpus seed %d: %s", seed, report(seed, v))
		}
		traces[seed] = v.trace
	}
	checkDeterminism(t, corpus, traces)
	from := *simFrom
	if from == 0 {
		from = time.Now().UnixNano() % 1_000_000_000
	}
	start := time.Now()
	shrunk := 0
	n, steps, bad := runFresh(from, *simSeeds, *simBudget, func(seed int64, v simResult) {
		if shrunk++; shrunk > 3 { // shrinking costs a run per operation: the first few
			t.Errorf("seed %d, %.1f s in: %d violations: %s (replay: go test ./pkg/reconcile -run 'TestSimulate$' -sim.seed=%d -v)",
				seed, time.Since(start).Seconds(), len(v.violations), v.violations[0], seed)
			return
		}
		t.Errorf("seed %d, %.1f s in: %s", seed, time.Since(start).Seconds(), report(seed, v))
	})
	// the one line make simulate ends with
	fmt.Printf("simulated %d seeds, %d steps, %d violations in %.0f s (fresh seeds from %d; corpus %d seeds)\n",
		n, steps, bad, time.Since(start).Seconds(), from, len(corpus))
	if n == 0 && (*simSeeds > 0 || *simBudget > 0) {
		t.Fatal("no fresh seed ran within the budget")
	}
}

// simResult is what one seed's run came to.
type simResult struct {
	violations []string
	steps      int
	trace      uint64
}

func simulate(seed int64) simResult {
	return simulatePlan(newSimPlan(seed))
}

func simulatePlan(p simPlan) (res simResult) {
	defer func() {
		if e := recover(); e != nil {
			res.violations = append(res.violations, fmt.Sprintf("panic: %v\n%s", e, debug.Stack()))
		}
	}()
	r := runPlan(p)
	return simResult{violations: r.check(), steps: r.steps, trace: r.traceHash()}
}

// runFresh runs seeds from from on, n of them (0: until budget), on every
// core; bad gets each failing seed.
func runFresh(from int64, n int, budget time.Duration, bad func(int64, simResult)) (ran, steps, violations int64) {
	var next atomic.Int64
	next.Store(from)
	deadline := time.Now().Add(budget)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed := next.Add(1) - 1
				if (n > 0 && seed >= from+int64(n)) || (n == 0 && time.Now().After(deadline)) {
					return
				}
				v := simulate(seed)
				mu.Lock()
				ran++
				steps += int64(v.steps)
				if len(v.violations) > 0 {
					violations++
					bad(seed, v)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ran, steps, violations
}

// report says a failing seed's violations, the command that replays it
// and the shortest list of operations that still fails.
func report(seed int64, v simResult) string {
	p := newSimPlan(seed)
	short := shrink(p)
	return fmt.Sprintf("%d violations:\n  %s\nreplay: go test ./pkg/reconcile -run 'TestSimulate$' -sim.seed=%d -v\nsettings: %s\nshrunk to %d of %d operations:\n%s",
		len(v.violations), strings.Join(v.violations, "\n  "), seed, p.settings, len(short.ops), len(p.ops), opsString(short.ops))
}

// shrink removes operations one at a time while the run still fails.
func shrink(p simPlan) simPlan {
	for i := 0; i < len(p.ops); {
		q := p
		q.ops = append(append([]simOp{}, p.ops[:i]...), p.ops[i+1:]...)
		if len(simulatePlan(q).violations) > 0 {
			p = q
			continue
		}
		i++
	}
	return p
}

func replaySeed(t *testing.T, seed int64) {
	p := newSimPlan(seed)
	if *simShrink {
		if len(simulatePlan(p).violations) == 0 {
			t.Fatalf("seed %d does not fail: nothing to shrink", seed)
		}
		p = shrink(p)
	}
	t.Logf("settings: %s", p.settings)
	for _, w := range p.workloads {
		t.Logf("workload %s/%s x%d reads %v %v", w.ns, w.name, w.replicas, w.uses, w.ann)
	}
	t.Logf("operations:\n%s", opsString(p.ops))
	r := runPlan(p)
	for _, e := range r.events {
		t.Logf("%s L%d %s", r.rel(e.Time), e.leader, eventLine(e.Event))
	}
	for _, x := range r.restarts() {
		t.Logf("restart %s at %s", x.w, r.rel(x.at))
	}
	if v := r.check(); len(v) > 0 {
		t.Errorf("seed %d: %d violations:\n  %s", seed, len(v), strings.Join(v, "\n  "))
	}
}

// eventLine is an event as one line of the trace.
func eventLine(e Event) string {
	s := string(e.Kind)
	if e.Object != nil {
		s += " " + e.Object.Namespace + "/" + e.Object.Name
	}
	if e.Action != nil {
		s += " " + string(e.Action.Action) + " " + e.Action.Target.Namespace + "/" + e.Action.Target.String()
	}
	if e.Target != nil {
		s += " " + e.Target.Namespace + "/" + e.Target.String()
	}
	if e.Outcome != "" {
		s += " " + string(e.Outcome)
	}
	if e.Until != nil {
		s += " until " + e.Until.Format(time.TimeOnly)
	}
	return s + ": " + e.Message
}

// traceHash is a digest of what the run did: its events and restarts.
func (r *simRun) traceHash() uint64 {
	h := fnv.New64a()
	for _, e := range r.events {
		fmt.Fprintln(h, e.Time.UnixNano(), e.leader, eventLine(e.Event))
	}
	for _, x := range r.restarts() {
		fmt.Fprintln(h, x.w, x.at.UnixNano())
	}
	fmt.Fprintln(h, r.world.stale())
	return h.Sum64()
}

// checkDeterminism runs every corpus seed again: the trace of its first
// run.
func checkDeterminism(t *testing.T, corpus []int64, traces map[int64]uint64) {
	for _, seed := range corpus {
		if simulate(seed).trace != traces[seed] {
			t.Errorf("seed %d does not replay: two runs made different traces", seed)
		}
	}
}

// readCorpus reads the seeds kept in testdata/sim-corpus.txt.
func readCorpus(t *testing.T) []int64 {
	f, err := os.Open("testdata/sim-corpus.txt")
	if err != nil {
		t.Fatalf("the simulator's corpus: %v", err)
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		seed, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			t.Fatalf("testdata/sim-corpus.txt: %q is not a seed", line)
		}
		out = append(out, seed)
	}
	return out
}
