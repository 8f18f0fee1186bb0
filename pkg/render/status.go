package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// StatusOptions say how the status table is drawn.
type StatusOptions struct {
	Wide          bool
	AllNamespaces bool
	NoHeaders     bool
	Verify        bool
	// Secrets: Secrets are shown (--secrets or a secret/NAME), so the
	// first column is OBJECT, not CONFIGMAP.
	Secrets bool
	Now     time.Time
	// ByWorkload: one row per object, workload, container, mode, path,
	// verdict and state, with how many of the workload's pods it covers
	// (--group-by=workload); else one row per use.
	ByWorkload bool
}

// StatusTable prints the uses as the table of status, then the summary line.
func StatusTable(out io.Writer, items []inspect.Use, o StatusOptions) error {
	if len(items) == 0 {
		return nil
	}
	var err error
	if o.ByWorkload {
		err = workloadTable(out, items, o)
	} else {
		err = podTable(out, items, o)
	}
	if err != nil || o.NoHeaders {
		return err
	}
	// the summary comes last, where a long table ends on the screen
	_, err = fmt.Fprintf(out, "\n%s\n", Summary(items, o.Verify))
	return err
}

// terminatingNote says, in the summary, how terminating pods count.
const terminatingNote = " (not counted by --check)"

// Summary counts the uses by verdict (and by state with --verify), in the
// contract's order: "80000 uses by 10000 pods: 40000 hot-update, ...".
// Uses of terminating pods are counted apart from the other n/a ones.
func Summary(items []inspect.Use, verified bool) string {
	verdicts := map[string]int{}
	states := map[string]int{}
	pods := map[[2]string]bool{}
	for _, it := range items {
		verdicts[Verdict(it)]++
		switch {
		case Terminating(it):
			states[StateTerminating]++
		case it.State != "":
			states[string(it.State)]++
		}
		if it.Pod.Name != "" {
			pods[[2]string{it.Object.Namespace, it.Pod.Name}] = true
		}
	}
	line := fmt.Sprintf("%s by %s: %s", Plural(len(items), "use"), Plural(len(pods), "pod"),
		counts(verdicts, []string{string(inspect.VerdictHotUpdate), string(inspect.VerdictRestartNeeded), string(inspect.VerdictBreaksOnChange),
			string(inspect.VerdictNeverChanges), string(inspect.VerdictMissing), "missing (optional)", string(inspect.VerdictNotMounted),
			string(inspect.VerdictNoPods), string(inspect.VerdictUnused)}))
	if verified {
		line += "; state: " + counts(states, []string{string(inspect.StateInSync), string(inspect.StatePending), string(inspect.StateStale),
			string(inspect.StateCurrent), string(inspect.StateBroken), string(inspect.StateUnverifiable), string(inspect.StateMissing), string(inspect.StateNA),
			StateTerminating})
		if states[StateTerminating] > 0 {
			line += terminatingNote
		}
	}
	return line
}

// counts is "N key, M key" of m's non-zero counts, in order.
func counts(m map[string]int, order []string) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// Plural is "1 use", "2 uses".
func Plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// workloadRow is one row of --group-by=workload: the uses of one object by
// one workload's container in one mode, path, verdict and state.
type workloadRow struct {
	first inspect.Use
	pods  int
	total int
}

// workloadRows groups items (already in report order) by object, workload,
// container, mode, path/keys, verdict and state, in the order of their
// first use; total is how many pods of the workload the report has.
func workloadRows(items []inspect.Use) []workloadRow {
	type wl struct{ ns, kind, name string }
	podsOf := map[wl]map[string]bool{}
	for _, it := range items {
		if it.Pod.Name == "" {
			continue
		}
		w := wl{it.Object.Namespace, it.Workload.GroupKind(), it.Workload.Name}
		if podsOf[w] == nil {
			podsOf[w] = map[string]bool{}
		}
		podsOf[w][it.Pod.Name] = true
	}
	type key struct {
		obj                                     inspect.ObjectKey
		wkind, wname, container, mode, path, vd string
		state                                   string
	}
	index := map[key]int{}
	var rows []workloadRow
	for _, it := range items {
		k := key{it.Key(), it.Workload.GroupKind(), it.Workload.Name, Container(it), Mode(it), PathKeys(it), Verdict(it), State(it)}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, workloadRow{first: it, total: len(podsOf[wl{it.Object.Namespace, it.Workload.GroupKind(), it.Workload.Name}])})
		}
		if it.Pod.Name != "" {
			rows[i].pods++
		}
	}
	return rows
}

// header is the table's title row: NAMESPACE with -A, the object column,
// middle, STATE (and verified, for --verify), then wide.
func header(items []inspect.Use, o StatusOptions, middle, verified, wide []string) []string {
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(head, objectHeader(items, o.Secrets))
	head = append(head, middle...)
	if o.Verify {
		head = append(head, verified...)
	}
	if o.Wide {
		head = append(head, wide...)
	}
	return head
}

func workloadTable(out io.Writer, items []inspect.Use, o StatusOptions) error {
	w := printers.GetNewTabWriter(out)
	if !o.NoHeaders {
		head := header(items, o, []string{"WORKLOAD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "PODS"}, []string{"STATE"},
			[]string{"DELAY", "IMMUTABLE", "OPTIONAL", "REASON"})
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for _, r := range workloadRows(items) {
		it := r.first
		var row []string
		if o.AllNamespaces {
			row = append(row, it.Object.Namespace)
		}
		pods := None
		if r.total > 0 {
			pods = fmt.Sprintf("%d/%d pods", r.pods, r.total)
		}
		row = append(row, Object(it), Workload(it), Container(it), Mode(it), PathKeys(it), Verdict(it), pods)
		if o.Verify {
			row = append(row, State(it))
		}
		if o.Wide {
			row = append(row, OrNone(inspect.FormatDelay(it.Delay)), YesNo(it.Object.Immutable), YesNo(it.Optional), Reason(it))
		}
		fmt.Fprintln(w, Row(row...))
	}
	return w.Flush()
}

func podTable(out io.Writer, items []inspect.Use, o StatusOptions) error {
	w := printers.GetNewTabWriter(out)
	if !o.NoHeaders {
		head := header(items, o, []string{"POD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "WORKLOAD"}, []string{"STATE", "SYNCED"},
			[]string{"NODE", "DELAY", "IMMUTABLE", "OPTIONAL", "REASON"})
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for _, it := range items {
		var row []string
		if o.AllNamespaces {
			row = append(row, it.Object.Namespace)
		}
		row = append(row, Object(it), OrNone(it.Pod.Name), Container(it), Mode(it), PathKeys(it), Verdict(it), Workload(it))
		if o.Verify {
			row = append(row, State(it), Synced(it, o.Now))
		}
		if o.Wide {
			row = append(row, OrNone(it.Pod.Node), OrNone(inspect.FormatDelay(it.Delay)), YesNo(it.Object.Immutable), YesNo(it.Optional), Reason(it))
		}
		fmt.Fprintln(w, Row(row...))
	}
	return w.Flush()
}

// objectHeader titles the object column: CONFIGMAP, or OBJECT when Secrets
// are shown.
func objectHeader(items []inspect.Use, secrets bool) string {
	if secrets {
		return "OBJECT"
	}
	for _, it := range items {
		if it.Object.Kind == inspect.KindSecret {
			return "OBJECT"
		}
	}
	return "CONFIGMAP"
}
