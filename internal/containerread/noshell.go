package containerread

import (
	"context"
	"errors"
	"path"
	"strings"
)

// verifyWithoutShell is the fallback for containers without sh.
func verifyWithoutShell(ctx context.Context, ex Executor, req ExecRequest, o Options, limit int64) *Verified {
	r := &noShellRead{ctx: ctx, ex: ex, req: req, o: o, limit: limit,
		obs: &Verified{NoShell: true, Paths: map[string]*VerifiedPath{}}}
	if req.Env && r.readEnv() {
		return r.obs
	}
	for _, pr := range req.Paths {
		op := &VerifiedPath{Kind: PathUnknown, Files: map[string]*VerifiedFile{}}
		r.obs.Paths[pr.Path] = op
		if r.noCat {
			op.Err = "the container has neither sh nor cat"
			continue
		}
		if pr.List && r.listNames(op, pr.Path) {
			return r.obs
		}
		for _, rel := range pr.Expect {
			if r.readFile(op, pr.Path, rel) {
				return r.obs
			}
			if r.noCat {
				break
			}
		}
	}
	if r.noCat && !r.obs.EnvRead {
		r.obs.Err = &VerifyError{Reason: VerifyNoShell, Message: "the container has neither sh nor cat",
			Hint: "use an image with a shell, or check by hand with kubectl debug"}
	}
	return r.obs
}

// noShellRead is one read without a shell: an exec per command. The
// methods that return true have met an error that ends the read (set in
// obs.Err).
type noShellRead struct {
	ctx   context.Context
	ex    Executor
	req   ExecRequest
	o     Options
	limit int64
	obs   *Verified
	// noCat: the container has no cat either.
	noCat bool
}

func (r *noShellRead) run(argv ...string) ([]byte, []byte, error) {
	r.obs.Execs++
	stdout, stderr, err := runExec(r.ctx, r.ex, r.req, argv, r.o.Timeout, r.limit)
	return stdout.buf.Bytes(), stderr.buf.Bytes(), err
}

// fatal tells whether err ends the whole read (and records it).
func (r *noShellRead) fatal(err error, stderr []byte) bool {
	oe := ClassifyExecError(r.ctx, err, stderr)
	switch oe.Reason {
	case VerifyForbidden, VerifyNotRunning, VerifyTimeout:
		r.obs.Err = oe
		return true
	}
	if errors.Is(err, context.Canceled) || r.ctx.Err() != nil {
		r.obs.Err = oe
		return true
	}
	return false
}

// readEnv reads the environment with `cat /proc/self/environ`, else `env`.
func (r *noShellRead) readEnv() (fatal bool) {
	out, se, err := r.run("cat", "/proc/self/environ")
	switch {
	case err == nil:
		r.obs.Env, r.obs.EnvRead = ParseEnviron(out), true
	case r.fatal(err, se):
		return true
	case NotFoundBinary(err, se):
		r.noCat = true
		out, se, err = r.run("env")
		switch {
		case err == nil:
			r.obs.Env, r.obs.EnvRead = parseEnvLines(out), true
		case r.fatal(err, se):
			return true
		default:
			r.obs.EnvErr = "the container has neither sh, cat nor env"
		}
	default:
		r.obs.EnvErr = "cat /proc/self/environ failed" + stderrSuffix(se)
	}
	return false
}

// listNames lists the top-level names of a volume with `ls -1a`; a
// timestamped data directory among them makes it atomic.
func (r *noShellRead) listNames(op *VerifiedPath, dir string) (fatal bool) {
	out, se, err := r.run("ls", "-1a", dir)
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
	case r.fatal(err, se):
		return true
	}
	return false
}

// readFile reads one expected file with `cat`.
func (r *noShellRead) readFile(op *VerifiedPath, dir, rel string) (fatal bool) {
	p := dir
	if rel != "" {
		p = path.Join(dir, rel)
	}
	out, se, err := r.run("cat", p)
	switch {
	case err == nil:
		f := &VerifiedFile{Path: rel, Mode: -1, Size: int64(len(out))}
		if int64(len(out)) > r.o.MaxBytes && r.o.MaxBytes > 0 {
			// The whole file came anyway: compare its hash like the script would.
			f.SHA256 = SHA256Hex(out)
		} else {
			f.Data, f.HasData = out, true
		}
		op.Files[rel] = f
	case r.fatal(err, se):
		return true
	case NotFoundBinary(err, se):
		r.noCat = true
		op.Err = "the container has neither sh nor cat"
	default:
		low := strings.ToLower(string(se))
		if strings.Contains(low, "no such file") || strings.Contains(low, "not a directory") {
			return false // absent
		}
		if strings.Contains(low, "is a directory") {
			op.Dirs = append(op.Dirs, rel)
			return false
		}
		op.Files[rel] = &VerifiedFile{Path: rel, Mode: -1, Size: -1, Unread: "cat failed" + stderrSuffix(se)}
	}
	return false
}
