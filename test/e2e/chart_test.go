//go:build e2e

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// helmBin is hack/tools/helm.sh's cached helm; the test fails, saying how to
// build it, when it is absent.
func helmBin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "tools", "helm.sh"), "--path").Output()
	if err != nil {
		t.Fatalf("helm is not built (%s): run hack/tools/helm.sh (or make helm) once", strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out))
}

// charts/kubectl-cmsync installed with helm (the suite's image, never
// pulled; the test's namespace only): the controller becomes ready, a
// ConfigMap edit reaches a Deployment's pods through their volume and they
// are annotated refreshed without a restart; watching one namespace
// (watchGlobally=false), its ServiceAccount may do nothing outside it and
// the release's namespace, and the release has no ClusterRole; helm
// uninstall then leaves none of the release's objects, cluster-scoped ones
// included.
func TestChart(t *testing.T) {
	t.Parallel() // its own namespace and release: nothing shared with the other tests
	f := newFx(t)
	helm := helmBin(t)
	loadImage(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createAnnotatedDeployment("vol", 1, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/app"))),
		cmItemsVolume("v", "app", corev1.KeyToPath{Key: "greeting", Path: "greeting"})), map[string]string{reconcile.AnnotationWatch: "true"})
	f.waitDeploymentSettled("vol")

	release := "chart-" + f.ns // unique: a ClusterRole it rendered would be cluster-wide
	repo, tag, _ := strings.Cut(cmsyncImage, ":")
	h := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(helm, append(args, "--namespace", f.ns)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	installed := false
	t.Cleanup(func() {
		if installed {
			_ = exec.Command(helm, "uninstall", release, "--namespace", f.ns, "--wait").Run()
		}
	})
	h("install", release, filepath.Join(repoRoot, "charts", "kubectl-cmsync"),
		"--set", "image.repository="+repo, "--set", "image.tag="+tag, "--set", "image.pullPolicy=Never",
		"--set", "watchGlobally=false", "--set", "namespaces={"+f.ns+"}",
		"--set", "extraArgs={--debounce=1s,--max-wait=5s}",
		"--wait", "--timeout", podReadyTimeout.String())
	installed = true
	sel := "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=controller"
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("controller pods: %d, %v; want the chart's 2 replicas", len(pods.Items), err)
	}
	for _, p := range pods.Items {
		if c := p.Spec.Containers[0]; c.Image != cmsyncImage || c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("pod %s runs %s (%s), want %s, never pulled", p.Name, c.Image, c.ImagePullPolicy, cmsyncImage)
		}
	}
	checkNamespacedAccess(t, f, release, pods.Items[0].Spec.ServiceAccountName)
	// the chart's memory limit (512Mi), read from the container's cgroup, sets the Go runtime's soft limit
	for _, p := range pods.Items {
		const want = "memory: the Go runtime's soft limit is 460 MiB, 90% of the container's limit of 512 MiB"
		if log := f.logs(p.Name, "controller"); !strings.Contains(log, want) {
			t.Errorf("pod %s's log does not say %q:\n%s", p.Name, want, log)
		}
	}
	// a ready controller has resumed: it recorded vol (its record annotation), so the edit below is a change
	f.poll("vol recorded by the controller", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "vol", metav1.GetOptions{})
		return err == nil && d.Annotations[reconcile.AnnotationApplied] != "", err
	})

	before, _ := f.deploymentPods("vol")
	for name := range before {
		if p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err != nil || p.Annotations[refresh.RefreshedAtAnnotation] != "" {
			t.Fatalf("pod %s before the edit: %v, annotations %v", name, err, p.Annotations)
		}
	}
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	for name := range before {
		f.poll("pod "+name+" annotated refreshed", podReadyTimeout, func() (bool, error) {
			p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{})
			return err == nil && p.Annotations[refresh.RefreshedAtAnnotation] != "", err
		})
		// the annotation comes before the kubelet's remount: the file follows it
		f.waitFile(name, "c", "/etc/app/greeting", "v1")
	}
	f.checkKubeEvent("Pod", "Refreshed")
	if after, restarts := f.deploymentPods("vol"); len(after) != len(before) || restarts != 0 {
		t.Errorf("pods of vol: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
	}
	for name := range before {
		if _, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v, want it refreshed in place", name, err)
		}
	}

	h("uninstall", release, "--wait", "--timeout", "2m")
	installed = false
	kubectl := kubectlPath(t)
	f.poll("the release's objects gone", time.Minute, func() (bool, error) {
		out, err := exec.Command(kubectl, "get", "--ignore-not-found", "-o", "name", "-l", "app.kubernetes.io/instance="+release,
			"-n", f.ns, "deployments,replicasets,pods,serviceaccounts,roles,rolebindings,poddisruptionbudgets,services,clusterroles,clusterrolebindings").Output()
		if err != nil {
			return false, err
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Logf("left: %s", strings.ReplaceAll(s, "\n", " "))
			return false, nil
		}
		return true, nil
	})
}

func kubectlPath(t *testing.T) string {
	t.Helper()
	dir, err := kubectlBinDir()
	if err != nil {
		t.Fatalf("the cluster's kubectl: %v", err)
	}
	return filepath.Join(dir, "kubectl")
}

// checkNamespacedAccess asks the API server (SubjectAccessReviews, as the
// authorizer answers the controller) what the ServiceAccount sa of f.ns may
// do: its work in f.ns, nothing in another namespace nor cluster-wide; and
// that the release installed no ClusterRole or ClusterRoleBinding.
func checkNamespacedAccess(t *testing.T, f *fx, release, sa string) {
	t.Helper()
	user := "system:serviceaccount:" + f.ns + ":" + sa
	can := func(verb, resource, sub, ns string) bool {
		t.Helper()
		r, err := f.cs.AuthorizationV1().SubjectAccessReviews().Create(f.ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource, Subresource: sub}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview %s %s/%s in %q: %v", verb, resource, sub, ns, err)
		}
		return r.Status.Allowed
	}
	for _, a := range []struct {
		verb, resource, sub, ns string
		want                    bool
	}{
		{"list", "configmaps", "", f.ns, true},
		{"watch", "secrets", "", f.ns, true},
		{"patch", "pods", "", f.ns, true},
		{"create", "pods", "exec", f.ns, true},
		{"get", "secrets", "", "kube-system", false},
		{"list", "secrets", "", "default", false},
		{"list", "configmaps", "", "default", false},
		{"create", "pods", "exec", "kube-system", false},
		{"patch", "pods", "", "default", false},
		{"list", "pods", "", "", false},
		{"list", "secrets", "", "", false},
		{"list", "nodes", "", "", false},
	} {
		if got := can(a.verb, a.resource, a.sub, a.ns); got != a.want {
			t.Errorf("can %s %s %s/%s in %q: %v, want %v", user, a.verb, a.resource, a.sub, a.ns, got, a.want)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
	crs, err := f.cs.RbacV1().ClusterRoles().List(f.ctx, sel)
	if err != nil || len(crs.Items) != 0 {
		t.Errorf("the release's ClusterRoles: %v (%v), want none", crs, err)
	}
	crbs, err := f.cs.RbacV1().ClusterRoleBindings().List(f.ctx, sel)
	if err != nil || len(crbs.Items) != 0 {
		t.Errorf("the release's ClusterRoleBindings: %v (%v), want none", crbs, err)
	}
}
