package inspect

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// useID names one use of a fixture pod: object, container and where it is
// read (mount path, $VARIABLE, envFrom, or the unmounted volume).
func useID(it Use) string {
	where := ""
	switch {
	case it.Mode == ModeUnmounted:
		where = "unmounted:" + it.Volume.Name
	case it.Mode == ModeEnv:
		where = "$" + it.EnvName
	case it.Mode == ModeEnvFrom:
		where = "envFrom"
	case it.Volume != nil:
		where = it.Volume.MountPath
	}
	return fmt.Sprintf("%s/%s %s %s", strings.ToLower(it.Object.Kind), it.Object.Name, it.ContainerName(), where)
}

// predictedUses runs Predict on every use of the namespace shop fixture
// pods, with the kubelet configuration of two nodes known (--kubelet-config).
func predictedUses(t *testing.T) map[string]map[string]Use {
	t.Helper()
	snap := statusSnapshot(t)
	snap.KubeletConfigs = map[string]KubeletTiming{
		"node-kc":       {SyncFrequency: 2 * time.Minute, Strategy: StrategyCache},
		"node-kc-nottl": {SyncFrequency: 30 * time.Second, Strategy: StrategyCache},
	}
	out := map[string]map[string]Use{}
	for i := range snap.Pods {
		pod := &snap.Pods[i]
		if pod.Namespace != "shop" {
			continue
		}
		out[pod.Name] = map[string]Use{}
		for _, it := range Uses(pod) {
			Predict(&it, pod, snap.Object(it.Key()), snap)
			id := useID(it)
			if _, dup := out[pod.Name][id]; dup {
				t.Fatalf("%s: two uses named %q", pod.Name, id)
			}
			out[pod.Name][id] = it
		}
	}
	return out
}

// TestPredict covers every verdict on the fixture pods. delay is
// "MIN-MAX basis" for hot-updating uses and "" otherwise; reason is a part
// of the reason that must be there.
func TestPredict(t *testing.T) {
	uses := predictedUses(t)
	const (
		hot        = VerdictHotUpdate
		restart    = VerdictRestartNeeded
		breaks     = VerdictBreaksOnChange
		never      = VerdictNeverChanges
		missing    = VerdictMissing
		notMounted = VerdictNotMounted
	)
	defaultDelay := "0-90s default"
	cases := []struct {
		pod, use string
		verdict  Verdict
		optional bool
		delay    string
		reason   string
		keys     string // the keys after Predict, when they matter
	}{
		// hot-update, and the delay basis.
		{"volume-pod", "configmap/app-config app /etc/app", hot, false, defaultDelay,
			"mounted volume: the kubelet rewrites it within 0-90s of a change (kubelet defaults assumed: pod resync 60s + 50% jitter, Watch strategy)", ""},
		{"volume-pod", "configmap/kube-root-ca.crt app /var/run/secrets/kubernetes.io/serviceaccount", hot, false, defaultDelay, "mounted volume", "ca.crt"},
		{"items-pod", "configmap/nested-config app /etc/nested", hot, false, defaultDelay, "mounted volume", "a.conf,b.conf"},
		{"projected-pod", "configmap/app-config app /etc/bundle", hot, false, defaultDelay, "mounted volume", "app.yaml"},
		{"projected-pod", "secret/db-creds app /etc/bundle", hot, false, defaultDelay, "mounted volume", "password"},
		{"missing-pod", "configmap/partial app /etc/binary", hot, false, defaultDelay, "mounted volume", "blob"}, // volumes write binaryData
		{"unscheduled-pod", "configmap/app-config app /etc/app", hot, false, defaultDelay, "kubelet defaults assumed", ""},
		{"ttl-pod", "configmap/app-config app /etc/app", hot, false, "0-120s node-ttl",
			"within 0-120s of a change (pod resync 60-90s, plus the node's cache TTL if the kubelet uses the Cache strategy)", ""},
		{"kc-pod", "configmap/app-config app /etc/app", hot, false, "0-195s kubelet-config", // 2m sync + 50% + 15s TTL
			"within 0-195s of a change (the node's kubelet configuration)", ""},
		{"kc-nottl-pod", "configmap/app-config app /etc/app", hot, false, "0-105s kubelet-config", // 30s sync + 50% + default TTL 1m
			"within 0-105s of a change", ""},
		{"kinds-pod", "configmap/app-config sidecar /etc/app", hot, false, defaultDelay, "mounted volume", ""},
		{"kinds-pod", "configmap/app-config main /etc/app", hot, false, defaultDelay, "mounted volume", ""},
		{"secret-pod", "secret/db-creds app /etc/creds", hot, false, defaultDelay, "mounted volume", "user"},

		// restart-needed: env, envFrom, subPath onto a file.
		{"env-pod", "configmap/app-config app $LOG_LEVEL", restart, false, "",
			"environment variable LOG_LEVEL is read when the container starts; it never updates until the container restarts", "log-level"},
		{"env-pod", "secret/db-creds app $DB_PASSWORD", restart, false, "", "environment variable DB_PASSWORD", "password"},
		{"env-pod", "configmap/app-config app envFrom", restart, false, "",
			"environment variables are read when the container starts; they never update until the container restarts", ""},
		{"env-pod", "secret/db-creds app envFrom", restart, false, "", "environment variables are read", ""},
		{"secret-pod", "secret/db-creds app envFrom", restart, false, "", "environment variables are read", ""},
		{"kinds-pod", "configmap/app-config init envFrom", restart, false, "", "read by init container init, which runs once when the pod starts", ""},
		{"kinds-pod", "configmap/app-config debugger $LOG_LEVEL", restart, false, "", "environment variable LOG_LEVEL", ""},
		{"subpath-pod", "configmap/app-config app /etc/app.yaml", restart, false, "",
			`subPath "app.yaml" is a bind mount of one file made at container start; it keeps the old content until the container restarts`, "app.yaml"},
		{"subpath-pod", "configmap/nested-config app /etc/a.conf", restart, false, "", // a nested path of an items volume
			`subPath "conf.d/a.conf" is a bind mount of one file`, "a.conf"},
		{"subpath-pod", "configmap/app-config app /etc/empty", restart, false, "",
			`subPath "not-there" is not in the payload; the kubelet mounts an empty directory there and it never updates`, ""},
		{"subpathexpr-pod", "configmap/app-config app /etc/file-env", restart, false, "", `subPath "app.yaml" is a bind mount of one file`, "app.yaml"},   // $(FILE) from a value
		{"subpathexpr-pod", "configmap/app-config app /etc/file-field", restart, false, "", `subPath "app.yaml" is a bind mount of one file`, "app.yaml"}, // $(VARIANT) from a fieldRef
		{"subpathexpr-pod", "configmap/app-config app /etc/unresolved", restart, false, "", `subPath "info" is not in the payload`, ""},                   // $(FROM_CM) from a ConfigMap: log-level
		{"subpathexpr-pod", "configmap/app-config app /etc/empty-var", restart, false, "", `subPathExpr "$(EMPTY)" cannot be resolved`, ""},               // the kubelet refuses an empty value
		{"subpathexpr-pod", "configmap/app-config app $FROM_CM", restart, false, "", "environment variable FROM_CM", ""},
		{"projected-subpath-pod", "configmap/app-config app /etc/app.yaml", restart, false, "", `subPath "config/app.yaml" is a bind mount of one file`, "app.yaml"},
		{"projected-subpath-pod", "configmap/app-config app /etc/nothing", restart, false, "", `subPath "nothing-here" is not in the payload`, ""},
		{"projected-subpath-pod", "secret/db-creds app /etc/nothing", restart, false, "", `subPath "nothing-here" is not in the payload`, ""},

		// breaks-on-change: subPath onto a directory of the volume.
		{"subpath-pod", "configmap/nested-config app /etc/conf.d", breaks, false, "",
			`subPath "conf.d" is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts`, "a.conf"},
		{"subpathexpr-pod", "configmap/nested-config app /etc/dir-env", breaks, false, "", `subPath "conf.d" is a directory of the volume`, "a.conf"},   // $(DIR) from a value
		{"subpathexpr-pod", "configmap/nested-config app /etc/dir-field", breaks, false, "", `subPath "conf.d" is a directory of the volume`, "a.conf"}, // $(CONFDIR) from a fieldRef
		{"projected-subpath-pod", "secret/db-creds app /etc/secrets", breaks, false, "", `subPath "secrets" is a directory of the volume`, "password"},

		// never-changes: immutable, whatever the mode.
		{"frozen-pod", "configmap/frozen app /etc/frozen", never, false, "",
			"immutable configmap: it never changes, and with the Watch strategy assumed (the kubelet default; --kubelet-config reads the node's) a deleted and re-created one is not picked up by running pods", ""},
		{"frozen-pod", "configmap/frozen app /etc/k", never, false, "", "immutable configmap", ""},
		{"frozen-pod", "configmap/frozen app $K", never, false, "", "immutable configmap", ""},

		// missing object: required or optional; env and volume reasons.
		{"missing-pod", "configmap/ghost-config app /etc/ghost", missing, false, "",
			`ConfigMap "ghost-config" does not exist; required, so the container cannot start until it is created`, ""},
		{"missing-pod", "configmap/maybe-config app /etc/maybe", missing, true, "",
			`ConfigMap "maybe-config" does not exist; optional, so the volume is empty until it appears`, ""},
		{"missing-pod", "configmap/maybe-config app /etc/maybe.yaml", missing, true, "",
			`ConfigMap "maybe-config" does not exist; optional, so the container starts with an empty directory at the subPath and keeps it until restarted, even after it appears`, ""},
		{"env-pod", "secret/ghost-secret app $GHOST_TOKEN", missing, true, "",
			`Secret "ghost-secret" does not exist; optional, so the container runs without it and stays without it until restarted`, ""},
		{"env-pod", "configmap/ghost-config app envFrom", missing, true, "", `ConfigMap "ghost-config" does not exist; optional, so the container runs without it`, ""},

		// missing key: required or optional; env reads data only.
		{"missing-pod", "configmap/partial app /etc/partial", missing, false, "",
			`key "absent" is not in ConfigMap "partial"; required, so the container cannot start until it is added`, ""},
		{"missing-pod", "configmap/partial app /etc/partial-opt", missing, true, "",
			`key "absent" is not in ConfigMap "partial"; optional, so it is skipped`, ""},
		{"env-pod", "configmap/partial app $REQ_ABSENT", missing, false, "",
			`key "absent" is not in ConfigMap "partial"; required, so the container cannot start until it is added`, ""},
		{"env-pod", "configmap/partial app $OPT_ABSENT", missing, true, "",
			`key "absent" is not in ConfigMap "partial"; optional, so the variable is unset and stays unset until the container restarts`, ""},
		{"env-pod", "configmap/app-config app $LOGO", missing, false, "",
			`key "logo.png" is not in the data of ConfigMap "app-config" (it is in binaryData, which environment variables cannot read); required`, ""},
		{"env-pod", "configmap/app-config app $OPT_LOGO", missing, true, "", `(it is in binaryData, which environment variables cannot read); optional`, ""},

		// not-mounted: a volume no container mounts, or a subPath that
		// shows another source of a projected volume.
		{"unmounted-pod", "configmap/app-config  unmounted:cfg", notMounted, false, "",
			`volume "cfg" is declared but no container mounts it; the kubelet never writes it`, ""},
		{"unmounted-pod", "configmap/nested-config  unmounted:nested", notMounted, false, "", `volume "nested" is declared but no container mounts it`, ""},
		{"secret-pod", "configmap/app-config  unmounted:spare", notMounted, false, "", `volume "spare" is declared`, ""},
		{"secret-pod", "secret/db-creds  unmounted:spare", notMounted, true, "", `volume "spare" is declared`, ""},
		{"projected-subpath-pod", "secret/db-creds app /etc/app.yaml", notMounted, false, "",
			`subPath "config/app.yaml" shows another source of projected volume "bundle" (ConfigMap "app-config"): this container does not see this secret through this mount`, ""},
		{"projected-subpath-pod", "configmap/app-config app /etc/secrets", notMounted, false, "", `subPath "secrets" shows another source`, ""},
		{"projected-subpath-pod", "configmap/app-config app /etc/token", notMounted, false, "", `subPath "token" shows another source`, ""}, // the serviceAccountToken
		{"projected-subpath-pod", "secret/db-creds app /etc/token", notMounted, false, "", `subPath "token" shows another source`, ""},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.pod+" "+tc.use, func(t *testing.T) {
			it, ok := uses[tc.pod][tc.use]
			if !ok {
				t.Fatalf("no use %q; the pod has %q", tc.use, slices.Collect(maps.Keys(uses[tc.pod])))
			}
			covered[tc.pod+" "+tc.use] = true
			if it.Verdict != tc.verdict || it.Optional != tc.optional {
				t.Errorf("verdict %s, optional %v; want %s, %v (reason: %s)", it.Verdict, it.Optional, tc.verdict, tc.optional, it.Reason)
			}
			delay := ""
			if it.Delay != nil {
				delay = FormatDelay(it.Delay) + " " + string(it.Delay.Basis)
			}
			if delay != tc.delay {
				t.Errorf("delay %q, want %q", delay, tc.delay)
			}
			if !strings.Contains(it.Reason, tc.reason) {
				t.Errorf("reason %q\ndoes not contain %q", it.Reason, tc.reason)
			}
			if tc.keys != "" && strings.Join(it.Keys, ",") != tc.keys {
				t.Errorf("keys %q, want %s", it.Keys, tc.keys)
			}
			if it.Verdict != VerdictHotUpdate && it.Delay != nil {
				t.Errorf("a delay on a use that does not hot-update: %+v", it.Delay)
			}
		})
	}
	// Every use of every fixture pod has a case.
	for pod, byID := range uses {
		for id := range byID {
			if !covered[pod+" "+id] {
				t.Errorf("no case for %s %q (%s: %s)", pod, id, byID[id].Verdict, byID[id].Reason)
			}
		}
	}
}

// TestPredictObjectFields: Predict copies the object's state into the row.
func TestPredictObjectFields(t *testing.T) {
	uses := predictedUses(t)
	it := uses["volume-pod"]["configmap/app-config app /etc/app"]
	if !it.Object.Exists || it.Object.Immutable || it.Object.LastChange == nil ||
		!it.Object.LastChange.Time.Equal(time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)) || it.Object.LastChange.Location() != time.UTC {
		t.Errorf("object = %+v", it.Object)
	}
	f := uses["frozen-pod"]["configmap/frozen app /etc/frozen"]
	if !f.Object.Exists || !f.Object.Immutable {
		t.Errorf("frozen object = %+v", f.Object)
	}
	g := uses["missing-pod"]["configmap/ghost-config app /etc/ghost"]
	if g.Object.Exists || g.Object.LastChange != nil {
		t.Errorf("missing object = %+v", g.Object)
	}
}

// TestExpandSubPathExprFromPod: $(VAR) from literal values, the downward
// API fields known from the pod object, configMapKeyRef and envFrom from the
// snapshot; never from an unread Secret. One expander for predict and
// compare ("$$" is a literal "$").
func TestExpandSubPathExprFromPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u-1",
			Labels: map[string]string{"tier": "front"}, Annotations: map[string]string{"conf": "x.yaml"}},
		Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: "sa",
			Containers: []corev1.Container{{Name: "app",
				EnvFrom: []corev1.EnvFromSource{{Prefix: "F_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
				Env: []corev1.EnvVar{
					{Name: "LIT", Value: "lit"},
					{Name: "EMPTY"},
					{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "TIER", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
					{Name: "CONF", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['conf']"}}},
					{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"}}},
					{Name: "SEC", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
					{Name: "REF", Value: "$(LIT)-$(NOPE)-$$"},
				}}},
			InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "ONLY_INIT", Value: "i"}}}},
		},
	}
	snap := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "shop", "cm"}: {
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cm"}, Data: map[string]string{"k": "from-cm"}}}}
	cases := []struct {
		expr, container, want string
		ok                    bool
	}{
		{"plain", "app", "plain", true},
		{"$(LIT)/x", "app", "lit/x", true},
		{"$$(LIT)", "app", "$(LIT)", true},
		{"$(NS)/$(NAME)", "app", "shop/web-0", true},
		{"$(NODE)-$(TIER)", "app", "node-a-front", true},
		{"$(CONF)", "app", "x.yaml", true},
		{"$(ONLY_INIT)", "init", "i", true},
		{"$(CM)", "app", "from-cm", true},        // configMapKeyRef, from the snapshot
		{"$(F_k)", "app", "from-cm", true},       // envFrom with its prefix
		{"$(REF)", "app", "lit-$(NOPE)-$", true}, // as the kubelet expands env values
		{"$(ONLY_INIT)", "app", "", false},       // another container's variable
		{"$(IP)", "app", "", false},              // not known until the pod runs
		{"$(SEC)", "app", "", false},             // Secrets were not read
		{"$(EMPTY)", "app", "", false},           // the kubelet refuses empty values
		{"$(UNDEFINED)", "app", "", false},
		{"$(LIT", "app", "$(LIT", true},
	}
	for _, tc := range cases {
		got, err := ExpandSubPathExpr(tc.expr, specEnv(pod, tc.container, snap.Object))
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ExpandSubPathExpr(%q, %s) = %q, %v; want %q, %v", tc.expr, tc.container, got, err, tc.want, tc.ok)
		}
	}
}

// TestPredictSubPathAgreesWithCompare: predict and compare normalise a
// subPath and expand a subPathExpr the same way (one cleanSubPath, one
// expander), and predict knows every kind of projected source.
func TestPredictSubPathAgreesWithCompare(t *testing.T) {
	cmVol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
		Items:                []corev1.KeyToPath{{Key: "app.yaml", Path: "conf/app.yaml"}}}}}
	projVol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{PodCertificate: &corev1.PodCertificateProjection{CredentialBundlePath: "creds.pem"}},
	}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"app.yaml": "a", "dir": "$"}}
	cases := []struct {
		name  string
		vol   corev1.Volume
		mount corev1.VolumeMount
		env   []corev1.EnvVar
		want  Verdict
		text  string
	}{
		{"doubled slash", cmVol, corev1.VolumeMount{Name: "v", MountPath: "/etc/app.yaml", SubPath: "conf//app.yaml"}, nil,
			VerdictRestartNeeded, `subPath "conf/app.yaml" is a bind mount of one file`},
		{"dot element", cmVol, corev1.VolumeMount{Name: "v", MountPath: "/etc/app.yaml", SubPath: "./conf/app.yaml"}, nil,
			VerdictRestartNeeded, `subPath "conf/app.yaml" is a bind mount of one file`},
		{"expr from a configMapKeyRef", cmVol, corev1.VolumeMount{Name: "v", MountPath: "/etc/conf", SubPathExpr: "$(D)"},
			[]corev1.EnvVar{{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "dir"}}}},
			VerdictRestartNeeded, `subPath "$" is not in the payload`},
		{"expr with $$", cmVol, corev1.VolumeMount{Name: "v", MountPath: "/etc/conf", SubPathExpr: "$$(X)conf"}, nil,
			VerdictRestartNeeded, `subPath "$(X)conf" is not in the payload`},
		{"podCertificate source", projVol, corev1.VolumeMount{Name: "v", MountPath: "/etc/creds.pem", SubPath: "creds.pem"}, nil,
			VerdictNotMounted, "shows another source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: c.env, VolumeMounts: []corev1.VolumeMount{c.mount}}},
				Volumes: []corev1.Volume{c.vol}})
			snap := &Snapshot{Pods: []corev1.Pod{*pod}, ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: cm}}
			var got *Use
			for _, it := range Uses(pod) {
				if it.Object.Kind == KindConfigMap && it.Volume != nil {
					Predict(&it, pod, snap.Object(it.Key()), snap)
					got = &it
					break
				}
			}
			if got == nil || got.Verdict != c.want || !strings.Contains(got.Reason, c.text) {
				t.Fatalf("got %+v, want %s with %q", got, c.want, c.text)
			}
		})
	}
}

// TestPredictOptionalItemsSkipKey: an optional volume with items skips an
// absent key and still writes (and hot-updates) the others; only when every
// listed key is absent is the use missing.
func TestPredictOptionalItemsSkipKey(t *testing.T) {
	obj := Object{Kind: KindConfigMap, Namespace: "ns", Name: "cfg", Exists: true, Data: map[string][]byte{"a": []byte("1")}}
	use := func(optional bool, keys ...string) Use {
		it := Use{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "cfg"}, Mode: ModeItems, Optional: optional,
			Volume: &VolumeRef{Name: "v", MountPath: "/etc/v"}, Container: &ContainerRef{Name: "app", Type: ContainerRegular}}
		for _, k := range keys {
			it.KeyPaths = append(it.KeyPaths, KeyPath{Key: k, Path: k})
			it.Keys = append(it.Keys, k)
		}
		return it
	}
	snap := &Snapshot{}
	it := use(true, "a", "b")
	Predict(&it, nil, obj, snap)
	if it.Verdict != VerdictHotUpdate || !strings.Contains(it.Reason, `key "b" is not in ConfigMap "cfg" (optional, so skipped`) || it.Delay == nil {
		t.Errorf("optional, one key absent: %s: %s (delay %v), want hot-update naming the skipped key", it.Verdict, it.Reason, it.Delay)
	}
	it = use(true, "b")
	Predict(&it, nil, obj, snap)
	if it.Verdict != VerdictMissing || !it.Optional {
		t.Errorf("optional, every key absent: %s, want missing (optional)", it.Verdict)
	}
	it = use(false, "a", "b")
	Predict(&it, nil, obj, snap)
	if it.Verdict != VerdictMissing || !strings.Contains(it.Reason, "required") {
		t.Errorf("required, one key absent: %s: %s, want missing (required)", it.Verdict, it.Reason)
	}
}

// TestPredictInitContainerVolume: a volume an init container reads (to copy
// it into an emptyDir, say) is fixed for the pod's life: restart-needed,
// not hot-update.
func TestPredictInitContainerVolume(t *testing.T) {
	obj := Object{Kind: KindConfigMap, Namespace: "ns", Name: "cfg", Exists: true, Data: map[string][]byte{"a": []byte("1")}}
	for _, ct := range []ContainerType{ContainerInit, ContainerSidecar, ContainerRegular} {
		it := Use{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "cfg"}, Mode: ModeVolume,
			Volume: &VolumeRef{Name: "v", MountPath: "/etc/v"}, Container: &ContainerRef{Name: "c", Type: ct}}
		Predict(&it, nil, obj, &Snapshot{})
		want := VerdictHotUpdate
		if ct == ContainerInit {
			want = VerdictRestartNeeded
		}
		if it.Verdict != want {
			t.Errorf("%s container: %s (%s), want %s", ct, it.Verdict, it.Reason, want)
		}
		if ct == ContainerInit && (it.Delay != nil || !strings.Contains(it.Reason, "fixed for the pod's life")) {
			t.Errorf("init container: delay %v, reason %q", it.Delay, it.Reason)
		}
	}
}
