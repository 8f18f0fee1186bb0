package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Uses renders uses as the table of status: a row per use, or a row per
// workload with ByWorkload. The dashboard's consumers screen shows the same
// rows (OneObject, Verify).
type Uses struct {
	Items         []inspect.Use
	Wide          bool
	AllNamespaces bool
	Verify        bool
	// Secrets: Secrets are shown (--secrets or a secret/NAME), so the
	// object column is OBJECT, not CONFIGMAP.
	Secrets bool
	Now     time.Time
	// ByWorkload: one row per object, workload, container, mode, path,
	// verdict and state, with how many of the workload's pods it covers
	// (--group-by=workload); else one row per use.
	ByWorkload bool
	// OneObject: the uses are of one object, named elsewhere (the
	// dashboard's consumers screen), so there is no object column.
	OneObject bool
	// Contexts: the uses come from several kubeconfig contexts, so the
	// first column is CONTEXT (Use.Context).
	Contexts bool
}

// terminatingNote says, in the summary, how terminating pods count.
const terminatingNote = " (not counted by --check)"

// Summary counts the uses by verdict (and by state with --verify), in the
// contract's order: "80000 uses by 10000 pods: 40000 hot-update, ...".
// Uses of terminating pods are counted apart from the other n/a ones.
func Summary(items []inspect.Use, verified bool) string {
	verdicts := map[string]int{}
	states := map[string]int{}
	pods := map[[3]string]bool{}
	for _, it := range items {
		verdicts[Verdict(it)]++
		switch {
		case Terminating(it):
			states[StateTerminating]++
		case it.State != "":
			states[string(it.State)]++
		}
		if it.Pod.Name != "" {
			pods[[3]string{it.Context, it.Object.Namespace, it.Pod.Name}] = true
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

// workloadGroup is one row of --group-by=workload: the uses of one object by
// one workload's container in one mode, path, verdict and state.
type workloadGroup struct {
	first inspect.Use
	pods  int
	total int
}

// workloadGroups groups items (already in report order) by object, workload,
// container, mode, path/keys, verdict and state, in the order of their
// first use; total is how many pods of the workload the report has.
func workloadGroups(items []inspect.Use) []workloadGroup {
	type wl struct{ context, ns, kind, name string }
	podsOf := map[wl]map[string]bool{}
	for _, it := range items {
		if it.Pod.Name == "" {
			continue
		}
		w := wl{it.Context, it.Object.Namespace, it.Workload.GroupKind(), it.Workload.Name}
		if podsOf[w] == nil {
			podsOf[w] = map[string]bool{}
		}
		podsOf[w][it.Pod.Name] = true
	}
	type key struct {
		context                                 string
		obj                                     inspect.ObjectKey
		wkind, wname, container, mode, path, vd string
		state                                   string
	}
	index := map[key]int{}
	var rows []workloadGroup
	for _, it := range items {
		k := key{it.Context, it.Key(), it.Workload.GroupKind(), it.Workload.Name, Container(it), Mode(it), PathKeys(it), Verdict(it), State(it)}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, workloadGroup{first: it, total: len(podsOf[wl{it.Context, it.Object.Namespace, it.Workload.GroupKind(), it.Workload.Name}])})
		}
		if it.Pod.Name != "" {
			rows[i].pods++
		}
	}
	return rows
}

// Header is NAMESPACE with AllNamespaces, the object column unless
// OneObject, the columns of a use or of a workload, STATE (and SYNCED) with
// Verify, then those of Wide.
func (u Uses) Header() []string {
	middle := []string{"POD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "WORKLOAD"}
	verified := []string{"STATE", "SYNCED"}
	wide := []string{"NODE", "DELAY", "IMMUTABLE", "OPTIONAL", "REASON"}
	if u.ByWorkload {
		middle = []string{"WORKLOAD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "PODS"}
		verified = []string{"STATE"}
		wide = []string{"DELAY", "IMMUTABLE", "OPTIONAL", "REASON"}
	}
	head := u.lead("CONTEXT", "NAMESPACE", objectHeader(u.Items, u.Secrets))
	head = append(head, middle...)
	if u.Verify {
		head = append(head, verified...)
	}
	if u.Wide {
		head = append(head, wide...)
	}
	return head
}

// Rows are a row per use, or per workload with ByWorkload, escaped.
func (u Uses) Rows() [][]string {
	if u.ByWorkload {
		groups := workloadGroups(u.Items)
		rows := make([][]string, 0, len(groups))
		for _, r := range groups {
			rows = append(rows, Cells(u.workloadRow(r)))
		}
		return rows
	}
	rows := make([][]string, 0, len(u.Items))
	for _, it := range u.Items {
		rows = append(rows, Cells(u.useRow(it)))
	}
	return rows
}

// lead is the row's first cells: the context with Contexts, the namespace
// with AllNamespaces, the object unless OneObject.
func (u Uses) lead(context, namespace, object string) []string {
	var cells []string
	if u.Contexts {
		cells = append(cells, context)
	}
	if u.AllNamespaces {
		cells = append(cells, namespace)
	}
	if !u.OneObject {
		cells = append(cells, object)
	}
	return cells
}

// useRow is the cells of one use.
func (u Uses) useRow(it inspect.Use) []string {
	row := u.lead(it.Context, it.Object.Namespace, Object(it))
	row = append(row, OrNone(it.Pod.Name), Container(it), Mode(it), PathKeys(it), Verdict(it), Workload(it))
	if u.Verify {
		row = append(row, State(it), Synced(it, u.Now))
	}
	if u.Wide {
		row = append(row, OrNone(it.Pod.Node), OrNone(inspect.FormatDelay(it.Delay)), YesNo(it.Object.Immutable), YesNo(it.Optional), Reason(it))
	}
	return row
}

// workloadRow is the cells of one workload's uses, with its pod count.
func (u Uses) workloadRow(r workloadGroup) []string {
	it := r.first
	pods := None
	if r.total > 0 {
		pods = fmt.Sprintf("%d/%d pods", r.pods, r.total)
	}
	row := u.lead(it.Context, it.Object.Namespace, Object(it))
	row = append(row, Workload(it), Container(it), Mode(it), PathKeys(it), Verdict(it), pods)
	if u.Verify {
		row = append(row, State(it))
	}
	if u.Wide {
		row = append(row, OrNone(inspect.FormatDelay(it.Delay)), YesNo(it.Object.Immutable), YesNo(it.Optional), Reason(it))
	}
	return row
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

// ContextSummaries is the summary line of each context of names that was
// read, in that order ("NAME: U uses by P pods: ..."), then of them all
// ("all N contexts: ..."). A context with no use has a line too: "NAME: no
// uses".
func ContextSummaries(names []string, items []inspect.Use, verified bool) []string {
	byContext := map[string][]inspect.Use{}
	for _, it := range items {
		byContext[it.Context] = append(byContext[it.Context], it)
	}
	lines := make([]string, 0, len(names)+1)
	for _, n := range names {
		line := "no uses"
		if len(byContext[n]) > 0 {
			line = Summary(byContext[n], verified)
		}
		lines = append(lines, n+": "+line)
	}
	return append(lines, fmt.Sprintf("all %s: %s", Plural(len(names), "context"), Summary(items, verified)))
}
