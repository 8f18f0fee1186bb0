// Package version says which build of kubectl-cmsync is running: the version,
// git commit and build date stamped by the release build (-ldflags -X), or,
// for a `go install` build, what the Go toolchain recorded in the binary.
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped by the release build, e.g.
//
//	-X github.com/kubectl-cmsync/kubectl-cmsync/pkg/version.version=v0.1.0
//
// (see .goreleaser.yaml). Empty in other builds.
var (
	version string
	commit  string
	date    string
)

// Unknown is the value of a field that neither the ldflags nor the build
// information provide.
const Unknown = "unknown"

// Info describes one build of the client.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running binary's build: the ldflags where set, the Go
// build information otherwise.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return Resolve(version, commit, date, bi)
}

// Resolve combines the stamped values with the Go build information. A
// stamped value wins; a missing one comes from the build information: the
// module version (set by `go install module@version`), and vcs.revision /
// vcs.time (set when building inside a git checkout). "(devel)", the module
// version of a local build, is reported as such.
func Resolve(stampedVersion, stampedCommit, stampedDate string, bi *debug.BuildInfo) Info {
	info := Info{
		Version:   stampedVersion,
		GitCommit: stampedCommit,
		BuildDate: stampedDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		if info.GitCommit == "" {
			info.GitCommit = settings["vcs.revision"]
			if info.GitCommit != "" && settings["vcs.modified"] == "true" {
				info.GitCommit += "-dirty"
			}
		}
		if info.BuildDate == "" {
			info.BuildDate = settings["vcs.time"]
		}
		if os, arch := settings["GOOS"], settings["GOARCH"]; os != "" && arch != "" {
			info.Platform = os + "/" + arch
		}
	}
	for _, f := range []*string{&info.Version, &info.GitCommit, &info.BuildDate} {
		if *f == "" {
			*f = Unknown
		}
	}
	return info
}
