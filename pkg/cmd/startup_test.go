package cmd

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestKubectlCatalogNotParsed: the kubectl packages that completion
// imports call i18n.T in their package variables (apiresources first);
// run again with GODEBUG=inittrace=1, this package's test binary shows
// their initialisation allocating a few KiB, not the MiBs of a parsed
// catalog (internal/kubectlcatalog, imported by completion.go).
func TestKubectlCatalogNotParsed(t *testing.T) {
	if os.Getenv("CMSYNC_INITTRACE_CHILD") != "" {
		return
	}
	c := exec.Command(os.Args[0], "-test.run=^TestKubectlCatalogNotParsed$")
	c.Env = append(os.Environ(), "CMSYNC_INITTRACE_CHILD=1", "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := regexp.MustCompile(`init k8s.io/kubectl/pkg/cmd/apiresources @\S+ ms, \S+ ms clock, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no inittrace line of k8s.io/kubectl/pkg/cmd/apiresources in:\n%s", out)
	}
	if n, _ := strconv.Atoi(string(m[1])); n > 64<<10 {
		t.Errorf("k8s.io/kubectl/pkg/cmd/apiresources' initialisation allocated %d bytes: kubectl's catalog was parsed", n)
	}
}
