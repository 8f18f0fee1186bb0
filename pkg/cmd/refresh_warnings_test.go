package cmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestRefreshGroupsWarnings: exec forbidden in both pods of Deployment web
// (an env use each) is one Warning line on stderr, with its fix, and the
// plan's rows point to it instead of repeating the cause; the same in a
// client dry run and in a real run.
func TestRefreshGroupsWarnings(t *testing.T) {
	ctrl := true
	forbidden := errors.New(`pods "web-1-a" is forbidden: User "dev" cannot create resource "pods/exec" in API group "" in the namespace "ns"`)
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &ctrl}}}},
	}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{}}
	for _, name := range []string{"web-1-a", "web-1-b"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}})
		ex.Containers["ns/"+name+"/app"] = &readtest.Container{Err: forbidden}
	}
	for _, dry := range []string{string(refresh.DryRunClient), string(refresh.DryRunNone)} {
		var out, errOut bytes.Buffer
		o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		o.Namespace, o.Client, o.Cluster.Executor, o.Cluster.Patcher = "ns", fake.NewClientset(objs...), ex, &countingPatcher{}
		o.DryRun, o.Yes = dry, true
		err := o.Run(context.Background())
		if dry == string(refresh.DryRunNone) && ExitCode(err) != ExitCheck {
			t.Errorf("--dry-run=%s: exit %d (%v), want 3 (web not current)", dry, ExitCode(err), err)
		}
		warnings := strings.Count(errOut.String(), "Warning: ")
		if warnings != 1 || !strings.Contains(errOut.String(), "Warning: [1] 2 uses are unverifiable: ") || !strings.Contains(errOut.String(), "pods/exec") {
			t.Errorf("--dry-run=%s: %d warnings, want one for both uses:\n%s", dry, warnings, errOut.String())
		}
		if !strings.Contains(out.String(), "cannot tell whether stale (see warning 1); use --strategy restart") || strings.Contains(out.String(), "forbidden") {
			t.Errorf("--dry-run=%s: the rows do not point to the warning, or repeat its cause:\n%s", dry, out.String())
		}
	}
}
