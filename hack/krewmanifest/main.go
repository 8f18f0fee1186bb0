// Command krewmanifest compares the krew manifest that goreleaser generates
// with the one checked in, ignoring what changes with every release (the
// version, the archive URIs and their sha256):
//
//	go run ./hack/krewmanifest dist/krew/cmsync.yaml plugins/krew.yaml
//
// It exits 1 and prints a unified diff when they disagree. `make
// release-check` runs it.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/aymanbagabas/go-udiff"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: krewmanifest GENERATED CHECKED-IN (e.g. dist/krew/cmsync.yaml plugins/krew.yaml)")
		os.Exit(2)
	}
	diff, err := compareFiles(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	if diff != "" {
		fmt.Fprintf(os.Stderr, "error: %s and %s differ beyond version, uri and sha256; make them agree (.goreleaser.yaml krews: generates the first):\n%s", os.Args[1], os.Args[2], diff)
		os.Exit(1)
	}
	fmt.Printf("%s agrees with %s apart from version, uri and sha256\n", os.Args[2], os.Args[1])
}

func compareFiles(generated, checkedIn string) (string, error) {
	a, err := os.ReadFile(generated)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(checkedIn)
	if err != nil {
		return "", err
	}
	return compare(generated, a, checkedIn, b)
}

// compare returns a unified diff of the two manifests without their
// release-specific fields, or "" when they agree.
func compare(nameA string, a []byte, nameB string, b []byte) (string, error) {
	na, err := normalize(a)
	if err != nil {
		return "", fmt.Errorf("%s: %w", nameA, err)
	}
	nb, err := normalize(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", nameB, err)
	}
	if na == nb {
		return "", nil
	}
	return udiff.Unified(nameA, nameB, na, nb), nil
}

// normalize parses a manifest, drops spec.version and each platform's uri and
// sha256, orders the platforms by os/arch and prints it back as YAML.
func normalize(data []byte) (string, error) {
	var m map[string]any
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return "", fmt.Errorf("not a YAML manifest: %w", err)
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return "", fmt.Errorf("no spec")
	}
	delete(spec, "version")
	platforms, _ := spec["platforms"].([]any)
	for _, p := range platforms {
		if pm, ok := p.(map[string]any); ok {
			delete(pm, "uri")
			delete(pm, "sha256")
		}
	}
	sort.SliceStable(platforms, func(i, j int) bool { return platformKey(platforms[i]) < platformKey(platforms[j]) })
	out, err := yaml.Marshal(m)
	return string(out), err
}

func platformKey(p any) string {
	pm, _ := p.(map[string]any)
	selector, _ := pm["selector"].(map[string]any)
	labels, _ := selector["matchLabels"].(map[string]any)
	return fmt.Sprint(labels["os"], "/", labels["arch"])
}
