package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Cluster is what migrate reads: Deployments (to find Reloader) and the
// workloads whose annotations it explains. It only reads.
type Cluster interface {
	// Deployments lists the Deployments of namespace ("": all).
	Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error)
	// Deployment gets one.
	Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	// Workloads lists the Deployments, StatefulSets, DaemonSets, Jobs,
	// CronJobs and Argo Rollouts of namespace ("": all).
	Workloads(ctx context.Context, namespace string) ([]Workload, error)
}

// ClientCluster is the Cluster of a clientset; Dynamic (nil: none) lists
// Argo Rollouts, where their CRD is served.
type ClientCluster struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// rollouts lists the Argo Rollouts of ns ("": all); none where their CRD
// is not served.
func (c ClientCluster) rollouts(ctx context.Context, ns string) ([]Workload, error) {
	if c.Dynamic == nil {
		return nil, nil
	}
	l, err := c.Dynamic.Resource(refresh.RolloutResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &inspect.ListError{Resource: "rollouts.argoproj.io", Namespace: ns, Err: err}
	}
	var out []Workload
	for _, u := range l.Items {
		var r struct {
			metav1.ObjectMeta `json:"metadata"`
			Spec              struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			continue // not a Rollout this version reads
		}
		out = append(out, Workload{Kind: "Rollout", APIVersion: u.GetAPIVersion(), Namespace: r.Namespace, Name: r.Name,
			Annotations: r.Annotations, TemplateAnnotations: r.Spec.Template.Annotations, Spec: r.Spec.Template.Spec})
	}
	return out, nil
}

// Deployments implements Cluster.
func (c ClientCluster) Deployments(ctx context.Context, namespace string) ([]appsv1.Deployment, error) {
	l, err := c.Client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "deployments", Namespace: namespace, Err: err}
	}
	return l.Items, nil
}

// Deployment implements Cluster.
func (c ClientCluster) Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return c.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Workloads implements Cluster.
func (c ClientCluster) Workloads(ctx context.Context, ns string) ([]Workload, error) {
	var out []Workload
	deps, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "deployments", Namespace: ns, Err: err}
	}
	for _, d := range deps.Items {
		out = append(out, Workload{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Annotations: d.Annotations, TemplateAnnotations: d.Spec.Template.Annotations, Spec: d.Spec.Template.Spec})
	}
	sts, err := c.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "statefulsets", Namespace: ns, Err: err}
	}
	for _, s := range sts.Items {
		out = append(out, Workload{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, Annotations: s.Annotations, TemplateAnnotations: s.Spec.Template.Annotations, Spec: s.Spec.Template.Spec})
	}
	dss, err := c.Client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "daemonsets", Namespace: ns, Err: err}
	}
	for _, d := range dss.Items {
		out = append(out, Workload{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name, Annotations: d.Annotations, TemplateAnnotations: d.Spec.Template.Annotations, Spec: d.Spec.Template.Spec})
	}
	jobs, err := c.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "jobs", Namespace: ns, Err: err}
	}
	for _, j := range jobs.Items {
		out = append(out, Workload{Kind: "Job", Namespace: j.Namespace, Name: j.Name, Annotations: j.Annotations, TemplateAnnotations: j.Spec.Template.Annotations, Spec: j.Spec.Template.Spec})
	}
	cjs, err := c.Client.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &inspect.ListError{Resource: "cronjobs", Namespace: ns, Err: err}
	}
	for _, j := range cjs.Items {
		t := j.Spec.JobTemplate.Spec.Template
		out = append(out, Workload{Kind: "CronJob", Namespace: j.Namespace, Name: j.Name, Annotations: j.Annotations, TemplateAnnotations: t.Annotations, Spec: t.Spec})
	}
	rs, err := c.rollouts(ctx, ns)
	return append(out, rs...), err
}

// Reloader's images and labels, by which its Deployment is found.
var (
	reloaderImages = []string{"ghcr.io/stakater/reloader", "stakater/reloader", "docker.io/stakater/reloader", "quay.io/stakater/reloader"}
	reloaderLabels = map[string]string{"app.kubernetes.io/name": "reloader", "app": "reloader-reloader"}
)

// IsReloader tells whether d runs Reloader: by a container's image, else
// by the labels of its chart.
func IsReloader(d appsv1.Deployment) bool {
	if reloaderContainer(d) >= 0 {
		return true
	}
	for k, v := range reloaderLabels {
		if d.Labels[k] == v {
			return true
		}
	}
	return false
}

// reloaderContainer is the index of the container that runs Reloader's
// image, -1 for none.
func reloaderContainer(d appsv1.Deployment) int {
	return slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
		repo := imageRepository(c.Image)
		return slices.Contains(reloaderImages, repo) || strings.HasSuffix(repo, "/stakater/reloader")
	})
}

// imageRepository is an image reference without its tag or digest.
func imageRepository(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// FromDeployment is the Reloader d runs: the container with Reloader's
// image (else the first), its command after the binary and its args.
func FromDeployment(d appsv1.Deployment) (Reloader, string) {
	i := max(reloaderContainer(d), 0)
	cs := d.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return Reloader{Namespace: d.Namespace}, ""
	}
	c := cs[i]
	var args []string
	if len(c.Command) > 1 {
		args = append(args, c.Command[1:]...)
	}
	return Reloader{Namespace: d.Namespace, Args: append(args, c.Args...), Env: c.Env, EnvFrom: c.EnvFrom}, c.Image
}

// HelmRelease names the Helm release that installed d, "" for none.
func HelmRelease(d appsv1.Deployment) string {
	name := d.Annotations["meta.helm.sh/release-name"]
	if name == "" {
		return ""
	}
	ns := d.Annotations["meta.helm.sh/release-namespace"]
	if ns == "" {
		ns = d.Namespace
	}
	s := fmt.Sprintf("Helm release %s in namespace %s", name, ns)
	if chart := d.Labels["helm.sh/chart"]; chart != "" {
		s += " (chart " + chart + ")"
	}
	return s + fmt.Sprintf(": uninstall it with 'helm uninstall %s -n %s'", name, ns)
}

// Find returns the one Reloader Deployment among deps. None, or more than
// one, is an error that says what to do.
func Find(deps []appsv1.Deployment, where string) (appsv1.Deployment, error) {
	var found []appsv1.Deployment
	for _, d := range deps {
		if IsReloader(d) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return appsv1.Deployment{}, fmt.Errorf("no Reloader Deployment found %s (by the image stakater/reloader or the labels app.kubernetes.io/name=reloader, app=reloader-reloader): name it with --deployment NAMESPACE/NAME", where)
	}
	names := make([]string, len(found))
	for i, d := range found {
		names[i] = d.Namespace + "/" + d.Name
	}
	return appsv1.Deployment{}, fmt.Errorf("%d Reloader Deployments found %s: %s; choose one with --deployment NAMESPACE/NAME", len(found), where, strings.Join(names, ", "))
}

// InScope keeps the workloads of the namespaces the mapped controller
// watches: its one namespace, if any, and none it ignores.
func InScope(ws []Workload, v Values) []Workload {
	var out []Workload
	for _, w := range ws {
		if (len(v.Namespaces) > 0 && !v.WatchGlobally && w.Namespace != v.Namespaces[0]) || slices.Contains(v.IgnoreNamespaces, w.Namespace) {
			continue
		}
		out = append(out, w)
	}
	return out
}
