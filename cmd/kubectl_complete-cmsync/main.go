// Command kubectl_complete-cmsync makes `kubectl cmsync <TAB>` complete
// (kubectl 1.26 or later). kubectl's shell completion runs an executable
// named kubectl_complete-<plugin> from PATH with the words typed after the
// plugin name; this one hands them to `kubectl-cmsync __complete`, cobra's
// completion entry point, and passes its answer back unchanged.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pluginName is the plugin binary this helper completes.
const pluginName = "kubectl-cmsync"

func main() {
	self, _ := os.Executable()
	plugin, err := findPlugin(self)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubectl_complete-cmsync: %v\n", err)
		os.Exit(1)
	}
	c := exec.Command(plugin, append([]string{"__complete"}, os.Args[1:]...)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "kubectl_complete-cmsync: %v\n", err)
		os.Exit(1)
	}
}

// findPlugin returns the kubectl-cmsync beside the helper at self (both come
// from one release archive), or else the first on PATH, as kubectl would
// run it.
func findPlugin(self string) (string, error) {
	if self != "" {
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(self), pluginName)); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(pluginName)
	if err != nil {
		return "", fmt.Errorf("cannot find %s beside this helper or on PATH: install the plugin (kubectl krew install cmsync) or put it on PATH", pluginName)
	}
	return p, nil
}
