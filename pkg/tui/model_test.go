package tui_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/cmd"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/tui"
)

// testNow is the fixed clock of the dashboard tests.
var testNow = time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)

const ns = "shop"

// cluster is a small namespace: ConfigMap app-config read by Deployment
// web's pod through a volume and an env variable, ConfigMap flags read by a
// bare pod through a subPath, and ConfigMap orphan that nobody reads.
func cluster() []runtime.Object {
	created := metav1.NewTime(testNow.Add(-time.Hour))
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: created, ResourceVersion: "1"}, Data: data}
	}
	yes := true
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "dep-uid"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns, UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep-uid", Controller: &yes}}}}
	running := corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f-x2x9q", Namespace: ns, UID: "pod-web",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: "rs-uid", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "node-1",
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}},
				Env: []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "greeting"}}}}}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}},
	}
	tool := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "toolbox", Namespace: ns, UID: "pod-toolbox"},
		Spec: corev1.PodSpec{NodeName: "node-1",
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "flags", MountPath: "/etc/flags.conf", SubPath: "flags.conf"}}}},
			Volumes: []corev1.Volume{{Name: "flags", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "flags"}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}},
	}
	return []runtime.Object{cm("app-config", map[string]string{"greeting": "v1"}), cm("flags", map[string]string{"flags.conf": "a=1"}),
		cm("orphan", map[string]string{"x": "1"}), dep, rs, web, tool}
}

// containers is what the fake executor shows: web has v1 everywhere.
func containers() map[string]*readtest.Container {
	return map[string]*readtest.Container{
		ns + "/web-5d8f-x2x9q/app": {
			Volumes: map[string]readtest.Volume{"/etc/app": {Target: "..2024_05_06_06_10_00.123", Files: map[string][]byte{"greeting": []byte("v1")}}},
			Env:     map[string]string{"GREETING": "v1"},
		},
		ns + "/toolbox/app": {Files: map[string][]byte{"/etc/flags.conf": []byte("a=1")}},
	}
}

// harness runs the model with the commands' real actions over a fake
// clientset and a fake executor, and delivers the commands' messages
// synchronously to Update.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	// api is the model's client when set (wrapping client), else client
	api  kubernetes.Interface
	exec *readtest.Executor
	m    *tui.Model
	opts tui.Options
	msgs chan tea.Msg
	mu   sync.Mutex
	// dash, when set, changes the dashboard's options before it starts
	dash func(*cmd.DashboardOptions)
}

// newHarness starts the model. setup runs before it starts: reactors must
// be installed there, as the fake clientset's reaction chain is not safe to
// change while the model's goroutines call it; a reactor whose answer must
// change during the test reads a value the test flips (an atomic).
func newHarness(t *testing.T, width, height int, setup ...func(*harness)) *harness {
	t.Helper()
	h := startHarness(t, width, height, setup...)
	h.until("the objects are listed", func(s string) bool { return strings.Contains(s, "app-config") && strings.Contains(s, "live") })
	return h
}

// startHarness is newHarness without waiting for the first data.
func startHarness(t *testing.T, width, height int, setup ...func(*harness)) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(cluster()...), exec: &readtest.Executor{Containers: containers()}, msgs: make(chan tea.Msg, 64)}
	for _, f := range setup {
		f(h)
	}
	o := cmd.NewDashboardOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
	o.Client, o.Executor, o.Now, o.Namespace = h.client, h.exec, func() time.Time { return testNow }, ns
	if h.api != nil {
		o.Client = h.api
	}
	o.Timeout = 5 * time.Second
	if h.dash != nil {
		h.dash(o)
	}
	opts, err := o.TUIOptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts.Context = "test-context"
	h.opts = opts
	h.m = tui.New(opts)
	t.Cleanup(func() { h.m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"}) })
	h.update(tea.WindowSizeMsg{Width: width, Height: height})
	h.run(h.m.Init())
	return h
}

// container changes what the fake executor shows of a container of ns
// ("pod/container") while the model may be verifying it.
func (h *harness) container(podContainer string, change func(c *readtest.Container)) {
	h.exec.Update(ns+"/"+podContainer, change)
}

func (h *harness) run(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		if msg := c(); msg != nil {
			h.msgs <- msg
		}
	}()
}

func (h *harness) update(msg tea.Msg) {
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			h.run(c)
		}
		return
	}
	_, c := h.m.Update(msg)
	h.run(c)
}

// key sends one key press.
func (h *harness) key(k string) { h.update(keyMsg(k)) }

func keyMsg(k string) tea.KeyPressMsg {
	var msg tea.KeyPressMsg
	switch k {
	case "enter":
		msg = tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		msg = tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		msg = tea.KeyPressMsg{Code: tea.KeyDown}
	case "space":
		msg = tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	default:
		msg = tea.KeyPressMsg{Code: rune(k[0]), Text: k}
	}
	return msg
}

func (h *harness) screen() string { return ansi.Strip(h.m.Render()) }

// until delivers messages until the screen satisfies cond.
func (h *harness) until(what string, cond func(string) bool) {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond(h.screen()) {
		select {
		case msg := <-h.msgs:
			h.update(msg)
		case <-deadline:
			h.t.Fatalf("timed out waiting until %s; screen:\n%s", what, h.screen())
		}
	}
}

// drain delivers the messages that arrive within d.
func (h *harness) drain(d time.Duration) {
	end := time.After(d)
	for {
		select {
		case msg := <-h.msgs:
			h.update(msg)
		case <-end:
			return
		}
	}
}

func contains(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

func line(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

func TestObjectsScreenCountsUsesByVerdict(t *testing.T) {
	h := newHarness(t, 120, 20)
	s := h.screen()
	app := strings.Fields(line(s, "app-config"))
	// NAMESPACE NAME KIND PODS HOT RESTART NEVER MISSING
	if want := []string{ns, "app-config", "ConfigMap", "1", "1", "1", "0", "0"}; strings.Join(app[:8], " ") != strings.Join(want, " ") {
		t.Errorf("app-config row = %q, want it to start with %q", app, want)
	}
	if strings.Contains(s, "orphan") {
		t.Errorf("an unused ConfigMap is shown before u:\n%s", s)
	}
	h.key("u")
	if !strings.Contains(h.screen(), "orphan") {
		t.Errorf("u does not show the unused ConfigMap:\n%s", h.screen())
	}
	if !strings.Contains(s, "context test-context") || !strings.Contains(s, "namespace shop") {
		t.Errorf("header lacks context or namespace:\n%s", s)
	}
}

func TestFilterAndNavigation(t *testing.T) {
	h := newHarness(t, 120, 20)
	h.key("/")
	for _, r := range "fla" {
		h.key(string(r))
	}
	h.key("enter")
	s := h.screen()
	if strings.Contains(s, "app-config") || !strings.Contains(s, "flags") {
		t.Fatalf("filter /fla: want only flags:\n%s", s)
	}
	h.key("enter")
	s = h.screen()
	if !strings.Contains(s, "toolbox") || !strings.Contains(s, "subPath") || !strings.Contains(s, "restart-needed") {
		t.Fatalf("enter on flags: want its subPath consumer:\n%s", s)
	}
	h.key("esc")
	h.key("esc") // clears the filter
	if s := h.screen(); !strings.Contains(s, "app-config") {
		t.Fatalf("esc did not clear the filter:\n%s", s)
	}
}

func TestVerifyShowsStatesAndFreshness(t *testing.T) {
	h := newHarness(t, 140, 20)
	h.key("v") // the selected object: app-config
	h.until("app-config is verified", contains("██ 2/2"))
	h.key("enter")
	s := h.screen()
	vol := line(s, "/etc/app")
	if !strings.Contains(vol, "in-sync") || !strings.Contains(vol, "hot-update") || !strings.Contains(vol, "deployment/web") {
		t.Errorf("volume row = %q", vol)
	}
	env := line(s, "$GREETING")
	if !strings.Contains(env, "current") {
		t.Errorf("env row = %q, want current", env)
	}
}

// An edit of the ConfigMap marks the volume consumer pending, the env
// consumer stale, and re-verifies the pending one until the kubelet (here
// the fake container) has the new data, then says how long it took.
func TestEditMarksPendingThenInSync(t *testing.T) {
	h := newHarness(t, 140, 20)
	h.key("enter")
	cm, err := h.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "v2"
	cm.ResourceVersion = "2"
	if _, err := h.client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.until("the volume is pending and the env stale", func(s string) bool {
		return strings.Contains(line(s, "/etc/app"), "pending") && strings.Contains(line(s, "$GREETING"), "stale")
	})
	if d := line(h.screen(), "pending:"); !strings.Contains(d, "expected to write it within 0-90s") {
		t.Errorf("detail line = %q, want the expected delay", d)
	}
	// the kubelet writes the change, 2s after it (the fake clientset stamps
	// managedFields with the real clock)
	written := time.Now().UTC().Add(2 * time.Second).Format("2006_01_02_15_04_05")
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) {
		c.Volumes["/etc/app"] = readtest.Volume{Target: ".." + written + ".456", Files: map[string][]byte{"greeting": []byte("v2")}}
	})
	h.until("the volume is in-sync", func(s string) bool { return strings.Contains(line(s, "/etc/app"), "in-sync") })
	// whole seconds on both sides: 1 to 3 s
	if d := line(h.screen(), "the kubelet took"); !regexp.MustCompile(`the kubelet took [123]s to write the change`).MatchString(d) {
		t.Errorf("no propagation time shown:\n%s", h.screen())
	}
}

func TestRefreshDeclinedChangesNothing(t *testing.T) {
	h := newHarness(t, 160, 24)
	// the env use is stale: the plan restarts deployment/web
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Env["GREETING"] = "v0" })
	h.client.ClearActions()
	h.key("r")
	h.until("the plan is shown", contains("restart", "deployment/web", "[y/N]"))
	if !strings.Contains(h.screen(), "The plan restarts 1 workloads") {
		t.Errorf("the restart is not announced:\n%s", h.screen())
	}
	h.key("n")
	h.until("declined", contains("declined: nothing was changed"))
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "update" {
			t.Errorf("a declined refresh sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestRefreshConfirmedAnnotatesPendingPod(t *testing.T) {
	var patched sync.Once
	h := newHarness(t, 160, 24, func(h *harness) {
		h.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			p := a.(k8stesting.PatchAction)
			if p.GetPatchType() == types.MergePatchType && p.GetName() == "web-5d8f-x2x9q" {
				patched.Do(func() { // the kubelet re-syncs the annotated pod
					h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) {
						c.Volumes["/etc/app"] = readtest.Volume{Target: "..2024_05_06_07_10_00.1", Files: map[string][]byte{"greeting": []byte("v1")}}
					})
				})
			}
			return false, nil, nil
		})
	})
	// the volume is pending (old content), the env current
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) {
		c.Volumes["/etc/app"] = readtest.Volume{Target: "..2024_05_06_06_10_00.123", Files: map[string][]byte{"greeting": []byte("v0")}}
	})
	h.key("r")
	h.until("the plan is shown", contains("annotate", "pod/web-5d8f-x2x9q", "Apply this plan? [y/N]"))
	h.key("y")
	h.until("the result line", contains("refresh: 1 annotated current"))
	var n int
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" {
			n++
			if a.GetResource().Resource != "pods" {
				t.Errorf("patched %s, want pods only", a.GetResource().Resource)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d patches, want 1", n)
	}
}

func TestDiffScreenShowsTheDiffOfTheCommand(t *testing.T) {
	h := newHarness(t, 120, 20)
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Env["GREETING"] = "v0" })
	h.key("enter")
	h.key("down") // the env row
	h.key("d")
	h.until("the diff", contains("-GREETING=v0", "+GREETING=v1"))
	h.key("esc")
	if s := h.screen(); !strings.Contains(s, "$GREETING") {
		t.Errorf("esc does not go back to the consumers:\n%s", s)
	}
}

func TestWatchErrorShowsInStatusLine(t *testing.T) {
	var denied atomic.Bool
	h := newHarness(t, 120, 20, func(h *harness) {
		h.client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return denied.Load(), nil, errForbidden
		})
		h.client.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watchIface, error) {
			return denied.Load(), nil, errForbidden
		})
	})
	denied.Store(true)
	// a namespace change restarts the watch with the failing lists
	h.key("n")
	h.key("esc")
	h.key("s") // restarts the informers too
	h.until("the error", contains("error:", "forbidden", "watch failing"))
}

type watchIface = watch.Interface

var errForbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New(`User "dev" cannot list resource "configmaps"`))

// An API server that does not answer is named in the header and the
// status line; when it answers again the dashboard says so by itself.
func TestUnreachableAPIServerAndRecovery(t *testing.T) {
	var down atomic.Bool
	h := newHarness(t, 160, 20, func(h *harness) {
		h.client.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, errors.New(`dial tcp 127.0.0.1:6443: connect: connection refused`)
			}
			return false, nil, nil
		})
	})
	down.Store(true)
	h.key("s") // a new watch: probes at once
	h.until("unreachable", contains("● unreachable", "cannot reach the API server", "connection refused"))
	down.Store(false)
	h.until("live again", contains("● live"))
	if s := h.screen(); strings.Contains(s, "cannot reach") {
		t.Errorf("the error stays after recovery:\n%s", s)
	}
}

// The selected row stays selected when new data arrives.
func TestCursorSurvivesNewData(t *testing.T) {
	h := newHarness(t, 140, 20)
	h.key("enter")
	h.key("down") // the env row
	if d := line(h.screen(), "restart-needed:"); d == "" {
		t.Fatalf("the env row is not selected:\n%s", h.screen())
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
	if _, err := h.client.CoreV1().ConfigMaps(ns).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.key("esc")
	h.key("u") // shows the new, unused ConfigMap once the watch delivered it
	h.until("the new ConfigMap", contains("other"))
	h.key("u")
	h.key("enter")
	h.key("down")
	h.drain(1500 * time.Millisecond) // a tick and any snapshot
	if d := line(h.screen(), "restart-needed:"); d == "" {
		t.Errorf("the selection moved after new data:\n%s", h.screen())
	}
}

// Quitting while a refresh is being applied takes a second press, and the
// model then says the refresh was left half done (the command exits 1).
func TestQuitWhileApplyingAsksAgainAndIsReported(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := newHarness(t, 160, 24, func(h *harness) {
		h.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			<-release // the patch is in flight until the test ends
			return false, nil, nil
		})
	})
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) {
		c.Volumes["/etc/app"] = readtest.Volume{Target: "..2024_05_06_06_10_00.123", Files: map[string][]byte{"greeting": []byte("v0")}}
	})
	h.key("r")
	h.until("the plan is shown", contains("annotate", "pod/web-5d8f-x2x9q", "Apply this plan? [y/N]"))
	h.key("y")
	h.until("applying", contains("applying"))
	h.key("q")
	h.until("asked again", contains("press q again"))
	if quit, _ := h.m.Interrupted(); quit {
		t.Fatal("one press of q while applying interrupted the refresh")
	}
	h.key("q")
	quit, targets := h.m.Interrupted()
	if !quit || len(targets) != 1 || targets[0] != "pod/web-5d8f-x2x9q" {
		t.Errorf("Interrupted() = %v, %v; want true, [pod/web-5d8f-x2x9q]", quit, targets)
	}
}

// Exec that RBAC denies: the status line says so once, as status --verify
// says it: one warning with its count, cause and fix; the consumers point
// to it.
func TestVerifyForbiddenShowsTheReasonInTheStatusLine(t *testing.T) {
	h := newHarness(t, 200, 20)
	denied := errors.New(`unable to upgrade connection: pods "web-5d8f-x2x9q" is forbidden: User "system:serviceaccount:shop:reader" cannot create resource "pods/exec" in API group "" in the namespace "shop"`)
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Err = denied })
	h.key("v") // the selected object: app-config
	h.until("app-config is verified", contains("verified 2 consumers"))
	st := line(h.screen(), "verified 2 consumers")
	if !strings.Contains(st, "; Warning: [1] 2 uses are unverifiable: forbidden: create pods/exec. Fix: verify needs get and create on pods/exec") ||
		strings.Contains(st, "2 unverifiable:") {
		t.Errorf("status line = %q, want the one warning naming the missing permission and its fix", st)
	}
	h.key("enter")
	if vol := line(h.screen(), "/etc/app"); !strings.Contains(vol, "unverifiable: see warning 1") {
		t.Errorf("volume row = %q, want unverifiable: see warning 1", vol)
	}
}

// An exec whose error quotes escape sequences (a container's stderr can say
// anything) reaches the status line and the detail line escaped: nothing
// the cluster says restyles, clears or retitles the user's terminal.
func TestVerifyErrorWithEscapeSequencesIsEscaped(t *testing.T) {
	h := newHarness(t, 200, 20)
	hostile := errors.New("boom \x1b]0;pwned\x07\x1b[2J")
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Err = hostile })
	h.key("v") // the selected object: app-config
	h.until("app-config is verified", contains("verified 2 consumers"))
	h.key("enter")
	raw := h.m.Render()
	if strings.Contains(raw, "\x1b]0;") || strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\x07") {
		t.Errorf("the screen holds the container's escape sequences raw:\n%q", raw)
	}
	if d := line(h.screen(), "boom"); !strings.Contains(d, `boom \x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("detail line = %q, want the error escaped; screen:\n%s", d, h.screen())
	}
}

// RBAC that denies ReplicaSets is no watch failure: the dashboard goes live,
// owners stay replicaset/NAME, and the status line says so (as status's
// note does).
func TestReplicaSetsDeniedIsANoteNotAFailure(t *testing.T) {
	rsDenied := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "", errors.New(`User "dev" cannot list resource "replicasets"`))
	h := newHarness(t, 160, 20, func(h *harness) {
		h.client.PrependReactor("list", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, rsDenied
		})
		h.client.PrependWatchReactor("replicasets", func(k8stesting.Action) (bool, watchIface, error) {
			return true, nil, rsDenied
		})
	})
	h.until("live with a note", contains("app-config", "● live", "note: owners shown as replicaset/NAME (unresolved): cannot list replicasets (forbidden)"))
	if s := h.screen(); strings.Contains(s, "watch failing") || strings.Contains(s, "error:") {
		t.Errorf("a denied optional kind is shown as a failure:\n%s", s)
	}
	h.key("enter")
	h.until("the consumers", contains("/etc/app"))
	if row := line(h.screen(), "/etc/app"); !strings.Contains(row, "replicaset/web-5d8f") {
		t.Errorf("volume row = %q, want the owner replicaset/web-5d8f (unresolved)", row)
	}
}

// An informer that syncs after the snapshot that showed its rows, with no
// event of its own (an empty list of Jobs), still turns the header live: a
// dashboard on a quiet namespace stayed "syncing" for good before.
func TestLateSyncWithoutEventsGoesLive(t *testing.T) {
	release := make(chan struct{})
	h := startHarness(t, 120, 20, func(h *harness) {
		h.api = slowJobsClient{Interface: h.client, release: release}
	})
	h.until("the rows while Jobs are still listed", contains("app-config", "○ syncing"))
	h.drain(3 * tui.MinRedraw) // whatever snapshot was coming has come
	close(release)
	h.until("live", contains("● live"))
}

// A refresh is not planned from caches that have not synced: the status
// line says why, nothing is read by exec or sent; once live, r plans.
func TestRefreshWaitsForSyncedCaches(t *testing.T) {
	release := make(chan struct{})
	h := startHarness(t, 160, 24, func(h *harness) {
		h.api = slowJobsClient{Interface: h.client, release: release}
	})
	h.until("the rows while Jobs are still listed", contains("app-config", "○ syncing"))
	h.container("web-5d8f-x2x9q/app", func(c *readtest.Container) { c.Env["GREETING"] = "v0" })
	h.client.ClearActions()
	h.key("r")
	h.until("the refusal", contains("not planned: the watches have not synced yet"))
	if strings.Contains(h.screen(), "[y/N]") {
		t.Errorf("a plan was shown before the caches synced:\n%s", h.screen())
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "create" {
			t.Errorf("refresh before sync sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	close(release)
	h.until("live", contains("● live"))
	h.key("r")
	h.until("the plan is shown", contains("restart", "deployment/web", "[y/N]"))
}

// slowJobsClient answers LISTs of Jobs once release is closed (the fake
// clientset holds its lock while a reactor runs, so a reactor cannot wait).
type slowJobsClient struct {
	kubernetes.Interface
	release <-chan struct{}
}

// IsWatchListSemanticsUnSupported is the fake clientset's answer (the
// informers LIST and WATCH, and do not wait for a streaming list).
func (c slowJobsClient) IsWatchListSemanticsUnSupported() bool { return true }

func (c slowJobsClient) BatchV1() batchv1client.BatchV1Interface {
	return slowJobsBatch{BatchV1Interface: c.Interface.BatchV1(), release: c.release}
}

type slowJobsBatch struct {
	batchv1client.BatchV1Interface
	release <-chan struct{}
}

func (b slowJobsBatch) Jobs(namespace string) batchv1client.JobInterface {
	return slowJobs{JobInterface: b.BatchV1Interface.Jobs(namespace), release: b.release}
}

type slowJobs struct {
	batchv1client.JobInterface
	release <-chan struct{}
}

func (j slowJobs) List(ctx context.Context, opts metav1.ListOptions) (*batchv1.JobList, error) {
	select {
	case <-j.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return j.JobInterface.List(ctx, opts)
}
