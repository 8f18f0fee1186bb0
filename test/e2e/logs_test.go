//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// klogLine is a klog header: severity, date, time, pid, file:line]
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ [^ ]+:\d+\] `)

// An exec cancelled by --exec-timeout while its output streams (2,000 keys
// take a few hundred ms to read on an idle machine) is reported as
// `unverifiable: timeout`, and
// client-go's log lines about it ("Copying stderr failed", "Copying stdout
// failed", printed through klog before) do not reach stderr. Several
// timeouts, as the cancellation must land while the streams are open.
func TestCancelledExecLogsNothing(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	data := map[string]string{}
	for i := range 2000 {
		data[fmt.Sprintf("k%04d", i)] = strings.Repeat("x", 200)
	}
	f.createConfigMap(configMap("big", data))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("big", "/etc/big"))), cmVolume("big", "big"))))
	f.waitPodReady("web")
	timedOut := 0
	for _, timeout := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond} {
		out, errOut, code := f.pluginRun("status", "-n", f.ns, "--verify", "--exec-timeout", timeout.String())
		if code != 0 {
			t.Errorf("--exec-timeout %s: exit %d, want 0", timeout, code)
		}
		if l := klogLine.FindString(errOut); l != "" || strings.Contains(errOut, "Copying") {
			t.Errorf("--exec-timeout %s: client-go logged on stderr:\n%s", timeout, errOut)
		}
		if strings.Contains(out, "unverifiable: timeout") {
			timedOut++
		}
	}
	if timedOut == 0 {
		t.Errorf("no exec timed out: the test did not cancel one (raise the keys or lower the timeouts)")
	}
}
