//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// reloadCGI is busybox httpd's CGI script at /www/cgi-bin/reload: it
// appends the request's method and the value the pod reads now to
// /log/hooks.log, so the log says how often the hook came and whether it
// came after the remount.
const reloadCGI = `#!/bin/sh
echo "$REQUEST_METHOD $(cat /etc/app/greeting)" >> /log/hooks.log
printf 'Content-Type: text/plain\r\n\r\nreloaded\n'
`

// hookedSpec is a pod of busybox httpd on port 9090, its configuration
// mounted at /etc/app and its reload CGI from a ConfigMap (mode 0755).
func hookedSpec() corev1.PodSpec {
	c := busybox("httpd")
	c.Command = []string{"httpd", "-f", "-p", "9090", "-h", "/www"}
	c.Ports = []corev1.ContainerPort{{Name: "admin", ContainerPort: 9090}}
	c = withMounts(c, mount("cfg", "/etc/app"), mount("cgi", "/www/cgi-bin"), mount("log", "/log"))
	cgi := cmVolume("cgi", "reload-cgi")
	cgi.ConfigMap.DefaultMode = ptr(int32(0o755))
	return withVolumes(podSpec(c), cmVolume("cfg", "app"), cgi, corev1.Volume{Name: "log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// hookLog is a pod's /log/hooks.log.
func (f *fx) hookLog(pod string) string {
	f.t.Helper()
	s, err := f.readFile(pod, "httpd", "/log/hooks.log")
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// A Deployment annotated with a reload hook (and Reloader's auto, which
// would restart it): refresh remounts each pod, then sends the hook once,
// through the API server's pod proxy, after the remount (the CGI reads the
// new value); nothing restarts. Then the controller does the same for the
// next edit, straight to the pods' addresses.
func TestReloadHook(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("reload-cgi", map[string]string{"reload": reloadCGI}))
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createAnnotatedDeployment("prom", 2, hookedSpec(), map[string]string{reconcile.AnnotationWatch: "true", reconcile.ReloaderAuto: "true",
		refresh.ReloadHookAnnotation: "POST :admin/cgi-bin/reload"})
	f.waitDeploymentSettled("prom")
	before, restarts0 := f.deploymentPods("prom")
	if len(before) != 2 {
		t.Fatalf("pods of prom: %v, want 2", before)
	}
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})

	t.Log("refresh --wait: through the pod proxy, once per pod, after the remount")
	doc, errOut, code := f.refreshJSON("app", "--timeout", "90s")
	if code != 0 || len(doc.Items) != 2 {
		t.Fatalf("refresh: exit %d, %d results, want 0 and 2\n%s", code, len(doc.Items), errOut)
	}
	for _, r := range doc.Items {
		h := r.Hook
		if r.Action.Action != refresh.ActionAnnotate || r.Outcome != refresh.OutcomeCurrent || h == nil ||
			h.Outcome != refresh.HookOK || h.Via != refresh.HookViaProxy || h.Status != 200 || h.Request != "POST :9090/cgi-bin/reload" {
			t.Errorf("%s %s: %s, hook %+v; want current and the hook ok via proxy", r.Action.Action, r.Target, r.Outcome, h)
		}
		if !strings.Contains(r.Reason, "then reload hook POST :9090/cgi-bin/reload") {
			t.Errorf("%s: the reason does not name the hook: %s", r.Target, r.Reason)
		}
	}
	for name := range before {
		if got := f.hookLog(name); got != "POST v1\n" {
			t.Errorf("pod %s's hook log %q, want exactly one POST, made after the remount: %q", name, got, "POST v1\n")
		}
	}
	if after, restarts := f.deploymentPods("prom"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != restarts0 {
		t.Errorf("pods of prom: %v with %d restarts, want the same pods %v with %d", after, restarts, before, restarts0)
	}

	t.Log("the controller: straight to the pods, and no restart despite Reloader's annotation")
	loadImage(t)
	f.deployController("controller", "-n", f.ns, "--debounce=1s", "--max-wait=5s")
	leader := f.leader()
	f.waitControllerEvent(leader, "resumed", isResume)
	f.patchConfigMapData("app", map[string]string{"greeting": "v2"})
	for name := range before {
		e := f.waitAnyControllerEvent("pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
		if h := e.ReloadHook; e.Outcome != refresh.OutcomeCurrent || h == nil || h.Outcome != refresh.HookOK || h.Via != refresh.HookViaDirect {
			t.Errorf("controller, pod %s: %s, hook %+v (%s); want current and the hook ok via direct", name, e.Outcome, h, e.Message)
		}
		if got := f.hookLog(name); got != "POST v1\nPOST v2\n" {
			t.Errorf("pod %s's hook log %q after the controller, want %q", name, got, "POST v1\nPOST v2\n")
		}
	}
	if after, restarts := f.deploymentPods("prom"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != restarts0 {
		t.Errorf("pods of prom after the controller: %v with %d restarts, want the same pods %v with %d", after, restarts, before, restarts0)
	}
}

// A reload hook to a pod on the host network would reach whatever listens
// on the node: refresh refuses it (the hook invalid, its message naming
// --reload-hook-host-network) and still remounts the pod; with the flag the
// hook is sent (nothing listens on the node's port here: it fails).
func TestReloadHookHostNetworkRefused(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	spec := withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))
	spec.HostNetwork = true
	// a port no test listens on: the hook, once allowed, reaches the node and is refused there
	f.createAnnotatedDeployment("hostnet", 1, spec, map[string]string{refresh.ReloadHookAnnotation: "POST :39123/-/reload"})
	f.waitDeploymentSettled("hostnet")

	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	doc, errOut, _ := f.refreshJSON("app", "--timeout", "90s")
	if len(doc.Items) != 1 {
		t.Fatalf("refresh: %d results, want 1\n%s", len(doc.Items), errOut)
	}
	r := doc.Items[0]
	if h := r.Hook; r.Action.Action != refresh.ActionAnnotate || r.Outcome != refresh.OutcomeCurrent || h == nil ||
		h.Outcome != refresh.HookInvalid || !strings.Contains(h.Message, refresh.HookHostNetworkFlag) {
		t.Errorf("%s %s: %s, hook %+v; want the pod remounted (current) and the hook invalid, naming %s",
			r.Action.Action, r.Target, r.Outcome, h, refresh.HookHostNetworkFlag)
	} else {
		t.Logf("refused: %s", h.Message)
	}

	f.patchConfigMapData("app", map[string]string{"greeting": "v2"})
	doc, errOut, _ = f.refreshJSON("app", "--timeout", "90s", refresh.HookHostNetworkFlag)
	if len(doc.Items) != 1 {
		t.Fatalf("refresh %s: %d results, want 1\n%s", refresh.HookHostNetworkFlag, len(doc.Items), errOut)
	}
	if h := doc.Items[0].Hook; h == nil || h.Outcome != refresh.HookFailed {
		t.Errorf("refresh %s: hook %+v, want it sent to the node's port and failed there", refresh.HookHostNetworkFlag, h)
	}
}
