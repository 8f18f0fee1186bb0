package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintHeaded: each context's output under its heading, a blank line
// between two, a context that printed nothing left out.
func TestPrintHeaded(t *testing.T) {
	var w bytes.Buffer
	printHeaded(&w, []string{"blue", "green", "red"}, []*bytes.Buffer{bytes.NewBufferString("--- a\n+++ b\n"), {}, bytes.NewBufferString("x\n")})
	want := "=== context blue ===\n--- a\n+++ b\n\n=== context red ===\nx\n"
	if w.String() != want {
		t.Errorf("got\n%q\nwant\n%q", w.String(), want)
	}
}

// TestDiffContextsUnreachable drives diff through the root over two
// contexts whose API server is a closed port: one error line per context,
// exit 1, nothing on stdout; a list is no longer refused.
func TestDiffContextsUnreachable(t *testing.T) {
	writeContextsKubeconfig(t)
	out, errOut, err := runStatusRoot(t, "diff", "app", "--context", "blue,green")
	if ExitCode(err) != ExitFailure || out != "" {
		t.Fatalf("err = %v (exit %d), stdout %q; want exit 1 and nothing printed", err, ExitCode(err), out)
	}
	for _, n := range []string{"blue", "green"} {
		if !strings.Contains(errOut, `error: context "`+n+`": cannot reach the Kubernetes API server at https://127.0.0.1:1`) {
			t.Errorf("no error line of %s in stderr:\n%s", n, errOut)
		}
	}
}
