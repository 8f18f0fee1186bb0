package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func TestPrintableEscapesControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/cfg":                      "/etc/cfg",
		"/etc/a\nb":                     `/etc/a\nb`,
		"tab\there\r":                   `tab\there\r`,
		"\x1b[2J\x1b]0;pwned\x07":       `\x1b[2J\x1b]0;pwned\a`,
		"ü ✓ $(touch x) `y`; 'q\" \x7f": `ü ✓ $(touch x) ` + "`y`" + `; 'q" \x7f`,
		"c1\u0085":                      `c1\u0085`,
		"8-bit CSI \x9b2J":              "8-bit CSI \uFFFD2J", // invalid UTF-8: never passed through raw
	} {
		if got := text.Printable(in); got != want {
			t.Errorf("text.Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// A mount path with a newline and an escape sequence (the API allows both)
// stays on its row of the status table and reaches the terminal escaped,
// one row per pod or grouped by workload.
func TestStatusTableEscapesHostilePaths(t *testing.T) {
	for _, groupBy := range []string{"", "workload"} {
		t.Run("group-by="+groupBy, func(t *testing.T) { testStatusTableEscapesHostilePaths(t, groupBy) })
	}
}

// hostilePathItem is a volume use whose mount path holds a newline and an
// escape sequence.
func hostilePathItem() inspect.Use {
	return inspect.Use{
		Object:    inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg", Exists: true},
		Pod:       inspect.PodRef{Name: "p"},
		Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular},
		Workload:  inspect.WorkloadRef{Kind: "Pod", Name: "p"},
		Mode:      inspect.ModeVolume,
		Volume:    &inspect.VolumeRef{Name: "v", MountPath: "/etc/a\nb\x1b[31m"},
		Verdict:   inspect.VerdictHotUpdate,
	}
}

func testStatusTableEscapesHostilePaths(t *testing.T, groupBy string) {
	it := hostilePathItem()
	var out bytes.Buffer
	if err := printReport(&out, []inspect.Use{it}, printOptions{Format: "wide", GroupBy: groupBy}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// the rows end at the blank line before the summary line
	if n := strings.Count(strings.SplitN(s, "\n\n", 2)[0], "\n"); n != 1 {
		t.Errorf("table has %d rows before the summary, want 2 lines (header and one row):\n%s", n+1, s)
	}
	if strings.Contains(s, "\x1b") || !strings.Contains(s, `/etc/a\nb\x1b[31m`) {
		t.Errorf("the mount path is not escaped:\n%q", s)
	}
}
