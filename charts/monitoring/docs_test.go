package monitoring

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/controller"
)

// The metrics table of docs/controller.md lists every cmsync_ family the
// controller exports, with its type and labels, and no other.
func TestDocsListEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../docs/controller.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(cmsync_[a-z_]+)` \\| ([a-z]+) \\|([^|]*)\\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = m[2] + " " + strings.NewReplacer("`", "", " ", "").Replace(m[3])
	}
	fams, err := controller.Families()
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, f := range fams {
		if !strings.HasPrefix(f.Name, "cmsync_") {
			continue
		}
		exported = append(exported, f.Name)
		labels := slices.Clone(f.Labels)
		got, ok := documented[f.Name]
		if !ok {
			t.Errorf("docs/controller.md's metrics table does not list %s (%s)", f.Name, f.Help)
			continue
		}
		docLabels := strings.Split(strings.TrimPrefix(got, f.Type+" "), ",")
		slices.Sort(docLabels)
		if !strings.HasPrefix(got, f.Type+" ") || strings.Join(docLabels, ",") != strings.Join(labels, ",") {
			t.Errorf("docs/controller.md: %s is %q, the registry's is %s with labels %v", f.Name, got, f.Type, labels)
		}
	}
	for name := range documented {
		if !slices.Contains(exported, name) {
			t.Errorf("docs/controller.md's metrics table lists %s, which the controller does not export", name)
		}
	}
}
