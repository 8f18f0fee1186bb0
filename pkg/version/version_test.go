package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/kubectl-cmsync/kubectl-cmsync", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "5378c4e0"}, {Key: "vcs.time", Value: "2026-11-23T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	goInstall := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/kubectl-cmsync/kubectl-cmsync", Version: "v0.2.0"},
	}
	here := runtime.GOOS + "/" + runtime.GOARCH
	cases := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{"release build: ldflags win over build info", "v0.1.0", "abc123", "2026-11-23T10:00:00Z", vcs,
			Info{Version: "v0.1.0", GitCommit: "abc123", BuildDate: "2026-11-23T10:00:00Z", GoVersion: "go1.26.8", Platform: "darwin/arm64"}},
		{"go install module@version: the module version", "", "", "", goInstall,
			Info{Version: "v0.2.0", GitCommit: Unknown, BuildDate: Unknown, GoVersion: "go1.26.8", Platform: here}},
		{"local build in a dirty checkout: vcs stamps", "", "", "", vcs,
			Info{Version: "(devel)", GitCommit: "5378c4e0-dirty", BuildDate: "2026-11-23T09:00:00Z", GoVersion: "go1.26.8", Platform: "darwin/arm64"}},
		{"no build info at all", "", "", "", nil,
			Info{Version: Unknown, GitCommit: Unknown, BuildDate: Unknown, GoVersion: runtime.Version(), Platform: here}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Resolve(c.version, c.commit, c.date, c.bi); got != c.want {
				t.Errorf("Resolve() = %+v\nwant        %+v", got, c.want)
			}
		})
	}
}

// The test binary itself has build information: Get must read it, not
// report every field unknown.
func TestGetReadsTheRunningBinary(t *testing.T) {
	got := Get()
	if got.GoVersion != runtime.Version() {
		t.Errorf("GoVersion = %q, want %q", got.GoVersion, runtime.Version())
	}
	if got.Version == "" || got.GitCommit == "" || got.BuildDate == "" {
		t.Errorf("Get() left a field empty: %+v", got)
	}
}
