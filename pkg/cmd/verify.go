package cmd

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// VerifyFlags are the flags of --verify, shared by status, diff and refresh.
type VerifyFlags struct {
	Enabled     bool
	MaxBytes    int64
	Concurrency int
	ExecTimeout time.Duration

	// Executor replaces the API server exec (tests).
	Executor inspect.Executor
	// Now replaces the clock (tests).
	Now func() time.Time
}

// AddFlags registers the verify flags; withSwitch adds --verify itself
// (diff and refresh always observe).
func (v *VerifyFlags) AddFlags(fs *pflag.FlagSet, withSwitch bool) {
	if withSwitch {
		fs.BoolVar(&v.Enabled, "verify", false, "Exec into each consuming container and compare what it has with the API (needs get and create on pods/exec).")
	}
	fs.Int64Var(&v.MaxBytes, "max-bytes", 1<<20, "Files larger than this are compared by size and sha256 only.")
	fs.IntVar(&v.Concurrency, "concurrency", 16, "How many execs run at once.")
	fs.DurationVar(&v.ExecTimeout, "exec-timeout", 10*time.Second, "Timeout of one exec.")
}

// Validate checks the flag values.
func (v *VerifyFlags) Validate() error {
	if v.MaxBytes < 0 {
		return usageError("--max-bytes must be 0 or more, got %d", v.MaxBytes)
	}
	if v.Concurrency < 1 {
		return usageError("--concurrency must be at least 1, got %d", v.Concurrency)
	}
	if v.ExecTimeout <= 0 {
		return usageError("--exec-timeout must be positive, got %s", v.ExecTimeout)
	}
	return nil
}

// Options returns the inspect options of these flags. progress gets the
// progress line (pass stderr only when it is a terminal, else nil).
func (v *VerifyFlags) Options(progress io.Writer) inspect.VerifyOptions {
	maxBytes := v.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1 // hash everything: VerifyOptions treats 0 as "default"
	}
	return inspect.VerifyOptions{MaxBytes: maxBytes, Concurrency: v.Concurrency, ExecTimeout: v.ExecTimeout, Now: v.Now, Progress: progress}
}

// executor returns the configured executor, or one through the API server.
func (v *VerifyFlags) executor(cfg *rest.Config) (inspect.Executor, error) {
	if v.Executor != nil {
		return v.Executor, nil
	}
	if cfg == nil {
		return nil, errors.New("--verify needs a connection to the cluster")
	}
	return inspect.NewRemoteExecutor(cfg)
}

// Run observes every consumer of items (one exec per container) and fills
// their state, stateReason and syncedAt. Progress goes to errOut only when
// it is a terminal and the run takes a while.
func (v *VerifyFlags) Run(ctx context.Context, cfg *rest.Config, snap *inspect.Snapshot, items []inspect.Item, errOut io.Writer) ([]inspect.Item, error) {
	ex, err := v.executor(cfg)
	if err != nil {
		return items, err
	}
	var progress io.Writer
	if isTerminal(errOut) {
		progress = errOut
	}
	return inspect.Verify(ctx, items, snap, ex, v.Options(progress)), nil
}
