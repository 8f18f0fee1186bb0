package cmd

import (
	"fmt"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func TestWatchValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *WatchOptions)
		want   string
	}{
		{"bad dry run", func(o *WatchOptions) { o.DryRun = "yes" }, `invalid --dry-run "yes": must be "none", "client", or "server"`},
		{"bad output", func(o *WatchOptions) { o.Output = "yaml" }, `unable to match a printer suitable for the output format "yaml", allowed formats are: json`},
		{"zero debounce", func(o *WatchOptions) { o.Debounce = 0 }, `--debounce must be positive, got 0s`},
		{"max wait below debounce", func(o *WatchOptions) { o.MaxWait = time.Second; o.Debounce = 2 * time.Second }, `--max-wait (1s) must be at least --debounce (2s)`},
		{"negative rollout wait", func(o *WatchOptions) { o.RolloutWait = -time.Second }, `--rollout-wait must be positive, got -1s`},
		{"zero timeout", func(o *WatchOptions) { o.Timeout = 0 }, `--timeout must be positive, got 0s`},
		{"zero restarts at once", func(o *WatchOptions) { o.MaxConcurrentRestarts = 0 }, `--max-concurrent-restarts must be 1 or more, got 0`},
		{"zero workers", func(o *WatchOptions) { o.Workers = 0 }, `--workers must be 1 or more, got 0`},
		{"negative interval", func(o *WatchOptions) { o.MinRestartInterval = -time.Second }, `--min-restart-interval and --restart-rate must not be negative, got -1s and 0`},
		{"a rate without a burst", func(o *WatchOptions) { o.RestartRate, o.RestartBurst = 1, 0 }, `--restart-burst must be 1 or more with --restart-rate, got 0`},
		{"bad restart-via", func(o *WatchOptions) { o.RestartVia = "delete" }, `invalid --restart-via "delete": must be one of template, evict`},
		{"names across namespaces", func(o *WatchOptions) {
			o.AllNamespaces, o.Names = true, []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Name: "app"}}
		}, `a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE`},
		{"bad selector", func(o *WatchOptions) { o.Selector = "app in (" }, `invalid -l "app in (": unable to parse requirement: found '', expected: ',', ')' or identifier`},
		{"reader idle timeout under 1s", func(o *WatchOptions) { o.Verify.Reader, o.Verify.ReaderIdleTimeout = readerNode, 500*time.Millisecond },
			`--reader-idle-timeout must be at least 1s, or 0 to keep each reader pod until its --reader-lifetime ends, got 500ms`},
		{"negative reader idle timeout", func(o *WatchOptions) { o.Verify.Reader, o.Verify.ReaderIdleTimeout = readerAuto, -time.Minute },
			`--reader-idle-timeout must be at least 1s, or 0 to keep each reader pod until its --reader-lifetime ends, got -1m0s`},
		{"bad namespace selector", func(o *WatchOptions) { o.NamespaceSelector = "team in (" },
			`invalid --namespace-selector "team in (": unable to parse requirement: found '', expected: ',', ')' or identifier`},
		{"bad resource label selector", func(o *WatchOptions) { o.ResourceSelector = "cmsync==on==" },
			`invalid --resource-label-selector "cmsync==on==": found '==', expected: ',' or 'end of string'`},
		{"bad namespace name to ignore", func(o *WatchOptions) { o.IgnoreNamespaces = []string{"kube-system", "Team_A"} },
			`invalid --ignore-namespaces "Team_A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"unknown workload kind", func(o *WatchOptions) { o.IgnoreWorkloadKinds = []string{"CronJobs", "widgets"} },
			`invalid --ignore-workload-kinds: unknown workload kind "widgets"; valid kinds are cronjobs, daemonsets, deployments, jobs, pods, replicasets, rollouts, statefulsets`},
		{"the one namespace watched is ignored", func(o *WatchOptions) { o.Namespace, o.IgnoreNamespaces = "shop", []string{"shop"} },
			`namespace "shop" is both watched (-n) and ignored (--ignore-namespaces): nothing would be handled; drop it from --ignore-namespaces or use -A`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			tt.mutate(o)
			err := o.Validate()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			if ExitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", ExitCode(err), ExitUsage)
			}
		})
	}
	if err := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard()).Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// TestReaderIdleTimeoutFlag: the commands that run until stopped have
// --reader-idle-timeout, 1m by default, 0 and 1s accepted; the one-shot
// commands, which keep their reader pods until they end, do not.
func TestReaderIdleTimeoutFlag(t *testing.T) {
	root := NewCmdRoot(genericiooptions.NewTestIOStreamsDiscard())
	for _, name := range []string{"watch", "controller", "status", "diff", "refresh", "dashboard"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			t.Fatalf("command %s: %v", name, err)
		}
		f := c.Flags().Lookup("reader-idle-timeout")
		switch continuous := name == "watch" || name == "controller"; {
		case continuous && (f == nil || f.DefValue != "1m0s"):
			t.Errorf("%s --reader-idle-timeout: %+v, want the flag with default 1m0s", name, f)
		case !continuous && f != nil:
			t.Errorf("%s has --reader-idle-timeout: a one-shot command keeps its reader pods until it ends", name)
		}
	}
	for _, d := range []time.Duration{0, time.Second, 10 * time.Minute} {
		o := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		o.Verify.Reader, o.Verify.ReaderIdleTimeout = readerNode, d
		if err := o.Validate(); err != nil {
			t.Errorf("--reader-idle-timeout=%s: %v", d, err)
		}
	}
}

// TestWatchScopeFlagsReachTheLoop: the scope flags, as typed, become the
// loop's Scope (kinds in any accepted spelling, namespaces to ignore with
// -A, whose namespace is all of them).
func TestWatchScopeFlagsReachTheLoop(t *testing.T) {
	o := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
	cmd := &cobra.Command{}
	o.addFlags(cmd, false)
	if err := cmd.ParseFlags([]string{"--namespace-selector", "team=a,env!=prod", "--ignore-namespaces", "kube-system,shop",
		"--resource-label-selector", "cmsync=on", "--ignore-workload-kinds", "CronJobs,job"}); err != nil {
		t.Fatal(err)
	}
	o.AllNamespaces, o.Namespace = true, "shop"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	s := o.newLoop().Scope
	got := fmt.Sprintf("%v | %v | %v | %v", s.Namespaces, s.IgnoreNamespaces, s.Objects, s.IgnoreKinds)
	if want := "env!=prod,team=a | [kube-system shop] | cmsync=on | [CronJob Job]"; got != want {
		t.Errorf("scope %s, want %s", got, want)
	}
}

// TestReloadHookHostNetworkFlag: refresh, watch and controller have
// --reload-hook-host-network, off by default; set, it reaches the loop's
// refresh, which then sends hooks to pods on the node's network.
func TestReloadHookHostNetworkFlag(t *testing.T) {
	root := NewCmdRoot(genericiooptions.NewTestIOStreamsDiscard())
	for _, name := range []string{"refresh", "watch", "controller"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			t.Fatalf("command %s: %v", name, err)
		}
		if f := c.Flags().Lookup("reload-hook-host-network"); f == nil || f.DefValue != "false" {
			t.Errorf("%s --reload-hook-host-network: %+v, want the flag, default false", name, f)
		}
	}
	for _, args := range [][]string{nil, {"--reload-hook-host-network"}} {
		o := NewWatchOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		cmd := &cobra.Command{}
		o.addFlags(cmd, true)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if got := o.newLoop().Refresh.HookHostNetwork; got != (len(args) > 0) {
			t.Errorf("%v: the loop's HookHostNetwork %v", args, got)
		}
	}
}
