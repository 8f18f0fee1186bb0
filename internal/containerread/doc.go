// Package containerread reads what a container really has: the files of
// the paths it is asked for (a volume's ..data target, each file's mode,
// size and content or hash) and its environment. It knows nothing of
// ConfigMaps, uses or verdicts: pkg/inspect decides what to read and
// compares what was read with the API.
//
// The files:
//   - read.go: ReadContainer, one exec of the read-only script (script.go)
//     into one container, its output parsed (parse.go) into a Verified;
//     a container without sh gets a file-by-file fallback (noshell.go).
//   - exec.go: the Executor (pods/exec through the API server).
//   - errors.go: why a read failed, in the contract's words (VerifyError).
//   - reader.go: the Reader interface that the exec reader (ExecReader)
//     and the node reader (pkg/nodereader) implement, and Preparer.
//   - synced.go: SyncedAt, the time the kubelet's atomic writer encodes in
//     a ..data target name.
package containerread
