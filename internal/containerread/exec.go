package containerread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Executor runs argv in a container and streams its output. It is the only
// door from the verify read to the cluster (RemoteExecutor, below, goes
// through the API server, as kubectl exec does). A non-zero exit is an
// error that carries the code (k8s.io/client-go/util/exec.ExitError).
type Executor interface {
	Exec(ctx context.Context, t Target, argv []string, stdout, stderr io.Writer) error
}

// Target is the container an exec runs in.
type Target struct{ Namespace, Pod, Container string }

// RemoteExecutor runs commands in containers through the API server the way
// kubectl exec v0.37 does: WebSocket (a GET) first, SPDY (a POST) when the
// upgrade fails or an HTTPS proxy is in the way. KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
// disables WebSocket, as it does for kubectl.
type RemoteExecutor struct {
	config *rest.Config
	client rest.Interface
}

// NewRemoteExecutor builds an Executor from a client configuration.
func NewRemoteExecutor(cfg *rest.Config) (*RemoteExecutor, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &RemoteExecutor{config: cfg, client: cs.CoreV1().RESTClient()}, nil
}

// Exec runs argv in the container without stdin or a TTY.
func (e *RemoteExecutor) Exec(ctx context.Context, t Target, argv []string, stdout, stderr io.Writer) error {
	return e.ExecStdin(ctx, t, argv, nil, stdout, stderr)
}

// ExecStdin runs argv in the container with stdin (nil for none) and no
// TTY: the node reader's session reads its requests from it.
func (e *RemoteExecutor) ExecStdin(ctx context.Context, t Target, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := e.client.Post().Resource("pods").Namespace(t.Namespace).Name(t.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: t.Container,
			Command:   argv,
			Stdin:     stdin != nil,
			Stdout:    stdout != nil,
			Stderr:    stderr != nil,
		}, scheme.ParameterCodec)
	u := req.URL()
	exec, err := remotecommand.NewSPDYExecutor(e.config, "POST", u)
	if err != nil {
		return err
	}
	if strings.ToLower(os.Getenv("KUBECTL_REMOTE_COMMAND_WEBSOCKETS")) != "false" {
		// WebSocketExecutor must be "GET" (RFC 6455 4.1).
		ws, err := remotecommand.NewWebSocketExecutor(e.config, "GET", u.String())
		if err != nil {
			return err
		}
		exec, err = remotecommand.NewFallbackExecutor(ws, exec, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return err
		}
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// limitWriter keeps at most n bytes and reports overflow.
type limitWriter struct {
	buf      bytes.Buffer
	n        int64
	overflow bool
	cancel   context.CancelFunc
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len())+int64(len(p)) > w.n {
		w.overflow = true
		if w.cancel != nil {
			w.cancel()
		}
		return 0, errors.New("output limit exceeded")
	}
	return w.buf.Write(p)
}

func runExec(ctx context.Context, ex Executor, req ExecRequest, argv []string, timeout time.Duration, limit int64) (*limitWriter, *limitWriter, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	stdout := &limitWriter{n: limit, cancel: cancel}
	stderr := &limitWriter{n: 64 << 10}
	err := ex.Exec(cctx, Target{Namespace: req.Namespace, Pod: req.Pod, Container: req.Container}, argv, stdout, stderr)
	if err == nil && cctx.Err() != nil {
		err = cctx.Err()
	}
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	return stdout, stderr, err
}
