package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

type printOptions struct {
	Format        string
	AllNamespaces bool
	NoHeaders     bool
	Verify        bool
	// Secrets: Secrets are shown (--secrets or a secret/NAME), so the
	// first column is OBJECT, not CONFIGMAP.
	Secrets bool
	Now     time.Time
	// GroupBy is "pod" (one row per use) or "workload" (one row per
	// object, workload, container, mode, path, verdict and state, with
	// how many of the workload's pods it covers).
	GroupBy string
}

// Values of --group-by.
const (
	groupByPod      = "pod"
	groupByWorkload = "workload"
)

// printReport prints a StatusReport as a table, or as the JSON/YAML document
// of the contract.
func printReport(out io.Writer, items []inspect.Item, o printOptions) error {
	switch o.Format {
	case "json":
		return streamReport(out, inspect.NewReport(items))
	case "yaml":
		return printDocument(out, inspect.NewReport(items), o.Format)
	}
	return printStatusTable(out, items, o)
}

// streamReport writes the report as printDocument does (the same bytes),
// one item at a time through a buffer: the document of 80,000 uses is never
// held in memory whole, twice (encoded, then indented).
func streamReport(out io.Writer, r inspect.Report) error {
	w := bufio.NewWriterSize(out, 64<<10)
	head, err := json.MarshalIndent(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}{r.APIVersion, r.Kind}, "", "    ")
	if err != nil {
		return err
	}
	// head ends with "\n}": the items go before the closing brace
	w.Write(head[:len(head)-2])
	if len(r.Items) == 0 {
		w.WriteString(",\n    \"items\": []\n}\n")
		return w.Flush()
	}
	w.WriteString(",\n    \"items\": [\n")
	// one encoder and two buffers for all items: json.MarshalIndent
	// allocated both per item and indented through the JSON scanner (28%
	// of a CPU profile of status at 10,000 pods; README: Performance)
	var compact bytes.Buffer
	var indented []byte
	enc := json.NewEncoder(&compact)
	for i := range r.Items {
		compact.Reset()
		if err := enc.Encode(&r.Items[i]); err != nil {
			return err
		}
		// Encode ends with a newline Marshal does not write
		indented = indentJSON(indented[:0], bytes.TrimSuffix(compact.Bytes(), []byte{'\n'}), "        ", "    ")
		w.WriteString("        ")
		w.Write(indented)
		if i < len(r.Items)-1 {
			w.WriteByte(',')
		}
		w.WriteByte('\n')
	}
	w.WriteString("    ]\n}\n")
	return w.Flush()
}

// indentJSON appends src, compact JSON as json.Marshal writes it, indented
// as json.Indent would (the same bytes; TestIndentJSON compares them): a
// newline, prefix and one indent per level after each opening bracket and
// comma and before each closing bracket, ": " after a key, empty objects
// and arrays kept as {} and [].
func indentJSON(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			// a string, escapes included, up to its closing quote
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(src))
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// printDocument writes any contract document as indented JSON or YAML.
func printDocument(out io.Writer, doc any, format string) error {
	b, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

func printStatusTable(out io.Writer, items []inspect.Item, o printOptions) error {
	if len(items) == 0 {
		return nil
	}
	var err error
	if o.GroupBy == groupByWorkload {
		err = printWorkloadTable(out, items, o)
	} else {
		err = printPodTable(out, items, o)
	}
	if err != nil || o.NoHeaders {
		return err
	}
	// the summary comes last, where a long table ends on the screen
	_, err = fmt.Fprintf(out, "\n%s\n", summaryLine(items, o.Verify))
	return err
}

// summaryLine counts the uses by verdict (and by state with --verify), in
// the contract's order: "80000 uses by 10000 pods: 40000 hot-update, ...".
func summaryLine(items []inspect.Item, verified bool) string {
	verdicts := map[string]int{}
	states := map[string]int{}
	pods := map[[2]string]bool{}
	for _, it := range items {
		verdicts[verdictColumn(it)]++
		if it.State != "" {
			states[string(it.State)]++
		}
		if it.Pod.Name != "" {
			pods[[2]string{it.Object.Namespace, it.Pod.Name}] = true
		}
	}
	count := func(m map[string]int, order []string) string {
		var parts []string
		for _, k := range order {
			if m[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
			}
		}
		return strings.Join(parts, ", ")
	}
	line := fmt.Sprintf("%s by %s: %s", plural(len(items), "use"), plural(len(pods), "pod"),
		count(verdicts, []string{string(inspect.VerdictHotUpdate), string(inspect.VerdictRestartNeeded), string(inspect.VerdictBreaksOnChange),
			string(inspect.VerdictNeverChanges), string(inspect.VerdictMissing), "missing (optional)", string(inspect.VerdictNotMounted),
			string(inspect.VerdictNoPods), string(inspect.VerdictUnused)}))
	if verified {
		line += "; state: " + count(states, []string{string(inspect.StateInSync), string(inspect.StatePending), string(inspect.StateStale),
			string(inspect.StateCurrent), string(inspect.StateBroken), string(inspect.StateUnverifiable), string(inspect.StateMissing), string(inspect.StateNA)})
	}
	return line
}

// workloadRow is one row of --group-by=workload: the uses of one object by
// one workload's container in one mode, path, verdict and state.
type workloadRow struct {
	first inspect.Item
	pods  int
	total int
}

// groupByWorkloadRows groups items (already in report order) by object,
// workload, container, mode, path/keys, verdict and state, in the order of
// their first use; total is how many pods of the workload the report has.
func groupByWorkloadRows(items []inspect.Item) []workloadRow {
	type wl struct{ ns, kind, name string }
	podsOf := map[wl]map[string]bool{}
	for _, it := range items {
		if it.Pod.Name == "" {
			continue
		}
		w := wl{it.Object.Namespace, it.Workload.Kind, it.Workload.Name}
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
		k := key{it.Key(), it.Workload.Kind, it.Workload.Name, containerColumn(it), modeColumn(it), pathKeys(it), verdictColumn(it), stateColumn(it)}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, workloadRow{first: it, total: len(podsOf[wl{it.Object.Namespace, it.Workload.Kind, it.Workload.Name}])})
		}
		if it.Pod.Name != "" {
			rows[i].pods++
		}
	}
	return rows
}

func printWorkloadTable(out io.Writer, items []inspect.Item, o printOptions) error {
	wide := o.Format == "wide"
	w := printers.GetNewTabWriter(out)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	objectHead := objectHeader(items, o)
	head = append(head, objectHead, "WORKLOAD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "PODS")
	if o.Verify {
		head = append(head, "STATE")
	}
	if wide {
		head = append(head, "DELAY", "IMMUTABLE", "OPTIONAL", "REASON")
	}
	if !o.NoHeaders {
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for _, r := range groupByWorkloadRows(items) {
		it := r.first
		var row []string
		if o.AllNamespaces {
			row = append(row, it.Object.Namespace)
		}
		pods := "<none>"
		if r.total > 0 {
			pods = fmt.Sprintf("%d/%d pods", r.pods, r.total)
		}
		row = append(row, objectColumn(it), workloadColumn(it), containerColumn(it), modeColumn(it), pathKeys(it), verdictColumn(it), pods)
		if o.Verify {
			row = append(row, stateColumn(it))
		}
		if wide {
			row = append(row, orNone(inspect.FormatDelay(it.Delay)), yesNo(it.Object.Immutable), yesNo(it.Optional), reasonFor(it))
		}
		fmt.Fprintln(w, printableRow(row...))
	}
	return w.Flush()
}

func printPodTable(out io.Writer, items []inspect.Item, o printOptions) error {
	wide := o.Format == "wide"
	w := printers.GetNewTabWriter(out)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	objectHead := objectHeader(items, o)
	head = append(head, objectHead, "POD", "CONTAINER", "MODE", "PATH/KEYS", "HOT-UPDATE", "WORKLOAD")
	if o.Verify {
		head = append(head, "STATE", "SYNCED")
	}
	if wide {
		head = append(head, "NODE", "DELAY", "IMMUTABLE", "OPTIONAL", "REASON")
	}
	if !o.NoHeaders {
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for _, it := range items {
		var row []string
		if o.AllNamespaces {
			row = append(row, it.Object.Namespace)
		}
		row = append(row, objectColumn(it), orNone(it.Pod.Name), containerColumn(it), modeColumn(it), pathKeys(it), verdictColumn(it), workloadColumn(it))
		if o.Verify {
			row = append(row, stateColumn(it), syncedColumn(it, o.Now))
		}
		if wide {
			row = append(row, orNone(it.Pod.Node), orNone(inspect.FormatDelay(it.Delay)), yesNo(it.Object.Immutable), yesNo(it.Optional), reasonFor(it))
		}
		fmt.Fprintln(w, printableRow(row...))
	}
	return w.Flush()
}

func objectColumn(it inspect.Item) string {
	name := it.Object.Name
	if it.Object.Kind == inspect.KindSecret {
		name = "secret/" + name
	}
	if !it.Object.Exists {
		name += " (missing)"
	}
	return name
}

func showsSecret(items []inspect.Item) bool {
	for _, it := range items {
		if it.Object.Kind == inspect.KindSecret {
			return true
		}
	}
	return false
}

// verdictColumn tells an optional missing object or key (the pod runs
// without it, often by design) from a required one.
func verdictColumn(it inspect.Item) string {
	if it.Verdict == inspect.VerdictMissing && it.Optional {
		return "missing (optional)"
	}
	return string(it.Verdict)
}

func containerColumn(it inspect.Item) string {
	if it.Container == nil {
		return "<none>"
	}
	if it.Container.Type == inspect.ContainerRegular {
		return it.Container.Name
	}
	return fmt.Sprintf("%s (%s)", it.Container.Name, it.Container.Type)
}

func modeColumn(it inspect.Item) string {
	if it.Mode == "" {
		return "<none>"
	}
	return string(it.Mode)
}

// pathKeys says where and what a use reads: the mount path (with the
// subPath or keys), or the variable and key.
func pathKeys(it inspect.Item) string {
	keys := ""
	if len(it.Keys) > 0 {
		keys = " [" + strings.Join(it.Keys, ",") + "]"
	}
	switch it.Mode {
	case inspect.ModeVolume, inspect.ModeItems, inspect.ModeProjected:
		return it.Volume.MountPath + keys
	case inspect.ModeSubPath:
		return fmt.Sprintf("%s (subPath %s)", it.Volume.MountPath, it.Volume.SubPath)
	case inspect.ModeSubPathExpr:
		return fmt.Sprintf("%s (subPathExpr %s)", it.Volume.MountPath, it.Volume.SubPathExpr)
	case inspect.ModeEnv:
		return fmt.Sprintf("$%s <- %s", it.EnvName, strings.Join(it.Keys, ","))
	case inspect.ModeEnvFrom:
		if it.EnvPrefix != "" {
			return "$" + it.EnvPrefix + "* <- all keys"
		}
		return "all keys"
	case inspect.ModeUnmounted:
		return "volume " + it.Volume.Name + keys
	}
	return "<none>"
}

func workloadColumn(it inspect.Item) string {
	if it.Workload.Kind == "" {
		return "<none>"
	}
	return strings.ToLower(it.Workload.Kind) + "/" + it.Workload.Name
}

func stateColumn(it inspect.Item) string {
	if it.State == "" {
		return "<none>"
	}
	if it.State == inspect.StateUnverifiable && it.StateReason != "" {
		return "unverifiable: " + shortReason(it.StateReason)
	}
	return string(it.State)
}

// shortReason is the STATE column's words of a reason (inspect.ShortReason).
func shortReason(s string) string { return inspect.ShortReason(s) }

func syncedColumn(it inspect.Item, now time.Time) string {
	if it.SyncedAt == nil {
		return "<none>"
	}
	return duration.HumanDuration(now.Sub(it.SyncedAt.Time)) + " ago"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printable escapes the control characters of text that comes from the
// cluster before it reaches a table or a header line (see
// inspect.Printable).
func printable(s string) string { return inspect.Printable(s) }

// printableRow escapes every cell of a table row (see printable) and joins
// the cells with tabs.
func printableRow(cells ...string) string {
	return strings.Join(printableCells(cells), "\t")
}

// printableCells escapes every cell in place (see printable).
func printableCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = printable(c)
	}
	return cells
}

// objectHeader titles the object column: CONFIGMAP, or OBJECT when Secrets
// are shown.
func objectHeader(items []inspect.Item, o printOptions) string {
	if o.Secrets || showsSecret(items) {
		return "OBJECT"
	}
	return "CONFIGMAP"
}
