package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
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
	// Contexts are the kubeconfig contexts read, when more than one: a
	// CONTEXT column first, and a summary line per context and for all.
	Contexts []string
}

// Values of --group-by.
const (
	groupByPod      = "pod"
	groupByWorkload = "workload"
)

// printReport prints a StatusReport as a table, or as the JSON/YAML document
// of the contract.
func printReport(out io.Writer, items []inspect.Use, o printOptions) error {
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
	// of a CPU profile of status at 10,000 pods; docs/performance.md)
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

// printStatusTable prints the uses as the table of status, then the
// summary line.
func printStatusTable(out io.Writer, items []inspect.Use, o printOptions) error {
	if len(items) == 0 && (len(o.Contexts) == 0 || o.NoHeaders) {
		return nil
	}
	uses := render.Uses{Items: items, Wide: o.Format == "wide", AllNamespaces: o.AllNamespaces,
		Verify: o.Verify, Secrets: o.Secrets, Now: o.Now, ByWorkload: o.GroupBy == groupByWorkload, Contexts: o.Contexts != nil}
	if len(items) > 0 {
		if err := render.PrintTable(out, uses, o.NoHeaders); err != nil || o.NoHeaders {
			return err
		}
		fmt.Fprintln(out)
	}
	// the summary comes last, where a long table ends on the screen
	lines := []string{render.Summary(items, o.Verify)}
	if o.Contexts != nil {
		lines = render.ContextSummaries(o.Contexts, items, o.Verify)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return err
		}
	}
	return nil
}
