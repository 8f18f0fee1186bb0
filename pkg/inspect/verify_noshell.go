package inspect

import (
	"context"
	"errors"
	"path"
	"strings"
)

// observeWithoutShell is the fallback for containers without sh.
func observeWithoutShell(ctx context.Context, ex Executor, req ObserveRequest, o ObserveOptions, limit int64) *Observation {
	obs := &Observation{NoShell: true, Paths: map[string]*ObservedPath{}}
	noCat := false
	run := func(argv ...string) ([]byte, []byte, error) {
		obs.Execs++
		stdout, stderr, err := runExec(ctx, ex, req, argv, o.Timeout, limit)
		return stdout.buf.Bytes(), stderr.buf.Bytes(), err
	}
	fatal := func(err error, stderr []byte) bool {
		oe := ClassifyExecError(ctx, err, stderr)
		switch oe.Reason {
		case ObserveForbidden, ObserveNotRunning, ObserveTimeout:
			obs.Err = oe
			return true
		}
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			obs.Err = oe
			return true
		}
		return false
	}
	if req.Env {
		out, se, err := run("cat", "/proc/self/environ")
		switch {
		case err == nil:
			obs.Env, obs.EnvRead = ParseEnviron(out), true
		case fatal(err, se):
			return obs
		case NotFoundBinary(err, se):
			noCat = true
			out, se, err = run("env")
			switch {
			case err == nil:
				obs.Env, obs.EnvRead = parseEnvLines(out), true
			case fatal(err, se):
				return obs
			default:
				obs.EnvErr = "the container has neither sh, cat nor env"
			}
		default:
			obs.EnvErr = "cat /proc/self/environ failed" + stderrSuffix(se)
		}
	}
	for _, pr := range req.Paths {
		op := &ObservedPath{Kind: PathUnknown, Files: map[string]*ObservedFile{}}
		obs.Paths[pr.Path] = op
		if noCat {
			op.Err = "the container has neither sh nor cat"
			continue
		}
		if pr.List {
			out, se, err := run("ls", "-1a", pr.Path)
			switch {
			case err == nil:
				names := []string{}
				for _, n := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
					if n == "" || n == "." || n == ".." {
						continue
					}
					names = append(names, n)
					if _, ok := SyncedAt(n); ok {
						if op.Target == "" {
							op.Target = n
						} else {
							op.Unstable = true // two data directories: mid-swap
						}
					}
				}
				op.Names = names
				if op.Target != "" {
					op.Kind = PathAtomic
				}
			case fatal(err, se):
				return obs
			}
		}
		for _, rel := range pr.Expect {
			p := pr.Path
			if rel != "" {
				p = path.Join(pr.Path, rel)
			}
			out, se, err := run("cat", p)
			switch {
			case err == nil:
				f := &ObservedFile{Path: rel, Mode: -1, Size: int64(len(out))}
				if int64(len(out)) > o.MaxBytes && o.MaxBytes > 0 {
					// The whole file came anyway: compare its hash like the script would.
					f.SHA256 = sha256Hex(out)
				} else {
					f.Data, f.HasData = out, true
				}
				op.Files[rel] = f
			case fatal(err, se):
				return obs
			case NotFoundBinary(err, se):
				noCat = true
				op.Err = "the container has neither sh nor cat"
			default:
				low := strings.ToLower(string(se))
				if strings.Contains(low, "no such file") || strings.Contains(low, "not a directory") {
					continue // absent
				}
				if strings.Contains(low, "is a directory") {
					op.Dirs = append(op.Dirs, rel)
					continue
				}
				op.Files[rel] = &ObservedFile{Path: rel, Mode: -1, Size: -1, Unread: "cat failed" + stderrSuffix(se)}
			}
			if noCat {
				break
			}
		}
	}
	if noCat && !obs.EnvRead {
		obs.Err = &ObserveError{Reason: ObserveNoShell, Message: "the container has neither sh nor cat",
			Hint: "use an image with a shell, or check by hand with kubectl debug"}
	}
	return obs
}
