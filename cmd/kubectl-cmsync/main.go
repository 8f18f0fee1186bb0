// Command kubectl-cmsync is the kubectl plugin `kubectl cmsync`. This file
// is wiring only: streams, the root command and the exit code.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // OIDC and other auth-provider kubeconfigs

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root := cmd.NewCmdRoot(streams)
	err := root.ExecuteContext(ctx)
	stop()
	fmt.Fprint(os.Stderr, cmd.ErrorText(err))
	os.Exit(cmd.ExitCode(err))
}
