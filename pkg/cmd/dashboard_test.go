package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// What the dashboard shows of the cluster (the cells of a use, the diff of a
// file) reaches the terminal with its control characters escaped: a mount
// path or a ConfigMap value holding an escape sequence must not restyle,
// move or retitle the user's terminal under the dashboard.
func TestDashboardEscapesClusterText(t *testing.T) {
	o := NewDashboardOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	a := &dashboardActions{o: o, hmacKey: []byte("k")}
	cells := strings.Join(a.UseColumns(hostilePathItem(), time.Now()), "|")
	if strings.ContainsAny(cells, "\x1b\n") || !strings.Contains(cells, `/etc/a\nb\x1b[31m`) {
		t.Errorf("use cells not escaped: %q", cells)
	}

	snap, ex := diffFixture()
	key := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	snap.ConfigMaps[key].Data["greeting"] = "hello \x1b]0;pwned\x07v2\r\n\tindented\tx\n"
	o.Now, o.Executor = time.Now, ex
	o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Executor: ex}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: []inspect.ObjectKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Diff(context.Background(), snap, items)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out, "\x1b\x07\r\t") || !strings.Contains(out, "+hello \\x1b]0;pwned\\av2\n") || !strings.Contains(out, "-hello v1\n") {
		t.Errorf("diff not escaped line by line:\n%q", out)
	}
	// a CRLF's \r goes, tabs become spaces to the next multiple of 8
	if want := "\n+       indented        x\n"; !strings.Contains(out, want) {
		t.Errorf("diff lacks %q:\n%q", want, out)
	}
}
