//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// receiverScript is the CGI script of the alert receiver: it appends each
// request's body, and a newline, to /tmp/bodies (a JSON body has no raw
// newline: one line per message).
const receiverScript = `#!/bin/sh
head -c "$CONTENT_LENGTH" >> /tmp/bodies
echo >> /tmp/bodies
printf 'Content-Type: text/plain\r\n\r\nok\n'
`

// startReceiver runs a webhook receiver in the namespace: busybox httpd
// serving the CGI script receiverScript (from a ConfigMap, mode 0755) at
// /cgi-bin/rec on port 8080. It returns the URL, on the pod's IP (the host
// reaches pod IPs directly).
func (f *fx) startReceiver() string {
	f.t.Helper()
	f.createConfigMap(configMap("receiver", map[string]string{"rec": receiverScript}))
	c := corev1.Container{Name: "c", Image: imageBusybox, ImagePullPolicy: corev1.PullNever,
		Command: []string{"httpd", "-f", "-p", "8080", "-h", "/www"}, VolumeMounts: []corev1.VolumeMount{mount("cgi", "/www/cgi-bin")}}
	v := cmVolume("cgi", "receiver")
	v.ConfigMap.DefaultMode = ptr(int32(0o755))
	p := pod("receiver", withVolumes(podSpec(c), v))
	p.Labels[e2eLabel] = "true"
	p.Spec.ActiveDeadlineSeconds = ptr(int64(900))
	f.createPod(p)
	ready := f.waitPodReady("receiver")
	f.mustExec("receiver", "c", "touch", "/tmp/bodies")
	return "http://" + ready.Status.PodIP + ":8080/cgi-bin/rec"
}

// received are the bodies the receiver got, in order.
func (f *fx) received() []string {
	f.t.Helper()
	out := strings.TrimSpace(f.mustExec("receiver", "c", "cat", "/tmp/bodies"))
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// waitMessages waits until the receiver has n messages, then a while
// longer (past another debounce, so that a second message for one round
// would show), and returns the Slack texts.
func (f *fx) waitMessages(n int) []string {
	f.t.Helper()
	f.poll("alert messages", 60*time.Second, func() (bool, error) { return len(f.received()) >= n, nil })
	time.Sleep(5 * time.Second)
	var texts []string
	for _, b := range f.received() {
		var m struct{ Text string }
		if err := json.Unmarshal([]byte(b), &m); err != nil || m.Text == "" {
			f.t.Fatalf("the receiver got %q: not a Slack message (%v)", b, err)
		}
		texts = append(texts, m.Text)
	}
	return texts
}

// watch with --alert-webhook: a ConfigMap edit that refreshes the 2 pods of
// a Deployment is one Slack message naming the object, both pods' actions
// and their results; an edit of a Secret the same pods read as a variable
// is one more, naming the Secret and the restart; neither holds a value.
func TestWatchAlerts(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	webhook := f.startReceiver()
	const cmOld, cmNew = "cm-value-7f3a9", "cm-value-7f3b1"
	const secretOld, secretNew = "s3cret-old-91c2", "s3cret-new-4d7e"
	f.createConfigMap(configMap("app", map[string]string{"greeting": cmOld}))
	f.createSecret(secret("db", map[string]string{"PASSWORD": secretOld}))
	c := withMounts(withEnv(busybox("c"), secretEnv("PASSWORD", "db", "PASSWORD")), mount("cfg", "/etc/app"))
	f.createDeployment("web", 2, withVolumes(podSpec(c), cmVolume("cfg", "app")), false)
	f.waitDeploymentSettled("web")
	w := f.startWatch("--secrets", "--alert-webhook", webhook, "--alert-format", "slack", "--alert-info", "e2e "+f.ns)
	values := []string{cmOld, cmNew, secretOld, secretNew, base64.StdEncoding.EncodeToString([]byte(secretOld)),
		base64.StdEncoding.EncodeToString([]byte(secretNew))}

	t.Log("a ConfigMap edit: one message for the round, naming both pods' actions and results")
	pods, _ := f.deploymentPods("web")
	f.patchConfigMapData("app", map[string]string{"greeting": cmNew})
	for name := range pods {
		w.waitFor("pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
	}
	texts := f.waitMessages(1)
	if len(texts) != 1 {
		t.Fatalf("%d messages for one round, want 1:\n%s", len(texts), strings.Join(texts, "\n---\n"))
	}
	wants := []string{"*[e2e " + f.ns + "] kubectl-cmsync: namespace " + f.ns + "; changed configmap/app; 2 annotate; results: 2 current*",
		"change configmap/app -n " + f.ns + ": keys changed: greeting"}
	for name := range pods {
		wants = append(wants, "action annotate pod/"+name+" -n "+f.ns, "result annotate pod/"+name+" -n "+f.ns+": current")
	}
	checkMessage(t, texts[0], wants, values)

	t.Log("a Secret edit: one more message, naming the Secret and the restart, without its values")
	f.patchSecretData("db", map[string]string{"PASSWORD": secretNew})
	w.waitFor("web restarted", isResult(refresh.ActionRestart, "deployment/web"))
	texts = f.waitMessages(2)
	if len(texts) != 2 {
		t.Fatalf("%d messages for two rounds, want 2:\n%s", len(texts), strings.Join(texts, "\n---\n"))
	}
	checkMessage(t, texts[1], []string{"changed secret/db; 1 restart; results: 1 current", "change secret/db -n " + f.ns + ": keys changed: PASSWORD",
		"action restart deployment/web -n " + f.ns, "result restart deployment/web -n " + f.ns + ": current"}, values)
	w.stop()
	if n := w.count(func(e reconcile.Event) bool { return e.Kind == reconcile.EventError }); n != 0 {
		t.Errorf("%d error events (an alert that failed?): %v", n, w.all())
	}
}

// checkMessage checks that text holds every want and none of values.
func checkMessage(t *testing.T, text string, wants, values []string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the message lacks %q:\n%s", want, text)
		}
	}
	for _, v := range values {
		if strings.Contains(text, v) {
			t.Errorf("the message holds the value %q:\n%s", v, text)
		}
	}
}

// The controller in the cluster, its webhook taken from a Secret into
// CMSYNC_ALERT_WEBHOOK (as the chart does): a ConfigMap edit that
// refreshes a Deployment's 2 pods is one Google Chat message from the
// leader, counted in its metrics.
func TestControllerAlerts(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	webhook := f.startReceiver()
	const cmOld, cmNew = "cm-ctl-value-5e1", "cm-ctl-value-5e2"
	f.createConfigMap(configMap("app", map[string]string{"greeting": cmOld}))
	f.createAnnotatedDeployment("web", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app")),
		map[string]string{reconcile.AnnotationWatch: "true"})
	f.waitDeploymentSettled("web")
	if _, err := f.cs.CoreV1().Secrets(f.ctlNS()).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "alert-webhook"},
		StringData: map[string]string{"url": webhook}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the webhook's Secret: %v", err)
	}
	f.deployControllerFrom("controller", func([]string) []string {
		return []string{"controller", "-n", f.ns, "--debounce=1s", "--alert-format=gchat", "--alert-info=in-cluster"}
	}, func(c map[string]any) {
		c["env"] = append(c["env"].([]any), map[string]any{"name": "CMSYNC_ALERT_WEBHOOK",
			"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "alert-webhook", "key": "url"}}})
	})
	ctl := f.leader()
	f.waitControllerEvent(ctl, "ready", func(e reconcile.Event) bool { return e.Kind == reconcile.EventReady })
	f.patchConfigMapData("app", map[string]string{"greeting": cmNew})
	f.waitAnyControllerEvent("web's pods refreshed", func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventResult && e.Action != nil && e.Action.Action == refresh.ActionAnnotate
	})
	texts := f.waitMessages(1)
	if len(texts) != 1 {
		t.Fatalf("%d messages for one round, want 1:\n%s", len(texts), strings.Join(texts, "\n---\n"))
	}
	checkMessage(t, texts[0], []string{"*[in-cluster] kubectl-cmsync: namespace " + f.ns + "; changed configmap/app; 2 annotate; results: 2 current*",
		"change configmap/app -n " + f.ns + ": keys changed: greeting"}, []string{cmOld, cmNew})
	f.checkMetrics(f.leader(), `cmsync_alerts_total{format="gchat",result="sent"} 1`)
	for _, p := range f.controllerPods() {
		if log := f.controllerLog(p.Name); strings.Contains(log, webhook) || strings.Contains(log, "/cgi-bin/rec") {
			t.Errorf("the log of %s names the webhook's URL:\n%s", p.Name, log)
		}
	}
}
