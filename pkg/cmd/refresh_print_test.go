package cmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// webRestart is the restart of deployment/web whose 12 pods read web-config
// at /etc/web.
func webRestart() refresh.Action {
	cm := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "shop", Name: "web-config", Exists: true}
	a := refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "shop", Name: "web"}, Reason: "env reads keys at start"}
	for i := range 12 {
		pod := fmt.Sprintf("web-5d8f-%02d", i)
		a.Pods = append(a.Pods, pod)
		a.Consumers = append(a.Consumers, refresh.Consumer{Object: cm, Pod: pod, Container: "app", Mode: inspect.ModeEnv, Env: "LEVEL"})
	}
	return a
}

// The CONSUMERS column of refresh stays narrow however many pods a
// workload has: one entry per workload with its pod count; -o wide names
// every pod, in the plan and in the results.
func TestRefreshConsumersColumnSummarisesPods(t *testing.T) {
	plan := []refresh.Action{webRestart()}
	results := []refresh.Result{{Action: plan[0], Outcome: refresh.OutcomeApplied}}
	for _, output := range []string{"", "wide"} {
		o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		o.Output = output
		if err := o.Validate(); err != nil {
			t.Fatalf("-o %q: %v", output, err)
		}
		var out bytes.Buffer
		o.Out = &out
		if err := o.printPlan(plan); err != nil {
			t.Fatal(err)
		}
		if err := o.printResults(results); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 {
			t.Fatalf("-o %q: want a plan and a result table of one row each:\n%s", output, out.String())
		}
		for _, row := range []string{lines[1], lines[3]} {
			pods := strings.Count(row, "web-5d8f-")
			switch output {
			case "":
				if pods != 0 || !strings.Contains(row, " deployment/web (12 pods) ") {
					t.Errorf("default CONSUMERS names %d pods, want deployment/web (12 pods):\n%s", pods, row)
				}
			case "wide":
				if pods != 12 || strings.Contains(row, "more") {
					t.Errorf("-o wide CONSUMERS names %d pods, want all 12:\n%s", pods, row)
				}
			}
		}
	}
}
