package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/nodereader"
)

// VerifyFlags are the flags of --verify, shared by status, diff and refresh.
type VerifyFlags struct {
	Enabled     bool
	MaxBytes    int64
	Concurrency int
	ExecTimeout time.Duration

	// Reader is how containers are read: readerExec (one exec per
	// container) or readerNode (one reader pod and one exec per node).
	Reader          string
	ReaderImage     string
	ReaderNamespace string
	ReaderLifetime  time.Duration
	KubeletRootDir  string
	// ReaderIdleTimeout deletes a node's reader pod once no read has used
	// it for that long (watch and controller; 0: keep it until Close).
	ReaderIdleTimeout time.Duration

	// ReaderPodFailed, when set before the first read, counts each node
	// reader pod that failed (nodereader.Options.PodFailed; the controller's
	// metrics).
	ReaderPodFailed func()

	// node is the node reader of this run, made by executor and closed by
	// Close.
	node *nodereader.Reader

	// Executor replaces the API server exec (tests).
	Executor containerread.Executor
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
	fs.StringVar(&v.Reader, "reader", readerExec, "How containers are read: exec (one exec per container; needs a shell in it), node (one short-lived reader pod per node reads every container of that node, shell or not; needs create/delete pods and pods/exec in --reader-namespace) or auto (node, and exec on a node where no reader pod can start).")
	fs.StringVar(&v.ReaderImage, "reader-image", nodereader.DefaultImage, "Image of the node reader pods (needs sh, grep, sort, tr, cat, ls, mkdir, rm, ln, tar and sleep; where tar is missing or fails, also readlink, and wc, stat and sha256sum when present).")
	fs.StringVar(&v.ReaderNamespace, "reader-namespace", nodereader.DefaultNamespace, "Namespace of the node reader pods (its Pod Security level must allow hostPID and the capabilities SYS_PTRACE and DAC_READ_SEARCH).")
	fs.DurationVar(&v.ReaderLifetime, "reader-lifetime", nodereader.DefaultLifetime, "Upper bound of a node reader pod's life (activeDeadlineSeconds); the pods are deleted when the command ends.")
	fs.StringVar(&v.KubeletRootDir, "kubelet-root-dir", "", "The kubelet's --root-dir on the nodes, for --reader=node (default: read from the kubelet's command line, else /var/lib/kubelet).")
}

// AddIdleFlag registers --reader-idle-timeout, for the commands that run
// until stopped (watch, controller): a one-shot command keeps its reader
// pods until it ends.
func (v *VerifyFlags) AddIdleFlag(fs *pflag.FlagSet) {
	fs.DurationVar(&v.ReaderIdleTimeout, "reader-idle-timeout", v.ReaderIdleTimeout, "With --reader=node, delete a node's reader pod once no read has used it for this long; the next read of the node starts a new one (0: keep it until its --reader-lifetime ends).")
}

// DefaultReaderIdleTimeout is --reader-idle-timeout's default: a reader
// pod is root on its node, and the reads of one change come within
// seconds of each other.
const DefaultReaderIdleTimeout = time.Minute

const (
	readerExec = "exec"
	readerNode = "node"
	// readerAuto: the node reader, and exec on a node where no reader pod
	// can start
	readerAuto = "auto"
)

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
	switch v.Reader {
	case "", readerExec:
		return nil // the node reader's flags do not apply
	case readerNode, readerAuto:
	default:
		return usageError("invalid --reader %q: must be exec, node or auto", v.Reader)
	}
	if v.KubeletRootDir != "" && (!path.IsAbs(v.KubeletRootDir) || path.Clean(v.KubeletRootDir) != v.KubeletRootDir) {
		return usageError("--kubelet-root-dir must be a clean absolute path, got %q", v.KubeletRootDir)
	}
	if errs := validation.IsDNS1123Label(v.ReaderNamespace); v.ReaderNamespace != "" && len(errs) > 0 {
		return usageError("invalid --reader-namespace %q: %s", v.ReaderNamespace, strings.Join(errs, "; "))
	}
	if v.ReaderLifetime != 0 && v.ReaderLifetime < time.Second {
		return usageError("--reader-lifetime must be at least 1s, got %s", v.ReaderLifetime)
	}
	if v.ReaderIdleTimeout != 0 && v.ReaderIdleTimeout < time.Second {
		return usageError("--reader-idle-timeout must be at least 1s, or 0 to keep each reader pod until its --reader-lifetime ends, got %s", v.ReaderIdleTimeout)
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
	now := v.Now
	if now == nil {
		now = apiClock.Now // ages compared with times the cluster wrote, on its clock
	}
	vo := inspect.VerifyOptions{MaxBytes: maxBytes, Concurrency: v.Concurrency, ExecTimeout: v.ExecTimeout, Now: now, Progress: progress}
	if v.node != nil {
		vo.Reader = v.node
	}
	return vo
}

// executor returns the configured executor, or one through the API server.
// With --reader=node it also makes the node reader (Options hands it to
// the reads; Close deletes its pods).
func (v *VerifyFlags) executor(cfg *rest.Config) (containerread.Executor, error) {
	ex := v.Executor
	if ex == nil {
		if cfg == nil {
			return nil, errors.New("--verify needs a connection to the cluster")
		}
		var err error
		if ex, err = containerread.NewRemoteExecutor(cfg); err != nil {
			return nil, err
		}
	}
	if (v.Reader == readerNode || v.Reader == readerAuto) && v.node == nil {
		if cfg == nil {
			return nil, errors.New("--reader=node needs a connection to the cluster")
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		o := nodereader.Options{Namespace: v.ReaderNamespace, Image: v.ReaderImage,
			KubeletRootDir: v.KubeletRootDir, Lifetime: v.ReaderLifetime, IdleTimeout: v.ReaderIdleTimeout,
			Concurrency: v.Concurrency, Now: apiClock.Now, PodFailed: v.readerPodFailed}
		if v.Reader == readerAuto {
			o.Fallback = containerread.ExecReader{Executor: ex, Concurrency: v.Concurrency}
		}
		v.node = nodereader.New(cs, ex, o)
	}
	return ex, nil
}

// readerPodFailed calls ReaderPodFailed, read when a pod fails: the
// controller sets it after Complete has made the node reader.
func (v *VerifyFlags) readerPodFailed() {
	if v.ReaderPodFailed != nil {
		v.ReaderPodFailed()
	}
}

// Close deletes the node reader's pods, if any; a failure is a warning on
// errOut (the pods end by their deadline anyway).
func (v *VerifyFlags) Close(errOut io.Writer) {
	if v.node == nil {
		return
	}
	if err := v.node.Close(); err != nil && errOut != nil {
		fmt.Fprintf(errOut, "warning: could not delete the node reader pods (label %s=%s in namespace %s; they end within --reader-lifetime): %v\n",
			nodereader.LabelRun, v.node.RunID(), v.ReaderNamespace, err)
	}
	v.node = nil
}

// Run observes every consumer of items (one exec per container) and fills
// their state, stateReason and syncedAt. Progress goes to errOut only when
// it is a terminal and the run takes a while.
func (v *VerifyFlags) Run(ctx context.Context, cfg *rest.Config, snap *inspect.Snapshot, items []inspect.Use, errOut io.Writer) ([]inspect.Use, error) {
	ex, err := v.executor(cfg)
	if err != nil {
		return items, err
	}
	defer v.Close(errOut)
	var progress io.Writer
	if isTerminal(errOut) {
		progress = errOut
	}
	return inspect.Verify(ctx, items, snap, ex, v.Options(progress)), nil
}
