package tui_test

import (
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/cmd"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestWorkloadArgument: dashboard deploy/web shows web's uses only (not
// the bare pod's flags, nor the orphan with u), and the header names it.
func TestWorkloadArgument(t *testing.T) {
	h := startHarness(t, 200, 20, func(h *harness) {
		h.dash = func(o *cmd.DashboardOptions) {
			o.Workloads = []inspect.WorkloadKey{{Namespace: ns, Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}}}
		}
	})
	h.until("web's objects are listed", contains("app-config", "live"))
	h.key("u")
	s := h.screen()
	if strings.Contains(s, "flags") || strings.Contains(s, "orphan") || !strings.Contains(line(s, "context test-context"), "deployment/web") {
		t.Errorf("dashboard deploy/web shows another workload's objects, or its header does not name deployment/web:\n%s", s)
	}
	// n to another namespace shows everything there, not web's uses
	h.key("n")
	for range len(ns) {
		h.update(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	h.key("enter")
	h.until("every namespace", contains("all namespaces", "flags"))
	if strings.Contains(line(h.screen(), "all namespaces"), "deployment/web") {
		t.Errorf("the header still names deployment/web after n:\n%s", h.screen())
	}
}

// TestWorkloadArgumentNotFound: a workload that does not exist is an
// error before the screen opens, in kubectl's words.
func TestWorkloadArgumentNotFound(t *testing.T) {
	o := cmd.NewDashboardOptions(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
	o.Client, o.Namespace = fake.NewClientset(cluster()...), ns
	o.Workloads = []inspect.WorkloadKey{{Namespace: ns, Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "nope"}}}
	_, err := o.TUIOptions(t.Context())
	if err == nil || !strings.Contains(err.Error(), `deployments.apps "nope" not found in namespace "shop"`) {
		t.Errorf("TUIOptions = %v, want deployment nope not found", err)
	}
}

// otherCluster is a second cluster: ConfigMap remote-config read by pod
// far, whose container has it.
func otherCluster() (*fake.Clientset, *readtest.Executor) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "remote-config", Namespace: ns, ResourceVersion: "1"}, Data: map[string]string{"k": "v"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "far", Namespace: ns, UID: "pod-far"},
		Spec: corev1.PodSpec{NodeName: "node-9", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "remote-config"}, Key: "k"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	return fake.NewClientset(cm, pod), &readtest.Executor{Containers: map[string]*readtest.Container{ns + "/far/app": {Env: map[string]string{"K": "v"}}}}
}

// TestSwitchContext: c moves to the next context of the kubeconfig without
// leaving the program (the header names it, the rows are its cluster's,
// and v verifies there), C picks one by name; a context that cannot be
// connected leaves the dashboard where it was, and c goes on past it.
func TestSwitchContext(t *testing.T) {
	other, otherExec := otherCluster()
	h := newHarness(t, 200, 20, func(h *harness) {
		h.dash = func(o *cmd.DashboardOptions) {
			o.Context, o.Contexts = "test-context", []string{"broken", "other", "test-context"}
			o.ConnectContext = func(c *cmd.DashboardOptions) error {
				if c.Context == "broken" {
					return errors.New("cannot reach the Kubernetes API server")
				}
				c.Client, c.Executor = other, otherExec
				return nil
			}
		}
	})
	h.key("c") // after test-context, in name order: broken
	h.until("the failed switch is said", contains("could not switch to context broken (still on test-context): cannot reach the Kubernetes API server"))
	if !strings.Contains(h.screen(), "app-config") {
		t.Errorf("a failed switch left the objects of test-context:\n%s", h.screen())
	}
	h.key("c") // on from the failed one: other
	h.until("the other context's objects", contains("context other", "remote-config", "live"))
	h.key("C")
	for _, k := range "test-context" {
		h.key(string(k))
	}
	h.key("enter")
	h.until("back on test-context by name", contains("context test-context", "app-config", "live"))
	h.key("C")
	for _, k := range "other" {
		h.key(string(k))
	}
	h.key("enter")
	h.until("the other context's objects", contains("context other", "remote-config", "live"))
	if s := h.screen(); strings.Contains(s, "app-config") {
		t.Errorf("context other shows test-context's objects:\n%s", s)
	}
	h.key("v")
	h.until("remote-config is verified", contains("verified 1 consumers"))
	if len(otherExec.Calls[ns+"/far/app"]) == 0 {
		t.Errorf("v in context other did not read its pod far")
	}
	h.key("c") // after other: test-context
	h.until("back on test-context", contains("context test-context", "app-config", "live"))
	if strings.Contains(h.screen(), "remote-config") {
		t.Errorf("back on test-context, yet other's objects:\n%s", h.screen())
	}
}
