//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/rbacaudit"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// cliRole is one documented use of deploy/rbac.yaml: the ClusterRoles a
// user of some commands is bound to, and the commands played as that user.
type cliRole struct {
	// role: the ClusterRole the use is named after (the allow-list's role column)
	role string
	// extra: the roles bound beside it (cmsync-secrets in the namespace; cmsync-nodes cluster-wide)
	extra []string
	// probe: the command that succeeds once the bindings are in effect (status when nil)
	probe func(f *fx) []string
	play  func(f *fx, kubeconfig string)
}

// TestCLILeastPrivilege: each ClusterRole of deploy/rbac.yaml that
// docs/rbac.md gives a command (status and the dashboard, status --verify
// and diff, refresh and watch, lint --cluster) is bound to a
// ServiceAccount of its own, as the doc says to bind it; the commands run
// as that ServiceAccount; then the API server's audit log shows that no
// request of theirs was refused, and that every permission of the role
// was used, or is excused by docs/rbac.md's allow-list of the roles. The
// roles are deploy/rbac.yaml's own rules (copies named after the test's
// namespace), which deploy/rbac_test.go keeps equal to the doc's table.
func TestCLILeastPrivilege(t *testing.T) {
	t.Parallel()
	logPath := auditLogPath(t)
	allow := docsAllowList(t, rbacaudit.CLIAllowListHeading)
	f := newFx(t)
	f.cliScenarioSetup()
	// one role after another in one namespace: a failed command ends the test
	failed := false
	for _, r := range []cliRole{
		{role: "cmsync-status", extra: []string{"cmsync-secrets", "cmsync-nodes"}, play: playStatus},
		{role: "cmsync-verify", extra: []string{"cmsync-secrets", "cmsync-nodes"}, play: playVerify},
		{role: "cmsync-refresh", extra: []string{"cmsync-secrets", "cmsync-nodes"}, play: playRefreshAndWatch},
		{role: "cmsync-lint", probe: lintArgs, play: playLint},
	} {
		t0 := time.Now()
		sa := strings.TrimPrefix(r.role, "cmsync-")
		objs := f.bindRBACFileRoles(sa, append([]string{r.role}, r.extra...))
		probe := []string{"status", "-o", "json"}
		if r.probe != nil {
			probe = r.probe(f)
		}
		r.play(f, f.tokenKubeconfig(sa, func(path string) bool {
			_, _, code := f.pluginRunQuiet(append(probe, "--kubeconfig", path)...)
			return code == 0
		}))
		grants, err := objs.GrantsTo(f.ns, sa)
		if err != nil || len(grants) == 0 {
			t.Fatalf("the rules granted to %s: %d, %v", sa, len(grants), err)
		}
		user := rbacaudit.Username(f.ns, sa)
		events := auditEvents(t, logPath, user, t0)
		if len(events) == 0 {
			t.Fatalf("no request of %s in the audit log %s since %s", user, logPath, t0.Format(time.RFC3339))
		}
		rep := rbacaudit.Compare(grants, events, rbacaudit.ForRole(allow, r.role))
		t.Logf("%s as %s: %d requests, %d permissions used, %d allow-listed, in %s\n%s", r.role, user, len(events), len(rep.Used),
			len(rep.Excused), time.Since(t0).Round(time.Second), rep)
		if !rep.OK() {
			failed = true
			t.Errorf("least privilege of %s not shown by the audit log (what the role grants: deploy/rbac.yaml and pkg/rbac; "+
				"the excuses: docs/rbac.md):\n%s", r.role, rep)
		}
	}
	if failed {
		t.Log("a permission used by no command is removed from pkg/rbac, deploy/rbac.yaml and docs/rbac.md's table, " +
			"or listed in docs/rbac.md with the scenario that needs it")
	}
}

// bindRBACFileRoles creates ServiceAccount sa in the namespace and binds
// it to copies of deploy/rbac.yaml's ClusterRoles named (cmsync-nodes by a
// ClusterRoleBinding: nodes are cluster-scoped; the others by RoleBindings
// in the namespace), all deleted with the test. It returns the RBAC
// objects under the names the API server has them.
func (f *fx) bindRBACFileRoles(sa string, names []string) rbacaudit.Objects {
	f.t.Helper()
	if _, err := f.cs.CoreV1().ServiceAccounts(f.ns).Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating ServiceAccount %s: %v", sa, err)
	}
	roles := rbacFileRoles(f.t)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: f.ns}}
	var objs rbacaudit.Objects
	for _, name := range names {
		cr, ok := roles[name]
		if !ok {
			f.t.Fatalf("deploy/rbac.yaml has no ClusterRole %s", name)
		}
		cr.Name, cr.ResourceVersion = name+"-"+sa+"-"+f.ns, ""
		if _, err := f.cs.RbacV1().ClusterRoles().Create(f.ctx, &cr, metav1.CreateOptions{}); err != nil {
			f.t.Fatalf("creating ClusterRole %s: %v", cr.Name, err)
		}
		f.t.Cleanup(func() { _ = f.cs.RbacV1().ClusterRoles().Delete(f.ctx, cr.Name, metav1.DeleteOptions{}) })
		objs.ClusterRoles = append(objs.ClusterRoles, cr)
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}
		meta := metav1.ObjectMeta{Name: cr.Name}
		if name == "cmsync-nodes" {
			b := rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
			if _, err := f.cs.RbacV1().ClusterRoleBindings().Create(f.ctx, &b, metav1.CreateOptions{}); err != nil {
				f.t.Fatalf("creating ClusterRoleBinding %s: %v", b.Name, err)
			}
			f.t.Cleanup(func() { _ = f.cs.RbacV1().ClusterRoleBindings().Delete(f.ctx, b.Name, metav1.DeleteOptions{}) })
			objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, b)
			continue
		}
		meta.Namespace = f.ns
		b := rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
		if _, err := f.cs.RbacV1().RoleBindings(f.ns).Create(f.ctx, &b, metav1.CreateOptions{}); err != nil {
			f.t.Fatalf("creating RoleBinding %s: %v", b.Name, err)
		}
		objs.RoleBindings = append(objs.RoleBindings, b)
	}
	return objs
}

// cliScenarioSetup creates the consumers the commands act on: vol mounts
// app's greeting and the Secret tok; env reads app's level into its
// environment (restarted by refresh and watch on a change).
func (f *fx) cliScenarioSetup() {
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0", "level": "l0"}))
	f.createSecret(secret("tok", map[string]string{"token": "t0"}))
	vol := withMounts(busybox("c"), mount("v", "/etc/app"), mount("s", "/etc/tok"))
	f.createAnnotatedDeployment("vol", 1, withVolumes(podSpec(vol), cmVolume("v", "app"), secretVolume("s", "tok")),
		map[string]string{reconcile.AnnotationWatch: "true"})
	f.createAnnotatedDeployment("env", 1, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))),
		map[string]string{reconcile.AnnotationWatch: "true"})
	f.waitDeploymentSettled("vol")
	f.waitDeploymentSettled("env")
	f.createIdleWorkloads()
}

// createIdleWorkloads creates one workload of each other kind, all reading
// app and none running a pod: a StatefulSet of no replicas, a DaemonSet
// for no node, a suspended Job and a suspended CronJob.
func (f *fx) createIdleWorkloads() {
	f.t.Helper()
	spec := podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil)))
	tmpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: spec}
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	create := func(kind string, err error) {
		if err != nil {
			f.t.Fatalf("creating the %s: %v", kind, err)
		}
	}
	_, err := f.cs.AppsV1().StatefulSets(f.ns).Create(f.ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0)), Selector: sel("db"), Template: tmpl("db")}}, metav1.CreateOptions{})
	create("StatefulSet", err)
	ds := tmpl("agent")
	ds.Spec.NodeSelector = map[string]string{"cmsync.e2e/none": "none"}
	_, err = f.cs.AppsV1().DaemonSets(f.ns).Create(f.ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: sel("agent"), Template: ds}}, metav1.CreateOptions{})
	create("DaemonSet", err)
	job := tmpl("once")
	job.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err = f.cs.BatchV1().Jobs(f.ns).Create(f.ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec: batchv1.JobSpec{Suspend: ptr(true), Template: job}}, metav1.CreateOptions{})
	create("Job", err)
	_, err = f.cs.BatchV1().CronJobs(f.ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: ptr(true),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: job}}}}, metav1.CreateOptions{})
	create("CronJob", err)
}

// mustRun runs the plugin as kubeconfig's user and fails on an exit code
// not in ok (0 when none is given).
func (f *fx) mustRun(kubeconfig string, ok []int, args ...string) string {
	f.t.Helper()
	out, errOut, code := f.pluginRun(append(args, "--kubeconfig", kubeconfig)...)
	if len(ok) == 0 {
		ok = []int{0}
	}
	for _, c := range ok {
		if code == c {
			return out
		}
	}
	f.t.Fatalf("kubectl cmsync %s: exit %d, want %v: %s", strings.Join(args, " "), code, ok, errOut)
	return ""
}

// playStatus: status in its forms (every use, one object, each kind of
// workload, --unused, --secrets, --kubelet-config) and the dashboard until
// its first screen.
func playStatus(f *fx, kc string) {
	f.mustRun(kc, nil, "status")
	f.mustRun(kc, nil, "status", "configmap/app", "-o", "wide")
	f.mustRun(kc, nil, "status", "deploy/vol", "--secrets")
	f.mustRun(kc, nil, "status", "--unused", "--secrets", "--kubelet-config", "-o", "json")
	pods, _ := f.deploymentPods("vol")
	rss, err := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=vol"})
	if err != nil || len(rss.Items) == 0 {
		f.t.Fatalf("the ReplicaSet of vol: %v", err)
	}
	args := []string{"status", "rs/" + rss.Items[0].Name, "sts/db", "ds/agent", "job/once", "cj/nightly"}
	for name := range pods {
		args = append(args, "po/"+name)
	}
	f.mustRun(kc, nil, args...)
	d := f.startDashboard("--kubeconfig", kc, "-n", f.ns, "--secrets")
	d.waitScreen("the dashboard live with tok's row", podReadyTimeout, func(s string) bool {
		return strings.Contains(s, "live") && strings.Contains(s, " tok ")
	})
	d.keys("q")
	d.waitScreen("the dashboard's exit", podReadyTimeout, func(string) bool { return d.exitCode() != "" })
	_ = exec.Command("tmux", "-L", d.socket, "kill-server").Run() // the next play starts its own
}

// playVerify: what the status role does (the verify role serves status
// too), then status --verify and diff of a workload and of an object.
func playVerify(f *fx, kc string) {
	playStatus(f, kc)
	f.mustRun(kc, nil, "status", "--verify")
	f.mustRun(kc, []int{0, 3}, "diff", "deploy/vol")
	f.mustRun(kc, []int{0, 3}, "diff", "configmap/app")
}

// playRefreshAndWatch: what the status role does (the refresh role serves
// status too); after an edit of both keys, refresh annotates vol's pod and
// restarts env; then watch does the same for the next edit, and refreshes
// vol's pod for an edit of the Secret.
func playRefreshAndWatch(f *fx, kc string) {
	playStatus(f, kc)
	f.patchConfigMapData("app", map[string]string{"greeting": "v1", "level": "l1"})
	doc, errOut, code := f.refreshJSON("--kubeconfig", kc, "configmap/app", "--yes", "--timeout", "120s")
	if code != 0 {
		f.t.Fatalf("refresh --yes: exit %d: %s", code, errOut)
	}
	if got := actionsOf(doc); !strings.Contains(got, "annotate pod/") || !strings.Contains(got, "restart deployment/env") {
		f.t.Fatalf("refresh: %s, want vol's pod annotated and deployment/env restarted", got)
	}
	f.waitDeploymentSettled("env")
	w := f.startWatch("--kubeconfig", kc, "--secrets", "--debounce", "1s")
	pods, _ := f.deploymentPods("vol")
	f.patchConfigMapData("app", map[string]string{"greeting": "v2", "level": "l2"})
	for name := range pods {
		w.waitFor("pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
	}
	w.waitFor("env restarted", isResult(refresh.ActionRestart, "deployment/env"))
	annotated := func(name string) func(reconcile.Event) bool { return isResult(refresh.ActionAnnotate, "pod/"+name) }
	before := map[string]int{}
	for name := range pods {
		before[name] = w.count(annotated(name))
	}
	f.patchSecretData("tok", map[string]string{"token": "t1"})
	for name := range pods {
		f.poll("pod "+name+" refreshed for the Secret", podReadyTimeout, func() (bool, error) {
			return w.count(annotated(name)) > before[name], nil
		})
	}
	w.stop()
}

// lintArgs writes a manifest whose Deployment reads app and tok, which
// only the cluster holds, and returns the lint --cluster --check of it:
// exit 0 once the cluster is asked and answers that both exist.
func lintArgs(f *fx) []string {
	manifest := filepath.Join(f.t.TempDir(), "app.yaml")
	doc := `apiVersion: apps/v1
kind: Deployment
metadata: {name: lint}
spec:
  selector: {matchLabels: {app: lint}}
  template:
    metadata: {labels: {app: lint}}
    spec:
      containers:
      - name: c
        image: busybox
        envFrom: [{configMapRef: {name: app}}, {secretRef: {name: tok}}]
`
	if err := os.WriteFile(manifest, []byte(doc), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return []string{"lint", "-f", manifest, "--cluster", "--check", "-n", f.ns}
}

// playLint: lint --cluster of a manifest that reads app and tok.
func playLint(f *fx, kc string) {
	f.mustRun(kc, nil, lintArgs(f)...)
}
