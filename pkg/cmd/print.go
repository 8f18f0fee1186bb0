package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
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
}

// printReport prints a StatusReport as a table, or as the JSON/YAML document
// of the contract.
func printReport(out io.Writer, items []inspect.Item, o printOptions) error {
	switch o.Format {
	case "json", "yaml":
		return printDocument(out, inspect.NewReport(items), o.Format)
	}
	return printStatusTable(out, items, o)
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
	wide := o.Format == "wide"
	w := printers.GetNewTabWriter(out)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	objectHead := "CONFIGMAP"
	if o.Secrets || showsSecret(items) {
		objectHead = "OBJECT"
	}
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
// cluster (mount paths, file names, reasons quoting them) before it reaches a
// table or a header line: a newline or tab would break the table, and an
// escape sequence could rewrite the user's terminal. Control characters
// become Go escapes (\n, \t, \x1b); everything else, non-ASCII included, is
// kept. (printers.EscapeTerminal of cli-runtime escapes only ESC and \r.)
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !isControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\n', '\x1b', '\u0085'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// printableRow escapes every cell of a table row (see printable) and joins
// the cells with tabs.
func printableRow(cells ...string) string {
	for i, c := range cells {
		cells[i] = printable(c)
	}
	return strings.Join(cells, "\t")
}
