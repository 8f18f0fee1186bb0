package inspect

import (
	"context"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

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
func (e *RemoteExecutor) Exec(ctx context.Context, namespace, pod, container string, argv []string, stdout, stderr io.Writer) error {
	req := e.client.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   argv,
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
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}
