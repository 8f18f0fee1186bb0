package render

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
)

// Table is what a table renderer (Uses, Actions, Results) gives: the
// column titles and the rows of the resources it holds. The CLI prints it
// with PrintTable; the dashboard puts the same header and rows in its
// tables.
type Table interface {
	// Header is the row of column titles.
	Header() []string
	// Rows are the rows, a cell per column, every cell escaped (Cells).
	Rows() [][]string
}

// PrintTable writes t in aligned columns with kubectl's tab writer: the
// header, unless noHeaders, then the rows.
func PrintTable(out io.Writer, t Table, noHeaders bool) error {
	w := printers.GetNewTabWriter(out)
	if !noHeaders {
		fmt.Fprintln(w, strings.Join(t.Header(), "\t"))
	}
	for _, row := range t.Rows() {
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// Cells escapes every cell in place (text.Printable): text from the
// cluster never breaks a row nor reaches the terminal raw.
func Cells(cells []string) []string {
	for i, c := range cells {
		cells[i] = text.Printable(c)
	}
	return cells
}

// Row escapes every cell of a table row (Cells) and joins them with tabs.
func Row(cells ...string) string { return strings.Join(Cells(cells), "\t") }
