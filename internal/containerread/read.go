package containerread

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// PathRequest is one container path to read.
type PathRequest struct {
	// Path is absolute, in the container: a volume's mountPath, or the
	// mountPath of a subPath mount (a file or a directory).
	Path string
	// Expect lists the relative paths to read one by one when the container
	// has no shell (the full listing needs one).
	Expect []string
	// List asks the no-shell fallback to list the top-level names (whole
	// object volumes, where a removed key leaves a file nobody expects).
	List bool
}

// ExecRequest is everything read from one container in one exec.
type ExecRequest struct {
	Namespace, Pod, Container string
	Paths                     []PathRequest
	// Env reads the container's environment.
	Env bool
}

// Options bound one verify read.
type Options struct {
	// MaxBytes: larger files are compared by size and sha256 only.
	MaxBytes int64
	// Timeout of one exec (0: none).
	Timeout time.Duration
	// MaxOutput bounds what one exec may print (0: 64 MiB + 4*MaxBytes).
	MaxOutput int64
}

// PathKind is what a container path turned out to be.
type PathKind string

const (
	// PathAtomic is an atomic-writer volume: ..data -> ..TIMESTAMP.
	PathAtomic  PathKind = "atomic"
	PathDir     PathKind = "dir"
	PathFile    PathKind = "file"
	PathMissing PathKind = "missing"
	PathOther   PathKind = "other"
	// PathUnknown: read without a shell, the type could not be told.
	PathUnknown PathKind = "unknown"
)

// VerifiedFile is one file as the container shows it.
type VerifiedFile struct {
	// Path is relative to the observed path ("" for a path that is a file).
	Path string
	// Mode holds the permission bits (07777), -1 when unknown.
	Mode int32
	// Size in bytes, -1 when unknown.
	Size int64
	// Data is the content when it was read (HasData).
	Data    []byte
	HasData bool
	// SHA256 (hex) of a file larger than MaxBytes, when the container has
	// sha256sum.
	SHA256 string
	// Unread says why neither Data nor SHA256 is known.
	Unread string
}

// VerifiedPath is one requested path as the container shows it.
type VerifiedPath struct {
	Kind PathKind
	// Target is the name ..data points to (atomic volumes).
	Target string
	// Unstable: ..data moved while it was read, on every attempt.
	Unstable bool
	// Files by relative path.
	Files map[string]*VerifiedFile
	// Dirs and Others (symlinks, special files) by relative path.
	Dirs, Others []string
	// Listed: Files is the complete list of files under the path.
	Listed bool
	// Names is the top-level listing of the no-shell fallback (nil when
	// unknown or when Listed).
	Names []string
	// Err says why the path could not be read (no-shell fallback).
	Err string
}

// Verified is what one exec into a container showed.
type Verified struct {
	Paths map[string]*VerifiedPath
	// Env is the container's environment, when EnvRead.
	Env     map[string]string
	EnvRead bool
	// EnvErr says why the environment could not be read.
	EnvErr string
	// EnvNote says where Env was read when that is not the environment the
	// runtime configured for the container (which the exec reader's
	// processes get, and the node reader reads from the OCI spec), and what
	// that may show instead; "" otherwise.
	EnvNote string
	// NoShell: the container has no sh; the fallback read what it could.
	NoShell bool
	// Err is set when nothing could be read.
	Err *VerifyError
	// Execs counts the execs made.
	Execs int
}

// NewNonce returns a random per-run marker for the script's framing.
func NewNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "cmsync-" + hex.EncodeToString(b[:])
}

// ReadContainer reads what the container shows for the requested paths (and its
// environment) with one exec of the verify script. A container without
// sh gets a fallback: one `cat` per expected file, `ls -1a` for listings,
// `cat /proc/self/environ` (else `env`) for the environment. It never fails:
// what could not be read is said in the Verified.
func ReadContainer(ctx context.Context, ex Executor, req ExecRequest, o Options) *Verified {
	if o.MaxBytes < 0 {
		o.MaxBytes = 0
	}
	limit := o.MaxOutput
	if limit <= 0 {
		limit = 64<<20 + 4*o.MaxBytes
	}
	paths := make([]string, len(req.Paths))
	for i, p := range req.Paths {
		paths[i] = p.Path
	}
	var lastErr, lastRedacted string
	for attempt := 0; attempt < 2; attempt++ {
		nonce := NewNonce()
		stdout, stderr, err := runExec(ctx, ex, req, ScriptArgv(o.MaxBytes, nonce, req.Env, paths), o.Timeout, limit)
		if err != nil && stdout.overflow {
			return &Verified{Execs: attempt + 1, Err: &VerifyError{Reason: VerifyFailed,
				Message: fmt.Sprintf("the container printed more than %d bytes", limit), Hint: "lower --max-bytes"}}
		}
		if err != nil {
			oe := ClassifyExecError(ctx, err, stderr.buf.Bytes())
			if oe.Reason == VerifyNoShell {
				obs := verifyWithoutShell(ctx, ex, req, o, limit)
				obs.Execs += attempt + 1
				return obs
			}
			// A script error after complete output still counts.
			if obs, perr := ParseVerified(stdout.buf.Bytes(), nonce, paths); perr == nil {
				obs.Execs = attempt + 1
				return obs
			}
			if oe.Reason != VerifyFailed || attempt == 1 {
				return &Verified{Execs: attempt + 1, Err: oe}
			}
			lastErr, lastRedacted = oe.Error(), ""
			continue
		}
		obs, perr := ParseVerified(stdout.buf.Bytes(), nonce, paths)
		if perr == nil {
			obs.Execs = attempt + 1
			return obs
		}
		lastErr = fmt.Sprintf("unexpected output (%v)%s", perr, stderrSuffix(stderr.buf.Bytes()))
		lastRedacted = fmt.Sprintf("unexpected output (%s)%s", redactedError(perr), stderrSuffix(stderr.buf.Bytes()))
	}
	return &Verified{Execs: 2, Err: &VerifyError{Reason: VerifyFailed, Message: lastErr, redacted: lastRedacted}}
}
