package tui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/tui"
)

// Each screen at 100x24 with the ASCII colour profile, as a program really
// runs it (teatest), compared with testdata/TestGolden/*.golden; update
// them with: go test ./pkg/tui -run TestGolden -update
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		// wait is what the terminal shows once the screen is complete
		wait []string
	}{
		{"objects", nil, []string{"app-config", "live"}},
		{"objects-unused", []string{"u"}, []string{"orphan"}},
		{"consumers", []string{"enter"}, []string{"$GREETING"}},
		{"verified", []string{"v", "enter"}, []string{"in-sync"}},
		{"diff", []string{"enter", "down", "d"}, []string{"+GREETING=v1"}},
		{"plan", []string{"r"}, []string{"[y/N]"}},
		{"help", []string{"?"}, []string{"any key: back"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 100, 24) // the fixture; its model is not used
			h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Env["GREETING"] = "v0" })
			m := tui.New(h.opts)
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 24),
				teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
			waitFor(t, tm, "app-config", "live")
			for _, k := range c.keys {
				tm.Send(keyMsg(k))
				time.Sleep(50 * time.Millisecond)
			}
			if len(c.keys) > 0 { // the first wait read what came before
				waitFor(t, tm, c.wait...)
			}
			if err := tm.Quit(); err != nil {
				t.Fatal(err)
			}
			final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*tui.Model)
			golden.RequireEqual(t, trimLines(ansi.Strip(final.Render())))
		})
	}
}

func waitFor(t *testing.T, tm *teatest.TestModel, parts ...string) {
	t.Helper()
	var seen []byte
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		seen = append(seen, b...)
		s := ansi.Strip(string(seen))
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// After a rollout the old pod terminates: the dashboard, like status
// --verify, shows its uses as terminating (its deletionTimestamp survives
// the informers' trim), not n/a.
func TestConsumersScreenShowsTerminatingPods(t *testing.T) {
	h := newHarness(t, 160, 24, func(h *harness) {
		var old *corev1.Pod
		for _, o := range cluster() {
			if p, ok := o.(*corev1.Pod); ok && p.Name == "web-5d8f-x2x9q" {
				old = p.DeepCopy()
			}
		}
		del := metav1.NewTime(testNow.Add(-time.Second))
		old.Name, old.UID, old.DeletionTimestamp = "web-5d8f-old", "pod-old", &del
		if _, err := h.client.CoreV1().Pods(ns).Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	h.key("v")
	h.key("enter")
	h.until("the old pod's uses are terminating", func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "web-5d8f-old") && !strings.Contains(l, "terminating") {
				return false
			}
		}
		return strings.Contains(s, "web-5d8f-old") && strings.Contains(s, "in-sync")
	})
}
