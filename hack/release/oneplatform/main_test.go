package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The project's own files, narrowed to linux/amd64: one build, one archive,
// krew fed by that archive only, and the manifest's linux/amd64 entry only.
func TestNarrowProjectFiles(t *testing.T) {
	cfg, err := os.ReadFile("../../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := narrowConfig(cfg, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Builds []struct {
			ID     string
			Goos   []string
			Goarch []string
		}
		Archives []struct{ ID string }
		Krews    []struct{ IDs []string }
	}
	if err := yaml.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Builds) != 1 || c.Builds[0].ID != "unix" || strings.Join(c.Builds[0].Goos, ",") != "linux" || strings.Join(c.Builds[0].Goarch, ",") != "amd64" {
		t.Errorf("builds = %+v, want unix for linux/amd64 only", c.Builds)
	}
	if len(c.Archives) != 1 || c.Archives[0].ID != "unix" {
		t.Errorf("archives = %+v, want unix only", c.Archives)
	}
	if len(c.Krews) != 1 || strings.Join(c.Krews[0].IDs, ",") != "unix" {
		t.Errorf("krews = %+v, want ids [unix]", c.Krews)
	}

	win, err := narrowConfig(cfg, "windows", "amd64")
	if err != nil || !strings.Contains(string(win), "id: windows") || strings.Contains(string(win), "id: unix") {
		t.Errorf("windows/amd64: err %v, config:\n%s", err, win)
	}
	if _, err := narrowConfig(cfg, "plan9", "amd64"); err == nil {
		t.Error("plan9/amd64: no error, want one (no build targets it)")
	}

	man, err := os.ReadFile("../../../plugins/krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err = narrowManifest(man, "linux", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "os: "); n != 1 || !strings.Contains(string(out), "os: linux") || !strings.Contains(string(out), "arch: amd64") {
		t.Errorf("narrowed manifest has %d platforms, want linux/amd64 only:\n%s", n, out)
	}
	if _, err := narrowManifest(man, "linux", "riscv64"); err == nil {
		t.Error("linux/riscv64: no error, want one (no such platform)")
	}
}
