// Command oneplatform narrows the release to one platform, for a quick
// release check (hack/release/check.sh with RELEASE_PLATFORMS=host):
//
//	go run ./hack/release/oneplatform config linux/amd64 < .goreleaser.yaml > one.yaml
//	go run ./hack/release/oneplatform manifest linux/amd64 < plugins/krew.yaml > one-krew.yaml
//
// config keeps the builds that target the platform's OS, each narrowed to
// that OS and architecture, and the archives and krew entries of those builds.
// manifest keeps the krew manifest's entry of the platform only. Both print
// YAML (comments and anchors are not kept) and fail when nothing is left.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 3 || !strings.Contains(os.Args[2], "/") {
		fmt.Fprintln(os.Stderr, "usage: oneplatform config|manifest OS/ARCH < IN > OUT")
		os.Exit(2)
	}
	in, err := io.ReadAll(os.Stdin)
	if err == nil {
		var out []byte
		goos, goarch, _ := strings.Cut(os.Args[2], "/")
		switch os.Args[1] {
		case "config":
			out, err = narrowConfig(in, goos, goarch)
		case "manifest":
			out, err = narrowManifest(in, goos, goarch)
		default:
			err = fmt.Errorf("unknown mode %q (config or manifest)", os.Args[1])
		}
		if err == nil {
			_, err = os.Stdout.Write(out)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// narrowConfig narrows a goreleaser configuration to goos/goarch.
func narrowConfig(in []byte, goos, goarch string) ([]byte, error) {
	var c map[string]any
	if err := yaml.Unmarshal(in, &c); err != nil {
		return nil, fmt.Errorf("not a YAML goreleaser configuration: %w", err)
	}
	var builds []any
	var buildIDs []string
	for _, b := range list(c["builds"]) {
		bm, _ := b.(map[string]any)
		if bm == nil || !slices.Contains(strs(bm["goos"]), goos) || !slices.Contains(strs(bm["goarch"]), goarch) {
			continue
		}
		bm["goos"], bm["goarch"] = []string{goos}, []string{goarch}
		builds = append(builds, bm)
		buildIDs = append(buildIDs, fmt.Sprint(bm["id"]))
	}
	if len(builds) == 0 {
		return nil, fmt.Errorf("no build targets %s/%s", goos, goarch)
	}
	c["builds"] = builds
	c["archives"], _ = keepByIDs(list(c["archives"]), buildIDs)
	var archiveIDs []string
	for _, a := range list(c["archives"]) {
		archiveIDs = append(archiveIDs, fmt.Sprint(a.(map[string]any)["id"]))
	}
	for _, k := range list(c["krews"]) {
		if km, ok := k.(map[string]any); ok {
			km["ids"] = slices.DeleteFunc(strs(km["ids"]), func(id string) bool { return !slices.Contains(archiveIDs, id) })
		}
	}
	return yaml.Marshal(c)
}

// keepByIDs keeps the entries whose ids name one of the given ids, narrowed to those.
func keepByIDs(entries []any, ids []string) ([]any, error) {
	var kept []any
	for _, e := range entries {
		em, _ := e.(map[string]any)
		if em == nil {
			continue
		}
		own := slices.DeleteFunc(strs(em["ids"]), func(id string) bool { return !slices.Contains(ids, id) })
		if len(own) > 0 {
			em["ids"] = own
			kept = append(kept, em)
		}
	}
	return kept, nil
}

// narrowManifest keeps the krew manifest's platform entry of goos/goarch.
func narrowManifest(in []byte, goos, goarch string) ([]byte, error) {
	var m map[string]any
	if err := yaml.UnmarshalStrict(in, &m); err != nil {
		return nil, fmt.Errorf("not a YAML krew manifest: %w", err)
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("no spec")
	}
	var kept []any
	for _, p := range list(spec["platforms"]) {
		pm, _ := p.(map[string]any)
		sel, _ := pm["selector"].(map[string]any)
		labels, _ := sel["matchLabels"].(map[string]any)
		if labels["os"] == goos && labels["arch"] == goarch {
			kept = append(kept, p)
		}
	}
	if len(kept) != 1 {
		return nil, fmt.Errorf("%d platform entries for %s/%s, want 1", len(kept), goos, goarch)
	}
	spec["platforms"] = kept
	return yaml.Marshal(m)
}

func list(v any) []any { l, _ := v.([]any); return l }

func strs(v any) []string {
	var out []string
	for _, s := range list(v) {
		out = append(out, fmt.Sprint(s))
	}
	return out
}
