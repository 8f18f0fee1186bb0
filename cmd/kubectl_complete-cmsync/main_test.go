package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func executable(t *testing.T, dir string) string {
	t.Helper()
	name := pluginName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindPlugin(t *testing.T) {
	archive, onPath, empty := t.TempDir(), t.TempDir(), t.TempDir()
	beside := executable(t, archive)
	fromPath := executable(t, onPath)
	t.Setenv("PATH", onPath)

	if got, err := findPlugin(filepath.Join(archive, "kubectl_complete-cmsync")); err != nil || got != beside {
		t.Errorf("helper beside the plugin: got %q, %v; want %q", got, err, beside)
	}
	if got, err := findPlugin(filepath.Join(empty, "kubectl_complete-cmsync")); err != nil || got != fromPath {
		t.Errorf("helper elsewhere: got %q, %v; want %q from PATH", got, err, fromPath)
	}
	t.Setenv("PATH", empty)
	if _, err := findPlugin(filepath.Join(empty, "kubectl_complete-cmsync")); err == nil || !strings.Contains(err.Error(), "cannot find kubectl-cmsync") {
		t.Errorf("no plugin anywhere: error %v, want one that says so", err)
	}
}
