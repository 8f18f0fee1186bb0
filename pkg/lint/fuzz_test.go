package lint

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead: the manifest reader and everything after it never panic, and
// every error is a *ParseError with the file name.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{}]}{}"))
	f.Add([]byte("--- #\n---\n- 1\n...\nx: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := Read("f.yaml", data)
		for _, pe := range parseErrs(t, err) {
			if pe.File != "f.yaml" || pe.Line < 0 {
				t.Fatalf("bad error position: %v", pe)
			}
		}
		s := NewSet()
		for _, pe := range parseErrs(t, s.Add(docs, "default")) {
			if pe.File != "f.yaml" {
				t.Fatalf("bad error file: %v", pe)
			}
		}
		for _, it := range Lint(s, Options{}) {
			if it.Source.File != "f.yaml" || it.Source.Line < 1 || it.Finding.Severity == "" {
				t.Fatalf("bad item %+v", it)
			}
		}
	})
}
