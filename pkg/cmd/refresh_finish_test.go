package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// partialResults: deployment/a was restarted, the restart of
// statefulset/b failed; pod p2 was annotated, p1 not; the eviction of
// daemonset/d's pods stopped after d-1.
func partialResults() []refresh.Result {
	cm := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "cfg"}
	at := refresh.Target{Namespace: "shop"}
	res := func(kind refresh.ActionKind, tk, name string, outcome refresh.Outcome, err string) refresh.Result {
		t := at
		t.Kind, t.Name = tk, name
		return refresh.Result{Action: refresh.Action{Action: kind, Target: t, Consumers: []refresh.Consumer{{Object: cm, Pod: name + "-0"}}}, Outcome: outcome, Error: err}
	}
	ev := res(refresh.ActionEvict, "DaemonSet", "d", refresh.OutcomeFailed, "the eviction of d-2 failed")
	ev.Evicted, ev.NotEvicted = []string{"d-1"}, []string{"d-2"}
	return []refresh.Result{
		res(refresh.ActionRestart, "Deployment", "a", refresh.OutcomeCurrent, ""),
		res(refresh.ActionRestart, "StatefulSet", "b", refresh.OutcomeFailed, "forbidden"),
		ev,
		res(refresh.ActionAnnotate, "Pod", "p1", refresh.OutcomeFailed, "connection refused"),
		res(refresh.ActionAnnotate, "Pod", "p2", refresh.OutcomeCurrent, ""),
	}
}

// After a partial failure the message says what running the same command
// again would do with the strategy used (never "safe" for --strategy
// restart, which would restart everything again), and the commands that
// do only what was not done, quoted for a shell.
func TestPartialFailureSaysHowToFinish(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 5, time.UTC)
	base := runInfo{DryRun: refresh.DryRunNone, MaxUnavailable: 2, Selector: "tier in (web,api)", Context: "prod cluster", Now: now}
	finish := []string{
		"To finish only what was not done:\n",
		"  kubectl rollout restart statefulset/b --context 'prod cluster' -n shop\n",
		"  kubectl annotate pod p1 --context 'prod cluster' -n shop --overwrite kubectl-cmsync.io/refreshed-at=2026-11-25T14:00:00.000000005Z\n",
		"  kubectl cmsync refresh configmap/cfg --context 'prod cluster' -n shop -l 'tier in (web,api)' --strategy auto --restart-via evict --max-unavailable 2",
	}
	for _, c := range []struct {
		strategy refresh.Strategy
		via      refresh.RestartVia
		want     []string
		not      []string
	}{
		{refresh.StrategyRestart, refresh.RestartViaTemplate, []string{"Running the same command again would restart every workload of the plan again, deployment/a, daemonset/d included"}, []string{"is safe"}},
		{refresh.StrategyRestart, refresh.RestartViaEvict, []string{"Running the same command again would evict the pods of every workload of the plan again, deployment/a, daemonset/d included"}, []string{"is safe"}},
		{refresh.StrategyAuto, refresh.RestartViaTemplate, []string{"observes the consumers first and acts only on those still not current", "may still look stale and be restarted again"}, []string{"is safe"}},
		{refresh.StrategyAnnotate, refresh.RestartViaTemplate, []string{"Running the same command again is safe: it annotates every pod again (harmless: nothing restarts)."}, nil},
	} {
		run := base
		run.Strategy, run.RestartVia = c.strategy, c.via
		err := resultError(partialResults(), run)
		if ExitCode(err) != ExitFailure {
			t.Fatalf("%s: exit %d, want 1", c.strategy, ExitCode(err))
		}
		msg := err.Error()
		for _, w := range append(append([]string{"changed: deployment/a, daemonset/d (evicted d-1), pod/p2"}, c.want...), finish...) {
			if !strings.Contains(msg, w) {
				t.Errorf("%s/%s: message lacks %q:\n%s", c.strategy, c.via, w, msg)
			}
		}
		for _, w := range c.not {
			if strings.Contains(msg, w) {
				t.Errorf("%s/%s: message says %q:\n%s", c.strategy, c.via, w, msg)
			}
		}
		if strings.Contains(msg, "pod p2") || strings.Contains(msg, "deployment/a --") {
			t.Errorf("%s: the finishing commands redo what was done:\n%s", c.strategy, msg)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"deployment/web": "deployment/web", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$(rm -rf /)": "'$(rm -rf /)'", "k=v": "k=v",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
