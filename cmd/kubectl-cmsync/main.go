// Command kubectl-cmsync is the kubectl plugin `kubectl cmsync`. This file
// is wiring only: streams, the root command and the exit code.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // OIDC and other auth-provider kubeconfigs
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/cmd"
)

func main() {
	quietLogs(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root := cmd.NewCmdRoot(streams)
	err := root.ExecuteContext(ctx)
	stop()
	fmt.Fprint(os.Stderr, cmd.ErrorText(err))
	os.Exit(cmd.ExitCode(err))
}

// quietLogs silences client-go's logs, which go through klog to stderr:
// the plugin has no verbosity flag, and what they say is noise there (e.g.
// "Copying stderr failed" when an exec is cancelled by a verify timeout or
// ctrl-c: the command reports that exec itself). The API server's warnings,
// which client-go logs through klog by default, are for the user: they go
// to stderr as kubectl prints them ("Warning: ...", each once).
func quietLogs(stderr io.Writer) {
	klog.SetLogger(logr.Discard())
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true}))
}
