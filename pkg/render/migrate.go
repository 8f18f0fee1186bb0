package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/migrate"
)

// MigrateReport writes what `migrate reloader` found beside the values or
// flags: the Reloader, the settings that map with a difference, those a
// person must act on (with the workloads that carry a custom annotation),
// and every Reloader-annotated workload with what cmsync does for it.
// Every name from the cluster goes through text.Printable.
func MigrateReport(w io.Writer, r migrate.Report) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Reloader %s (%s)\n", text.Printable(r.Reloader), text.Printable(r.Image))
	if r.Helm != "" {
		p("  %s\n", text.Printable(r.Helm))
	}
	for _, e := range r.FlagEnv {
		p("  with the flags, set env %s\n", text.Printable(e))
	}
	if len(r.Notes) > 0 {
		p("\nMapped, with what differs:\n")
		for _, n := range r.Notes {
			p("  %s: %s\n", text.Printable(n.Setting), n.Advice)
		}
	}
	if len(r.Unsupported) > 0 {
		p("\nNeeds a person (%d):\n", len(r.Unsupported))
		for _, u := range r.Unsupported {
			p("  %s: %s\n", text.Printable(u.Setting), u.Advice)
		}
		for _, c := range r.Carriers {
			if len(c.Workloads) == 0 {
				p("  no workload in scope carries %s\n", text.Printable(c.Annotation))
				continue
			}
			p("  change %s to %s in:\n", text.Printable(c.Annotation), c.Standard)
			for _, wl := range c.Workloads {
				p("    %s\n", text.Printable(wl))
			}
		}
	}
	p("\nWorkloads with Reloader's annotations (%d):\n", len(r.Rows))
	for _, row := range r.Rows {
		p("  %s/%s  %s\n", text.Printable(row.Namespace), text.Printable(row.Workload), text.Printable(strings.Join(row.Annotations, ",")))
		for _, l := range row.Lines {
			mark := "same   "
			if l.Differs {
				mark = "differs"
			}
			p("    %s %s\n", mark, text.Printable(l.Text))
		}
	}
}
