package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// contextPlans are the plans of blue (one restart) and green (one
// annotation), for the pure parts of refresh over several contexts.
func contextPlans() []*contextPlan {
	restart := refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "shop", Name: "web"}, Reason: "env reads keys at start"}
	annotate := refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: "shop", Name: "db-0"}, Reason: "volume pending"}
	return []*contextPlan{
		{name: "blue", plan: &refresh.Plan{Actions: []refresh.Action{restart}, Restarts: 1}, out: &bytes.Buffer{}},
		{name: "green", plan: &refresh.Plan{Actions: []refresh.Action{annotate}}, out: &bytes.Buffer{}},
	}
}

func contextRefreshOptions(in string, terminal bool) (*RefreshOptions, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	o := &RefreshOptions{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(in), Out: out, ErrOut: errOut},
		DryRun: string(refresh.DryRunNone), StdinTerminal: terminal, contextNames: []string{"blue", "green"}}
	return o, out, errOut
}

// TestContextsRefusal: one context not planned refuses every context,
// naming it and the contexts that could go alone; the exit is the worst.
func TestContextsRefusal(t *testing.T) {
	names := []string{"blue", "green", "red"}
	if err := contextsRefusal(names, []error{nil, nil, nil}); err != nil {
		t.Fatalf("every context planned: %v, want nil", err)
	}
	err := contextsRefusal(names, []error{nil, nil, errors.New("cannot reach the Kubernetes API server")})
	want := `refused: context "red" could not be planned or its plan was refused (see above); nothing was changed in any of the 3 contexts. Fix it and run again, or leave it out: --context blue,green`
	if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
		t.Errorf("red unreachable: %v (exit %d), want %q (exit 1)", err, ExitCode(err), want)
	}
	err = contextsRefusal(names, []error{&ExitError{Code: ExitRefused, Err: errors.New("too many")}, errors.New("x"), errors.New("y")})
	want = `refused: context "blue", "green", "red" could not be planned or its plan was refused (see above); nothing was changed in any of the 3 contexts`
	if err == nil || err.Error() != want || ExitCode(err) != ExitRefused {
		t.Errorf("none planned: %v (exit %d), want %q (exit 4)", err, ExitCode(err), want)
	}
}

// TestConfirmContexts: one question for the restarts of every context;
// refused without a terminal (the plans printed) or without a yes; --yes
// and a dry run ask nothing.
func TestConfirmContexts(t *testing.T) {
	o, out, errOut := contextRefreshOptions("", false)
	err := o.confirmContexts(contextPlans())
	want := "refused: the plans restart 1 workloads in 1 of the 2 contexts and stdin is not a terminal to confirm them; nothing was changed in any context. Add --yes to proceed, or --strategy annotate to restart nothing"
	if err == nil || err.Error() != want || ExitCode(err) != ExitRefused {
		t.Errorf("no terminal: %v (exit %d), want %q (exit 4)", err, ExitCode(err), want)
	}
	wantPlans := "=== context blue ===\n" +
		"NAMESPACE   ACTION    TARGET           CONSUMERS   REASON\n" +
		"shop        restart   deployment/web               env reads keys at start\n" +
		"\n=== context green ===\n" +
		"NAMESPACE   ACTION     TARGET     CONSUMERS   REASON\n" +
		"shop        annotate   pod/db-0               volume pending\n"
	if out.String() != wantPlans || errOut.Len() != 0 {
		t.Errorf("no terminal: stdout\n%s\nwant\n%s\nstderr %q", out, wantPlans, errOut)
	}

	for answer, ok := range map[string]bool{"y\n": true, "n\n": false, "\n": false} {
		o, out, errOut := contextRefreshOptions(answer, true)
		err := o.confirmContexts(contextPlans())
		question := "Restart 1 workloads in 1 of the 2 contexts (their pods are replaced)? [y/N]: "
		if (err == nil) != ok || errOut.String() != wantPlans+question || out.Len() != 0 || strings.Count(errOut.String(), "[y/N]") != 1 {
			t.Errorf("answer %q: %v, stderr\n%s\nstdout %q", answer, err, errOut, out)
		}
		if !ok && (err == nil || err.Error() != "refused: not confirmed; nothing was changed in any context" || ExitCode(err) != ExitRefused) {
			t.Errorf("answer %q: %v (exit %d)", answer, err, ExitCode(err))
		}
	}

	for name, set := range map[string]func(*RefreshOptions){
		"--yes":             func(o *RefreshOptions) { o.Yes = true },
		"--dry-run=server":  func(o *RefreshOptions) { o.DryRun = string(refresh.DryRunServer) },
		"no restart at all": nil,
	} {
		o, out, errOut := contextRefreshOptions("", false)
		plans := contextPlans()
		if set != nil {
			set(o)
		} else {
			plans[0].plan.Restarts = 0
		}
		if err := o.confirmContexts(plans); err != nil || out.Len()+errOut.Len() != 0 {
			t.Errorf("%s: %v, printed %q %q; want nothing asked", name, err, out, errOut)
		}
	}
}

// TestPrintContextPlansJSON: one RefreshPlan whose items each carry their
// context, in the order of the contexts.
func TestPrintContextPlansJSON(t *testing.T) {
	o, out, _ := contextRefreshOptions("", false)
	o.Output = "json"
	if err := o.printContextPlans(o.Out, contextPlans()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind  string `json:"kind"`
		Items []struct {
			Context string `json:"context"`
			Action  string `json:"action"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Kind != "RefreshPlan" || len(doc.Items) != 2 || doc.Items[0].Context != "blue" || doc.Items[0].Action != "restart" ||
		doc.Items[1].Context != "green" || doc.Items[1].Action != "annotate" {
		t.Errorf("document %+v\n%s", doc, out)
	}
}

// TestPrintContextResults: each context's results under its name, those
// of a context not applied left out.
func TestPrintContextResults(t *testing.T) {
	o, out, _ := contextRefreshOptions("", false)
	plans := contextPlans()
	results := [][]refresh.Result{
		{{Action: plans[0].plan.Actions[0], Outcome: refresh.OutcomeApplied}},
		{{Action: plans[1].plan.Actions[0], Outcome: refresh.OutcomeCurrent}},
	}
	if err := o.printContextResults(plans, results); err != nil {
		t.Fatal(err)
	}
	want := "=== context blue ===\n" +
		"NAMESPACE   ACTION    TARGET           CONSUMERS   RESULT    CURRENT-AFTER   DETAIL\n" +
		"shop        restart   deployment/web               applied   -               env reads keys at start\n" +
		"\n=== context green ===\n" +
		"NAMESPACE   ACTION     TARGET     CONSUMERS   RESULT    CURRENT-AFTER   DETAIL\n" +
		"shop        annotate   pod/db-0               current   -               annotated (state not observed before)\n"
	if out.String() != want {
		t.Errorf("results:\n%s\nwant\n%s", out, want)
	}
}

// TestRefreshContextsUnreachable drives refresh through the root over two
// contexts whose API server is a closed port: each context's error, then
// the refusal of every context; exit 1, nothing on stdout.
func TestRefreshContextsUnreachable(t *testing.T) {
	writeContextsKubeconfig(t)
	out, errOut, err := runStatusRoot(t, "refresh", "app", "--context", "blue", "--context", "green", "--yes")
	want := `refused: context "blue", "green" could not be planned or its plan was refused (see above); nothing was changed in any of the 2 contexts`
	if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
		t.Fatalf("err = %v (exit %d), want %q (exit 1)", err, ExitCode(err), want)
	}
	for _, n := range []string{"blue", "green"} {
		if !strings.Contains(errOut, `error: context "`+n+`": cannot reach the Kubernetes API server at https://127.0.0.1:1`) {
			t.Errorf("no error line of %s in stderr:\n%s", n, errOut)
		}
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}
