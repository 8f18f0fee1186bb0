package migrate

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func deployment(ns, name, image string, labels map[string]string) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
}

// TestIsReloader: by image (any registry, tag or digest), else by the
// chart's labels; never by a name alone.
func TestIsReloader(t *testing.T) {
	tests := []struct {
		d    appsv1.Deployment
		want bool
	}{
		{deployment("a", "x", "ghcr.io/stakater/reloader:v1.4.2", nil), true},
		{deployment("a", "x", "stakater/reloader", nil), true},
		{deployment("a", "x", "registry.corp:5000/mirror/stakater/reloader@sha256:abc", nil), true},
		{deployment("a", "x", "nginx", map[string]string{"app.kubernetes.io/name": "reloader"}), true},
		{deployment("a", "x", "nginx", map[string]string{"app": "reloader-reloader"}), true},
		{deployment("a", "reloader", "nginx", map[string]string{"app": "reloader"}), false},
		{deployment("a", "x", "stakater/reloader-like:1", nil), false},
	}
	for _, tc := range tests {
		if got := IsReloader(tc.d); got != tc.want {
			t.Errorf("IsReloader(%s, %v) = %t, want %t", tc.d.Spec.Template.Spec.Containers[0].Image, tc.d.Labels, got, tc.want)
		}
	}
}

// TestFromDeployment: the Reloader container's command after the binary,
// then its args, in order.
func TestFromDeployment(t *testing.T) {
	d := deployment("r", "x", "sidecar", nil)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "reloader",
		Image: "stakater/reloader:v1", Command: []string{"/manager", "--log-format=json"}, Args: []string{"--auto-reload-all"}})
	r, image := FromDeployment(d)
	if image != "stakater/reloader:v1" || r.Namespace != "r" || !reflect.DeepEqual(r.Args, []string{"--log-format=json", "--auto-reload-all"}) {
		t.Errorf("FromDeployment = %+v, %q", r, image)
	}
}

// TestInScope: the one namespace watched, never an ignored one.
func TestInScope(t *testing.T) {
	ws := []Workload{{Namespace: "shop"}, {Namespace: "kube-system"}, {Namespace: "web"}}
	ns := func(ws []Workload) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Namespace)
		}
		return out
	}
	if got := ns(InScope(ws, Values{WatchGlobally: true, IgnoreNamespaces: []string{"kube-system"}})); !reflect.DeepEqual(got, []string{"shop", "web"}) {
		t.Errorf("all but ignored: %v", got)
	}
	if got := ns(InScope(ws, Values{Namespaces: []string{"web"}})); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("one namespace: %v", got)
	}
}

// TestWorkloadsListsRollouts: Argo Rollouts are listed beside the built-in
// workloads where their CRD is served, and none where it is not.
func TestWorkloadsListsRollouts(t *testing.T) {
	ro := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"namespace": "shop", "name": "canary", "annotations": map[string]any{"reloader.stakater.com/auto": "true"}},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "x"}}}}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{refresh.RolloutResource: "RolloutList"}, ro)
	ws, err := ClientCluster{Client: fake.NewClientset(), Dynamic: dyn}.Workloads(context.Background(), "shop")
	if err != nil || len(ws) != 1 || ws[0].ref().String() != "rollout.argoproj.io/canary" || ws[0].Annotations["reloader.stakater.com/auto"] != "true" || len(ws[0].Spec.Containers) != 1 {
		t.Fatalf("workloads %+v (%v), want the Rollout", ws, err)
	}
}
