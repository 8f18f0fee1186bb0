//go:build e2e

package e2e

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// The truth matrix: for each way of consuming a ConfigMap or Secret, deploy
// it, check what `kubectl cmsync status` predicts, then change the object,
// bump every pod's annotation (the cheap refresh) and check by exec that the
// kubelet really did what was predicted:
//
//	hot-update        the new content appears (bounded, generous wait)
//	restart-needed    still the old content once the kubelet provably re-synced the pod
//	                  (a "witness" whole-volume mount of the same object shows the new
//	                  content) plus a short settle
//	breaks-on-change  the subPath directory turns empty
//	never-changes     the old content stays
//	missing           what the kubelet does once the object or key appears
type matrixCase struct {
	name string
	// secrets: status needs --secrets to list Secret uses
	secrets bool
	// setup creates the objects and pods and waits until they are ready to inspect
	setup func(f *fx)
	// before: what status must say before the change
	before []want
	// change edits, creates or deletes objects; the harness then bumps every pod
	change func(f *fx)
	// observe checks by exec what the kubelet did
	observe func(f *fx)
	// after: what status must say after the change (optional)
	after []want
	// kubeletAlone: no annotation bump after the change; observe waits for
	// the kubelet's own periodic sync
	kubeletAlone bool
}

const (
	app     = "app"
	witness = "/witness"
)

var dataDirRE = regexp.MustCompile(`^\.\.\d{4}(_\d{2}){5}\.\d+$`)

// withWitness mounts the whole ConfigMap (or Secret, via v) at /witness: once
// its file shows the new content, the kubelet has re-synced the pod.
func withWitness(s corev1.PodSpec, v corev1.Volume) corev1.PodSpec {
	v.Name = "witness"
	s.Volumes = append(s.Volumes, v)
	for i := range s.Containers {
		if s.Containers[i].Name == app {
			s.Containers[i].VolumeMounts = append(s.Containers[i].VolumeMounts, mount("witness", witness))
		}
	}
	return s
}

// resynced waits until the witness file of the pod shows want (the kubelet
// re-synced the pod after the bump), then lets things settle.
func (f *fx) resynced(pod, container, file, want string) {
	f.t.Helper()
	f.waitFile(pod, container, witness+"/"+file, want)
	time.Sleep(settle)
}

func v1Data() map[string]string { return map[string]string{"greeting": "v1"} }

func toV2(f *fx) { f.patchConfigMapData("cfg", map[string]string{"greeting": "v2"}) }

func appPod(name string, s corev1.PodSpec) func(f *fx) {
	return func(f *fx) {
		f.createConfigMap(configMap("cfg", v1Data()))
		f.createPod(pod(name, s))
		f.waitPodReady(name)
	}
}

var (
	blobV1 = []byte{0x00, 0xff, 0x10, 0x80, '\n'}
	blobV2 = []byte{0x01, 0xfe, 0x00, 0x7f}
)

func matrix() []matrixCase {
	yes, no := ptr(true), ptr(false)
	return []matrixCase{
		{
			name:   "volume",
			setup:  appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg"))),
			before: []want{{object: "cfg", pod: "p", container: app, mode: inspect.ModeVolume, volume: "cfg", verdict: inspect.VerdictHotUpdate, optional: no, exists: yes, immutable: no, ctype: inspect.ContainerRegular, workloadKind: "Pod", workloadName: "p"}},
			change: toV2,
			observe: func(f *fx) {
				f.waitFile("p", app, "/etc/cfg/greeting", "v2")
				// the atomic writer's layout: greeting -> ..data/greeting, ..data -> ..<UTC time>.<digits>
				if got := strings.TrimSpace(f.mustExec("p", app, "readlink", "/etc/cfg/greeting")); got != "..data/greeting" {
					f.t.Errorf("readlink /etc/cfg/greeting = %q, want ..data/greeting", got)
				}
				if got := strings.TrimSpace(f.mustExec("p", app, "readlink", "/etc/cfg/..data")); !dataDirRE.MatchString(got) {
					f.t.Errorf("readlink /etc/cfg/..data = %q, want a match of %s", got, dataDirRE)
				}
			},
		},
		{
			// The core timing claim, with nothing but the kubelet: a whole-volume
			// mount turns in-sync within the resync period plus jitter (0-90 s),
			// no annotation bump. Bounded by kubeletRetryWait (150 s).
			name:         "volume-kubelet-alone",
			kubeletAlone: true,
			setup: func(f *fx) {
				appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg")))(f)
				// Right after start the kubelet still syncs the pod for its own
				// reasons (observed: an edit then showed within 0.7 s); let those
				// pass so that the periodic resync is what is seen.
				time.Sleep(20 * time.Second)
			},
			before: []want{{object: "cfg", pod: "p", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate}},
			change: toV2,
			observe: func(f *fx) {
				changed := time.Now()
				f.poll("the kubelet alone to write v2 into /etc/cfg/greeting", kubeletRetryWait, func() (bool, error) {
					s, err := f.readFile("p", app, "/etc/cfg/greeting")
					return err == nil && s == "v2", err
				})
				f.t.Logf("kubelet alone: the volume showed the change %.1f s after the edit (no annotation bump)", time.Since(changed).Seconds())
				if p := f.getPod("p"); p.Annotations[refreshAnnotation] != "" {
					f.t.Errorf("the pod was annotated (%s): this case must see the kubelet alone", p.Annotations[refreshAnnotation])
				}
				if rep, ok := f.status("--verify"); ok {
					f.checkStates(rep, []wantState{{want: want{object: "cfg", pod: "p", container: app, mode: inspect.ModeVolume}, states: []inspect.State{inspect.StateInSync}}})
				}
			},
		},
		{
			name: "items-nested-path",
			setup: appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("cfg", "/etc/cfg"))),
				cmItemsVolume("cfg", "cfg", corev1.KeyToPath{Key: "greeting", Path: "a/b/greeting.txt"}))),
			before: []want{{object: "cfg", container: app, mode: inspect.ModeItems, volume: "cfg", verdict: inspect.VerdictHotUpdate}},
			change: toV2,
			observe: func(f *fx) {
				f.waitFile("p", app, "/etc/cfg/a/b/greeting.txt", "v2")
				// only the item's path is written: a (-> ..data/a), not greeting
				if names := f.listDir("p", app, "/etc/cfg"); !contains(names, "..data") || !contains(names, "a") || contains(names, "greeting") {
					f.t.Errorf("ls -A /etc/cfg = %v, want ..data, a timestamped directory and a", names)
				}
			},
		},
		{
			name: "projected-with-serviceaccount-token",
			setup: appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("proj", "/etc/proj"))),
				corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3600))}},
				}}}})),
			before: []want{{object: "cfg", container: app, mode: inspect.ModeProjected, volume: "proj", verdict: inspect.VerdictHotUpdate, workloadKind: "Pod"}},
			change: toV2,
			observe: func(f *fx) {
				f.waitFile("p", app, "/etc/proj/greeting", "v2")
				if tok, err := f.readFile("p", app, "/etc/proj/token"); err != nil || strings.Count(tok, ".") != 2 {
					f.t.Errorf("/etc/proj/token is not a JWT: %q %v", tok, err)
				}
			},
		},
		{
			name: "subpath-onto-file",
			setup: appPod("p", withWitness(withVolumes(podSpec(withMounts(busybox(app), subPathMount("cfg", "/etc/app/greeting", "greeting"))),
				cmVolume("cfg", "cfg")), cmVolume("", "cfg"))),
			before: []want{
				{object: "cfg", container: app, mode: inspect.ModeSubPath, volume: "cfg", verdict: inspect.VerdictRestartNeeded},
				{object: "cfg", container: app, mode: inspect.ModeVolume, volume: "witness", verdict: inspect.VerdictHotUpdate},
			},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectFile("p", app, "/etc/app/greeting", "v1")
			},
		},
		{
			name: "subpath-onto-directory-breaks",
			setup: func(f *fx) {
				appPod("p", withWitness(withVolumes(podSpec(withMounts(busybox(app), subPathMount("tree", "/etc/conf", "conf"))),
					cmItemsVolume("tree", "cfg", corev1.KeyToPath{Key: "greeting", Path: "conf/greeting"})), cmVolume("", "cfg")))(f)
				if names := f.listDir("p", app, "/etc/conf"); strings.Join(names, " ") != "greeting" {
					f.t.Fatalf("before the change: ls -A /etc/conf = %v, want [greeting]", names)
				}
			},
			before: []want{{object: "cfg", container: app, mode: inspect.ModeSubPath, volume: "tree", verdict: inspect.VerdictBreaksOnChange}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.poll("/etc/conf to turn empty", propagationWait, func() (bool, error) {
					out, _, err := f.execIn("p", app, "ls", "-A", "/etc/conf")
					return err == nil && strings.TrimSpace(out) == "", err
				})
			},
		},
		{
			name: "subpathexpr",
			setup: func(f *fx) {
				f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v1", "spe": "v1"}))
				c := withMounts(busybox(app), corev1.VolumeMount{Name: "cfg", MountPath: "/etc/spe/value", SubPathExpr: "$(POD_NAME)"})
				c = withEnv(c, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
				f.createPod(pod("spe", withWitness(withVolumes(podSpec(c), cmVolume("cfg", "cfg")), cmVolume("", "cfg"))))
				f.waitPodReady("spe")
				f.expectFile("spe", app, "/etc/spe/value", "v1")
			},
			before: []want{{object: "cfg", container: app, mode: inspect.ModeSubPathExpr, volume: "cfg", verdict: inspect.VerdictRestartNeeded}},
			change: func(f *fx) { f.patchConfigMapData("cfg", map[string]string{"greeting": "v2", "spe": "v2"}) },
			observe: func(f *fx) {
				f.resynced("spe", app, "spe", "v2")
				f.expectFile("spe", app, "/etc/spe/value", "v1")
			},
		},
		{
			name: "env-valuefrom",
			setup: appPod("p", withWitness(podSpec(withEnv(busybox(app), cmEnv("GREETING", "cfg", "greeting", nil))),
				cmVolume("", "cfg"))),
			before: []want{{object: "cfg", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictRestartNeeded, optional: no}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectEnv("p", app, "GREETING", "v1")
			},
		},
		{
			name: "envfrom-with-prefix",
			setup: func(f *fx) {
				f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v1", "with-dash": "d1", "with.dot": "x1"}))
				c := busybox(app)
				c.EnvFrom = []corev1.EnvFromSource{cmEnvFrom("cfg", "CFG_")}
				f.createPod(pod("p", withWitness(podSpec(c), cmVolume("", "cfg"))))
				f.waitPodReady("p")
				f.expectEnv("p", app, "CFG_greeting", "v1")
				f.expectEnv("p", app, "CFG_with-dash", "d1")
				f.expectEnv("p", app, "CFG_with.dot", "x1")
			},
			before: []want{{object: "cfg", container: app, mode: inspect.ModeEnvFrom, verdict: inspect.VerdictRestartNeeded}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectEnv("p", app, "CFG_greeting", "v1")
			},
		},
		{
			name: "sidecar-init-container-env",
			setup: func(f *fx) {
				f.createConfigMap(configMap("cfg", v1Data()))
				sc := withMounts(withEnv(busybox("sidecar"), cmEnv("GREETING", "cfg", "greeting", nil)), mount("witness", witness))
				sc.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
				s := withVolumes(podSpec(busybox(app)), cmVolume("witness", "cfg"))
				s.InitContainers = []corev1.Container{sc}
				f.createPod(pod("p", s))
				f.waitPodReady("p")
			},
			before: []want{{object: "cfg", container: "sidecar", mode: inspect.ModeEnv, ctype: inspect.ContainerSidecar, verdict: inspect.VerdictRestartNeeded}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", "sidecar", "greeting", "v2")
				f.expectEnv("p", "sidecar", "GREETING", "v1")
			},
		},
		{
			name: "completed-init-container-env",
			setup: func(f *fx) {
				f.createConfigMap(configMap("cfg", v1Data()))
				ic := withEnv(busybox("init"), cmEnv("GREETING", "cfg", "greeting", nil))
				ic.Command = []string{"true"}
				s := withWitness(podSpec(busybox(app)), cmVolume("", "cfg"))
				s.InitContainers = []corev1.Container{ic}
				f.createPod(pod("p", s))
				f.waitPodReady("p")
			},
			before: []want{{object: "cfg", container: "init", mode: inspect.ModeEnv, ctype: inspect.ContainerInit, verdict: inspect.VerdictRestartNeeded}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				// a completed init container is not run again: nothing to observe in it
				p := f.getPod("p")
				if len(p.Status.InitContainerStatuses) != 1 || p.Status.InitContainerStatuses[0].State.Terminated == nil ||
					p.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 || p.Status.InitContainerStatuses[0].RestartCount != 0 {
					f.t.Errorf("init container status: %+v, want terminated with 0 once", p.Status.InitContainerStatuses)
				}
			},
		},
		{
			name: "optional-missing-configmap-created-later",
			setup: func(f *fx) {
				f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox(app), mount("late", "/etc/late"))), optionalCMVolume("late", "late"))))
				f.waitPodReady("p")
				// the atomic writer still writes the empty payload: ..data -> an empty ..<timestamp> directory
				if names := f.listDir("p", app, "/etc/late"); len(visible(names)) != 0 || !contains(names, "..data") {
					f.t.Errorf("ls -A /etc/late = %v, want only ..data and its timestamped directory", names)
				}
			},
			before: []want{{object: "late", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictMissing, optional: yes, exists: no}},
			change: func(f *fx) { f.createConfigMap(configMap("late", v1Data())) },
			observe: func(f *fx) {
				f.waitFile("p", app, "/etc/late/greeting", "v1")
			},
			after: []want{{object: "late", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, exists: yes}},
		},
		{
			name: "required-missing-configmap",
			setup: func(f *fx) {
				f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox(app), mount("later", "/etc/later"))), cmVolume("later", "later"))))
				f.waitFailedMount("p")
			},
			before: []want{{object: "later", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictMissing, optional: no, exists: no}},
			change: func(f *fx) { f.createConfigMap(configMap("later", v1Data())) },
			observe: func(f *fx) {
				// the kubelet retries the mount with back-off (about 1 to 25 s); a bump does not speed it up
				f.poll("pod p Ready once its ConfigMap exists", kubeletRetryWait, func() (bool, error) {
					p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, "p", metav1.GetOptions{})
					return err == nil && podReady(p), err
				})
				f.expectFile("p", app, "/etc/later/greeting", "v1")
			},
			after: []want{{object: "later", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, exists: yes}},
		},
		{
			name: "required-missing-key-env",
			setup: func(f *fx) {
				f.createConfigMap(configMap("cfg", v1Data()))
				f.createPod(pod("p", podSpec(withEnv(busybox(app), cmEnv("PORT", "cfg", "port", nil)))))
				f.waitContainerWaiting("p", app, "CreateContainerConfigError")
			},
			before: []want{{object: "cfg", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictMissing, optional: no, exists: yes}},
			change: func(f *fx) { f.patchConfigMapData("cfg", map[string]string{"port": "8080"}) },
			observe: func(f *fx) {
				f.poll("pod p Ready once the key exists", kubeletRetryWait, func() (bool, error) {
					p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, "p", metav1.GetOptions{})
					return err == nil && podReady(p), err
				})
				f.expectEnv("p", app, "PORT", "8080")
			},
			after: []want{{object: "cfg", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictRestartNeeded}},
		},
		{
			name: "optional-missing-key-env",
			setup: appPod("p", withWitness(podSpec(withEnv(busybox(app), cmEnv("OPT", "cfg", "opt", ptr(true)))),
				cmVolume("", "cfg"))),
			before: []want{{object: "cfg", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictMissing, optional: yes, exists: yes}},
			change: func(f *fx) { f.patchConfigMapData("cfg", map[string]string{"opt": "on", "greeting": "v2"}) },
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectEnvUnset("p", app, "OPT")
			},
			after: []want{{object: "cfg", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictRestartNeeded}},
		},
		{
			name:   "immutable",
			setup:  immutableSetup,
			before: []want{{object: "frozen", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictNeverChanges, immutable: yes, exists: yes}},
			change: func(f *fx) {
				_, err := f.cs.CoreV1().ConfigMaps(f.ns).Patch(f.ctx, "frozen", "application/merge-patch+json", []byte(`{"data":{"greeting":"v2"}}`), metav1.PatchOptions{})
				if !apierrors.IsInvalid(err) {
					f.t.Errorf("editing an immutable ConfigMap: err %v, want Invalid", err)
				}
				toV2(f)
			},
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectFile("p", app, "/etc/frozen/greeting", "v1")
			},
		},
		{
			name:   "immutable-deleted-and-recreated",
			setup:  immutableSetup,
			before: []want{{object: "frozen", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictNeverChanges, immutable: yes}},
			change: func(f *fx) {
				if err := f.cs.CoreV1().ConfigMaps(f.ns).Delete(f.ctx, "frozen", metav1.DeleteOptions{}); err != nil {
					f.t.Fatalf("deleting ConfigMap frozen: %v", err)
				}
				cm := configMap("frozen", map[string]string{"greeting": "v2"})
				cm.Immutable = ptr(true)
				f.createConfigMap(cm)
				toV2(f)
			},
			observe: func(f *fx) {
				// the kubelet keeps serving its old copy of an immutable ConfigMap to running pods
				f.resynced("p", app, "greeting", "v2")
				f.expectFile("p", app, "/etc/frozen/greeting", "v1")
				// ... and even to a new pod on the node while another pod there still uses it
				f.createPod(pod("p2", withVolumes(podSpec(withMounts(busybox(app), mount("frozen", "/etc/frozen"))), cmVolume("frozen", "frozen"))))
				f.waitPodReady("p2")
				f.expectFile("p2", app, "/etc/frozen/greeting", "v1")
			},
			after: []want{
				{object: "frozen", pod: "p", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictNeverChanges, immutable: yes, exists: yes},
				{object: "frozen", pod: "p2", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictNeverChanges, immutable: yes, exists: yes},
			},
		},
		{
			name: "binarydata-volume",
			setup: func(f *fx) {
				cm := configMap("bin", map[string]string{"text": "t1"})
				cm.BinaryData = map[string][]byte{"blob.bin": blobV1}
				f.createConfigMap(cm)
				f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox(app), mount("bin", "/etc/bin"))), cmVolume("bin", "bin"))))
				f.waitPodReady("p")
				f.expectFile("p", app, "/etc/bin/blob.bin", string(blobV1))
				f.expectFile("p", app, "/etc/bin/text", "t1")
			},
			before: []want{{object: "bin", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate}},
			change: func(f *fx) {
				f.mergePatchConfigMap("bin", map[string]any{"binaryData": map[string]string{"blob.bin": base64.StdEncoding.EncodeToString(blobV2)}})
			},
			observe: func(f *fx) { f.waitFile("p", app, "/etc/bin/blob.bin", string(blobV2)) },
		},
		{
			name: "binarydata-envfrom",
			setup: func(f *fx) {
				cm := configMap("bin", map[string]string{"text": "t1", "9lives": "n1", "with-dash": "d1", "with.dot": "x1"})
				cm.BinaryData = map[string][]byte{"blob": blobV1}
				f.createConfigMap(cm)
				c := busybox(app)
				c.EnvFrom = []corev1.EnvFromSource{cmEnvFrom("bin", "")}
				f.createPod(pod("p", withWitness(podSpec(c), cmVolume("", "bin"))))
				f.waitPodReady("p")
				// the v1.30 kubelet passes every data key, even names that are no C identifiers,
				// and never binaryData
				f.expectEnv("p", app, "text", "t1")
				f.expectEnv("p", app, "9lives", "n1")
				f.expectEnv("p", app, "with-dash", "d1")
				f.expectEnv("p", app, "with.dot", "x1")
				f.expectEnvUnset("p", app, "blob")
			},
			before: []want{{object: "bin", container: app, mode: inspect.ModeEnvFrom, verdict: inspect.VerdictRestartNeeded}},
			change: func(f *fx) { f.patchConfigMapData("bin", map[string]string{"text": "t2"}) },
			observe: func(f *fx) {
				f.resynced("p", app, "text", "t2")
				f.expectEnv("p", app, "text", "t1")
				f.expectEnvUnset("p", app, "blob")
			},
		},
		{
			name:    "secret-volume",
			secrets: true,
			setup: func(f *fx) {
				f.createSecret(secret("creds", map[string]string{"password": "s1"}))
				f.createPod(pod("p", withVolumes(podSpec(withMounts(busybox(app), mount("creds", "/etc/creds"))), secretVolume("creds", "creds"))))
				f.waitPodReady("p")
			},
			before:  []want{{kind: inspect.KindSecret, object: "creds", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate}},
			change:  func(f *fx) { f.patchSecretData("creds", map[string]string{"password": "s2"}) },
			observe: func(f *fx) { f.waitFile("p", app, "/etc/creds/password", "s2") },
		},
		{
			name:    "secret-env",
			secrets: true,
			setup: func(f *fx) {
				f.createSecret(secret("creds", map[string]string{"password": "s1"}))
				f.createPod(pod("p", withWitness(podSpec(withEnv(busybox(app), secretEnv("PASSWORD", "creds", "password"))), secretVolume("", "creds"))))
				f.waitPodReady("p")
			},
			before: []want{{kind: inspect.KindSecret, object: "creds", container: app, mode: inspect.ModeEnv, verdict: inspect.VerdictRestartNeeded}},
			change: func(f *fx) { f.patchSecretData("creds", map[string]string{"password": "s2"}) },
			observe: func(f *fx) {
				f.resynced("p", app, "password", "s2")
				f.expectEnv("p", app, "PASSWORD", "s1")
			},
		},
		{
			name: "two-volumes-of-one-configmap",
			setup: appPod("p", withVolumes(podSpec(withMounts(busybox(app), mount("whole", "/a"), mount("picked", "/b"))),
				cmVolume("whole", "cfg"), cmItemsVolume("picked", "cfg", corev1.KeyToPath{Key: "greeting", Path: "sub/g.txt"}))),
			before: []want{
				{object: "cfg", container: app, mode: inspect.ModeVolume, volume: "whole", verdict: inspect.VerdictHotUpdate},
				{object: "cfg", container: app, mode: inspect.ModeItems, volume: "picked", verdict: inspect.VerdictHotUpdate},
			},
			change: toV2,
			observe: func(f *fx) {
				f.waitFile("p", app, "/a/greeting", "v2")
				f.waitFile("p", app, "/b/sub/g.txt", "v2")
			},
		},
		{
			name:  "shared-by-deployment-statefulset-daemonset-pod",
			setup: sharedWorkloadsSetup,
			before: []want{
				{object: "shared", pod: "web-*", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "Deployment", workloadName: "web"},
				{object: "shared", pod: "db-*", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "StatefulSet", workloadName: "db"},
				{object: "shared", pod: "agent-*", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "DaemonSet", workloadName: "agent"},
				{object: "shared", pod: "solo", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "Pod", workloadName: "solo"},
			},
			change:  func(f *fx) { f.patchConfigMapData("shared", map[string]string{"greeting": "v2"}) },
			observe: func(f *fx) { f.eachPodFile("/etc/shared/greeting", "v2") },
		},
		{
			name:  "job-and-cronjob-owners",
			setup: jobsSetup,
			before: []want{
				{object: "cfg", pod: "batch-*", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "Job", workloadName: "batch"},
				{object: "cfg", pod: "nightly-manual-*", container: app, mode: inspect.ModeVolume, verdict: inspect.VerdictHotUpdate, workloadKind: "CronJob", workloadName: "nightly"},
			},
			change:  toV2,
			observe: func(f *fx) { f.eachPodFile("/etc/cfg/greeting", "v2") },
		},
		{
			name: "unmounted-volume",
			setup: appPod("p", withWitness(withVolumes(podSpec(busybox(app)), cmVolume("spare", "cfg")),
				cmVolume("", "cfg"))),
			before: []want{{object: "cfg", mode: inspect.ModeUnmounted, volume: "spare", verdict: inspect.VerdictNotMounted}},
			change: toV2,
			observe: func(f *fx) {
				// nothing mounts it: nothing to observe but the pod's re-sync
				f.resynced("p", app, "greeting", "v2")
			},
		},
		{
			name: "ephemeral-container-env",
			setup: func(f *fx) {
				appPod("p", withWitness(podSpec(busybox(app)), cmVolume("", "cfg")))(f)
				p := f.getPod("p")
				ec := withEnv(busybox("debugger"), cmEnv("GREETING", "cfg", "greeting", nil))
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon(ec)})
				if _, err := f.cs.CoreV1().Pods(f.ns).UpdateEphemeralContainers(f.ctx, "p", p, metav1.UpdateOptions{}); err != nil {
					f.t.Fatalf("adding an ephemeral container: %v", err)
				}
				f.poll("ephemeral container running", podReadyTimeout, func() (bool, error) {
					p, err := f.cs.CoreV1().Pods(f.ns).Get(f.ctx, "p", metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					for _, s := range p.Status.EphemeralContainerStatuses {
						if s.Name == "debugger" && s.State.Running != nil {
							return true, nil
						}
					}
					return false, nil
				})
			},
			before: []want{{object: "cfg", container: "debugger", mode: inspect.ModeEnv, ctype: inspect.ContainerEphemeral, verdict: inspect.VerdictRestartNeeded}},
			change: toV2,
			observe: func(f *fx) {
				f.resynced("p", app, "greeting", "v2")
				f.expectEnv("p", "debugger", "GREETING", "v1")
			},
		},
	}
}

// visible drops the atomic writer's own names (..data, ..<timestamp>, ..data_tmp).
func visible(names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, "..") {
			out = append(out, n)
		}
	}
	return out
}

func immutableSetup(f *fx) {
	frozen := configMap("frozen", v1Data())
	frozen.Immutable = ptr(true)
	f.createConfigMap(frozen)
	appPod("p", withWitness(withVolumes(podSpec(withMounts(busybox(app), mount("frozen", "/etc/frozen"))), cmVolume("frozen", "frozen")),
		cmVolume("", "cfg")))(f)
}

// eachPodFile waits until the file shows want in the app container of every pod of the namespace.
func (f *fx) eachPodFile(path, want string) {
	f.t.Helper()
	pods, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatalf("listing pods: %v", err)
	}
	if len(pods.Items) == 0 {
		f.t.Fatalf("no pods in %s", f.ns)
	}
	for _, p := range pods.Items {
		f.waitFile(p.Name, app, path, want)
	}
}

func sharedWorkloadsSetup(f *fx) {
	f.createConfigMap(configMap("shared", v1Data()))
	spec := withVolumes(podSpec(withMounts(busybox(app), mount("shared", "/etc/shared"))), cmVolume("shared", "shared"))
	tmpl := func(name string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec}
	}
	sel := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	}
	apps := f.cs.AppsV1()
	if _, err := apps.Deployments(f.ns).Create(f.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: sel("web"), Template: tmpl("web")}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating Deployment: %v", err)
	}
	if _, err := apps.StatefulSets(f.ns).Create(f.ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), ServiceName: "db", Selector: sel("db"), Template: tmpl("db")}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating StatefulSet: %v", err)
	}
	if _, err := apps.DaemonSets(f.ns).Create(f.ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: sel("agent"), Template: tmpl("agent")}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating DaemonSet: %v", err)
	}
	f.createPod(pod("solo", spec))
	f.waitPodsReady(4)
}

func jobsSetup(f *fx) {
	f.createConfigMap(configMap("cfg", v1Data()))
	spec := withVolumes(podSpec(withMounts(busybox(app), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg"))
	spec.RestartPolicy = corev1.RestartPolicyNever
	jobSpec := batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: spec}}
	batch := f.cs.BatchV1()
	if _, err := batch.Jobs(f.ns).Create(f.ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Spec: jobSpec}, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating Job: %v", err)
	}
	// a suspended CronJob that never fires by itself, and a Job it owns (as `kubectl create job --from=cronjob/...` makes)
	cj, err := batch.CronJobs(f.ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: ptr(true), JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec}}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("creating CronJob: %v", err)
	}
	owned := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-manual", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr(true)}}}, Spec: jobSpec}
	if _, err := batch.Jobs(f.ns).Create(f.ctx, owned, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating Job owned by the CronJob: %v", err)
	}
	f.waitPodsReady(2)
}

func TestMatrix(t *testing.T) {
	t.Parallel()
	for _, c := range matrix() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFx(t)
			var args []string
			if c.secrets {
				args = append(args, "--secrets")
			}
			c.setup(f)
			if rep, ok := f.status(args...); ok {
				f.checkReport(rep, c.before)
			}
			c.change(f)
			if !c.kubeletAlone {
				f.bumpPods()
			}
			c.observe(f)
			if len(c.after) > 0 {
				if rep, ok := f.status(args...); ok {
					f.checkReport(rep, c.after)
				}
			}
		})
	}
}
