package cmd

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// runInfo is what the message of a failed refresh needs to say what
// running it again would do and how to finish only what was not done.
type runInfo struct {
	DryRun         refresh.DryRun
	Strategy       refresh.Strategy
	RestartVia     refresh.RestartVia
	MaxUnavailable int
	// Selector is the run's -l; Context and Kubeconfig its --context and
	// --kubeconfig, repeated so that the commands reach the same cluster.
	Selector, Context, Kubeconfig string
	// Now stamps the annotation of the annotate command.
	Now time.Time
}

// againText says what running the same command again would do, for the
// strategy that was used.
func againText(run runInfo, done []string) string {
	switch run.Strategy {
	case refresh.StrategyRestart:
		what := "restart every workload of the plan again"
		if run.RestartVia == refresh.RestartViaEvict {
			what = "evict the pods of every workload of the plan again"
		}
		if len(done) > 0 {
			what += ", " + strings.Join(done, ", ") + " included"
		}
		return "Running the same command again would " + what + " (--strategy restart does not look at what is current)."
	case refresh.StrategyAnnotate:
		return "Running the same command again is safe: it annotates every pod again (harmless: nothing restarts)."
	}
	s := "Running the same command again observes the consumers first and acts only on those still not current (pods are annotated again, which is harmless)"
	if len(done) > 0 {
		s += "; a workload whose rollout has not finished (" + strings.Join(done, ", ") + ") may still look stale and be restarted again"
	}
	return s + "."
}

// finishCommands are the commands that do only what the run did not:
// kubectl rollout restart for the restarts not sent (what --restart-via
// template sends), kubectl annotate for the pods not annotated, and for
// pods not evicted a refresh of their objects with --strategy auto, which
// evicts only the pods whose consumers are still stale. Arguments are
// quoted for a POSIX shell (names come from the cluster).
func finishCommands(results []refresh.Result, run runInfo) []string {
	restarts := map[string][]string{}     // namespace -> kind/name
	annotates := map[string][]string{}    // namespace -> pod
	evictObjects := map[string][]string{} // namespace -> kind/name of the objects
	for _, r := range results {
		ns := r.Target.Namespace
		switch {
		case r.Action.Action == refresh.ActionEvict && len(r.NotEvicted) > 0:
			for _, c := range r.Consumers {
				evictObjects[ns] = appendNew(evictObjects[ns], strings.ToLower(c.Object.Kind)+"/"+c.Object.Name)
			}
		case !notDone(r):
		case r.Action.Action == refresh.ActionRestart:
			restarts[ns] = appendNew(restarts[ns], r.Target.String())
		case r.Action.Action == refresh.ActionAnnotate:
			annotates[ns] = appendNew(annotates[ns], r.Target.Name)
		}
	}
	var out []string
	for _, ns := range sortedKeys(restarts) {
		out = append(out, commandLine(append(append([]string{"kubectl", "rollout", "restart"}, restarts[ns]...), run.kubectlFlags(ns)...)))
	}
	for _, ns := range sortedKeys(annotates) {
		args := append([]string{"kubectl", "annotate", "pod"}, annotates[ns]...)
		args = append(args, run.kubectlFlags(ns)...)
		args = append(args, "--overwrite", refresh.RefreshedAtAnnotation+"="+run.Now.UTC().Format(time.RFC3339Nano))
		out = append(out, commandLine(args))
	}
	for _, ns := range sortedKeys(evictObjects) {
		args := append([]string{"kubectl", "cmsync", "refresh"}, evictObjects[ns]...)
		args = append(args, run.kubectlFlags(ns)...)
		if run.Selector != "" {
			args = append(args, "-l", run.Selector)
		}
		// no --yes: it shows its plan and asks before it evicts anything
		args = append(args, "--strategy", string(refresh.StrategyAuto), "--restart-via", string(refresh.RestartViaEvict),
			"--max-unavailable", strconv.Itoa(max(run.MaxUnavailable, 1)))
		out = append(out, commandLine(args))
	}
	return out
}

// notDone tells whether nothing of an action reached the cluster: its
// patch failed or was never sent.
func notDone(r refresh.Result) bool {
	return r.Outcome == refresh.OutcomeFailed || (r.Outcome == refresh.OutcomeNotApplied && r.Error != "")
}

// kubectlFlags are the flags that make a command reach the run's cluster
// and namespace.
func (run runInfo) kubectlFlags(ns string) []string {
	var out []string
	if run.Kubeconfig != "" {
		out = append(out, "--kubeconfig", run.Kubeconfig)
	}
	if run.Context != "" {
		out = append(out, "--context", run.Context)
	}
	return append(out, "-n", ns)
}

// finishText is the end of the message of a run that failed part way: what
// running it again would do, and the commands that finish only the rest.
func finishText(results []refresh.Result, run runInfo) string {
	var done []string
	for _, r := range results {
		if (r.Action.Action == refresh.ActionRestart || r.Action.Action == refresh.ActionEvict) && (!notDone(r) || len(r.Evicted) > 0) {
			done = append(done, r.Target.String())
		}
	}
	s := "\n" + againText(run, done)
	if cmds := finishCommands(results, run); len(cmds) > 0 {
		s += "\nTo finish only what was not done:\n  " + strings.Join(cmds, "\n  ")
	}
	return s
}

// shellSafe are the arguments a POSIX shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellQuote quotes one argument for display as a POSIX shell command: as
// it is when it is safe, else in single quotes (a quote inside as '\”).
func shellQuote(arg string) string {
	if shellSafe.MatchString(arg) {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// commandLine shows argv as one shell command line.
func commandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
