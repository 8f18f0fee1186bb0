package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const checkedIn = "../../plugins/krew.yaml"

// The rules of krew-index for plugins/krew.yaml that krew's validator does
// not check: a short description within 50 characters, text wrapped at 80
// columns, the five platforms krew serves, and the binary of each.
func TestCheckedInManifest(t *testing.T) {
	data, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct{ Name string }
		Spec     struct {
			ShortDescription string `json:"shortDescription"`
			Description      string
			Caveats          string
			Homepage         string
			Platforms        []struct {
				Bin      string
				URI      string
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "cmsync" {
		t.Errorf("metadata.name = %q, want cmsync", m.Metadata.Name)
	}
	if n := len(m.Spec.ShortDescription); n == 0 || n > 50 {
		t.Errorf("shortDescription is %d characters, want 1 to 50: %q", n, m.Spec.ShortDescription)
	}
	for field, text := range map[string]string{"description": m.Spec.Description, "caveats": m.Spec.Caveats} {
		for _, line := range strings.Split(text, "\n") {
			if len(line) > 80 {
				t.Errorf("%s: line of %d columns, want at most 80: %q", field, len(line), line)
			}
		}
	}
	if !strings.Contains(m.Spec.Description, "RBAC") || !strings.Contains(m.Spec.Caveats, "pods/exec") {
		t.Errorf("description must state the RBAC of status and caveats the RBAC of verify/refresh")
	}
	want := map[string]string{"linux/amd64": "kubectl-cmsync", "linux/arm64": "kubectl-cmsync",
		"darwin/amd64": "kubectl-cmsync", "darwin/arm64": "kubectl-cmsync", "windows/amd64": "kubectl-cmsync.exe"}
	got := map[string]string{}
	for _, p := range m.Spec.Platforms {
		got[p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"]] = p.Bin
	}
	if len(got) != len(want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
	for k, bin := range want {
		if got[k] != bin {
			t.Errorf("platform %s: bin %q, want %q", k, got[k], bin)
		}
	}
}

func TestCompareIgnoresOnlyReleaseFields(t *testing.T) {
	base, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	s := string(base)
	// another release: other version, URIs and sums, platforms in another order
	released := strings.NewReplacer("v0.1.0", "v0.2.0", "0.1.0_", "0.2.0_", strings.Repeat("0", 64), strings.Repeat("a", 64)).Replace(s)
	i := strings.Index(released, "    - bin: kubectl-cmsync.exe")
	j := strings.Index(released, "    - bin: kubectl-cmsync\n")
	released = released[:i] + released[j:] + released[i:j]
	if d, err := compare("a", []byte(released), "b", base); err != nil || d != "" {
		t.Errorf("a new release's manifest should agree: err %v, diff:\n%s", err, d)
	}
	for name, changed := range map[string]string{
		"short description": strings.Replace(s, "shortDescription: Which", "shortDescription: What", 1),
		"a platform's bin":  strings.Replace(s, "bin: kubectl-cmsync.exe", "bin: kubectl-cmsync", 1),
		"caveats":           strings.Replace(s, "get AND create", "get and create", 1),
	} {
		d, err := compare("a", []byte(changed), "b", base)
		if err != nil || !strings.Contains(d, "@@") {
			t.Errorf("%s changed: want a diff, got err %v, diff %q", name, err, d)
		}
	}
	if _, err := compare("a", []byte("spec: [\n"), "b", base); err == nil {
		t.Errorf("broken YAML: want an error")
	}
}
