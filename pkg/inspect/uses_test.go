package inspect

import (
	"fmt"
	"strings"
	"testing"
)

// useRow renders everything Uses decides about one use on one line.
func useRow(it Use) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s", strings.ToLower(it.Object.Kind), it.Object.Name)
	if it.Container != nil {
		fmt.Fprintf(&b, " %s(%s)", it.Container.Name, it.Container.Type)
	} else {
		b.WriteString(" -")
	}
	fmt.Fprintf(&b, " %s", it.Mode)
	if v := it.Volume; v != nil {
		fmt.Fprintf(&b, " vol=%s:%s", v.Name, v.MountPath)
		if v.SubPath != "" {
			fmt.Fprintf(&b, " subPath=%s", v.SubPath)
		}
		if v.SubPathExpr != "" {
			fmt.Fprintf(&b, " subPathExpr=%s", v.SubPathExpr)
		}
		if v.ReadOnly {
			b.WriteString(" ro")
		}
	}
	if it.EnvName != "" {
		fmt.Fprintf(&b, " env=%s", it.EnvName)
	}
	if it.EnvPrefix != "" {
		fmt.Fprintf(&b, " prefix=%s", it.EnvPrefix)
	}
	if len(it.Keys) > 0 {
		fmt.Fprintf(&b, " keys=%s", strings.Join(it.Keys, ","))
	}
	if len(it.KeyPaths) > 0 {
		var kps []string
		for _, kp := range it.KeyPaths {
			s := kp.Key + ">" + kp.Path
			if kp.Mode != nil {
				s += fmt.Sprintf(":%#o", *kp.Mode)
			}
			kps = append(kps, s)
		}
		fmt.Fprintf(&b, " items=%s", strings.Join(kps, ","))
	}
	if it.DefaultMode != nil {
		fmt.Fprintf(&b, " defaultMode=%#o", *it.DefaultMode)
	}
	if it.Optional {
		b.WriteString(" optional")
	}
	return b.String()
}

// TestUses covers every mode and container kind on the fixture pods of
// testdata/status: one row per container and mount, env variable, envFrom
// entry, and per source of a volume no container mounts.
func TestUses(t *testing.T) {
	snap := statusSnapshot(t)
	cases := []struct {
		pod  string
		want []string
	}{
		{"volume-pod", []string{
			// A whole configMap volume; the kube-api-access volume is a
			// projected volume whose ServiceAccount token and downward API
			// sources are no ConfigMap use.
			"configmap/app-config app(regular) volume vol=cfg:/etc/app defaultMode=0440",
			"configmap/kube-root-ca.crt app(regular) projected vol=kube-api-access-x1:/var/run/secrets/kubernetes.io/serviceaccount ro keys=ca.crt items=ca.crt>ca.crt defaultMode=0644",
		}},
		{"items-pod", []string{
			"configmap/nested-config app(regular) items vol=nested:/etc/nested keys=a.conf,b.conf items=a.conf>conf.d/a.conf:0400,b.conf>b.conf defaultMode=0440",
		}},
		{"projected-pod", []string{
			// One use per configMap and secret source, with the volume's
			// defaultMode; the serviceAccountToken and downwardAPI sources
			// are skipped.
			"configmap/app-config app(regular) projected vol=bundle:/etc/bundle keys=app.yaml items=app.yaml>config/app.yaml defaultMode=0420",
			"secret/db-creds app(regular) projected vol=bundle:/etc/bundle keys=password items=password>secrets/password:0400 defaultMode=0420",
		}},
		{"subpath-pod", []string{
			"configmap/app-config app(regular) subPath vol=cfg:/etc/app.yaml subPath=app.yaml",
			"configmap/nested-config app(regular) subPath vol=nested:/etc/conf.d subPath=conf.d keys=a.conf,b.conf items=a.conf>conf.d/a.conf,b.conf>b.conf",
			"configmap/nested-config app(regular) subPath vol=nested:/etc/a.conf subPath=conf.d/a.conf keys=a.conf,b.conf items=a.conf>conf.d/a.conf,b.conf>b.conf",
			"configmap/app-config app(regular) subPath vol=cfg:/etc/empty subPath=not-there",
		}},
		{"subpathexpr-pod", []string{
			"configmap/app-config app(regular) subPathExpr vol=cfg:/etc/file-env subPathExpr=$(FILE)",
			"configmap/nested-config app(regular) subPathExpr vol=nested:/etc/dir-env subPathExpr=$(DIR) keys=a.conf,b.conf items=a.conf>conf.d/a.conf,b.conf>b.conf",
			"configmap/app-config app(regular) subPathExpr vol=cfg:/etc/file-field subPathExpr=$(VARIANT)",
			"configmap/nested-config app(regular) subPathExpr vol=nested:/etc/dir-field subPathExpr=$(CONFDIR) keys=a.conf,b.conf items=a.conf>conf.d/a.conf,b.conf>b.conf",
			"configmap/app-config app(regular) subPathExpr vol=cfg:/etc/unresolved subPathExpr=$(FROM_CM)",
			"configmap/app-config app(regular) subPathExpr vol=cfg:/etc/empty-var subPathExpr=$(EMPTY)",
			"configmap/app-config app(regular) env env=FROM_CM keys=log-level",
		}},
		{"env-pod", []string{
			// Literal values and fieldRefs are no use; binaryData keys,
			// absent keys and absent objects are still uses (Predict
			// judges them).
			"configmap/app-config app(regular) env env=LOG_LEVEL keys=log-level",
			"configmap/app-config app(regular) env env=LOGO keys=logo.png",
			"configmap/app-config app(regular) env env=OPT_LOGO keys=logo.png optional",
			"configmap/partial app(regular) env env=OPT_ABSENT keys=absent optional",
			"configmap/partial app(regular) env env=REQ_ABSENT keys=absent",
			"secret/db-creds app(regular) env env=DB_PASSWORD keys=password",
			"secret/ghost-secret app(regular) env env=GHOST_TOKEN keys=token optional",
			"configmap/app-config app(regular) envFrom prefix=APP_",
			"secret/db-creds app(regular) envFrom",
			"configmap/ghost-config app(regular) envFrom optional",
		}},
		{"missing-pod", []string{
			"configmap/ghost-config app(regular) volume vol=ghost:/etc/ghost",
			"configmap/maybe-config app(regular) volume vol=maybe:/etc/maybe optional",
			"configmap/maybe-config app(regular) subPath vol=maybe:/etc/maybe.yaml subPath=maybe.yaml optional",
			"configmap/partial app(regular) items vol=partial-req:/etc/partial keys=present,absent items=present>present,absent>absent",
			"configmap/partial app(regular) items vol=partial-opt:/etc/partial-opt keys=absent items=absent>absent optional",
			"configmap/partial app(regular) items vol=binary:/etc/binary keys=blob items=blob>blob.bin",
		}},
		{"frozen-pod", []string{
			"configmap/frozen app(regular) volume vol=frozen:/etc/frozen",
			"configmap/frozen app(regular) subPath vol=frozen:/etc/k subPath=k",
			"configmap/frozen app(regular) env env=K keys=k",
		}},
		{"unmounted-pod", []string{
			"configmap/app-config - unmounted vol=cfg:",
			"configmap/nested-config - unmounted vol=nested: keys=a.conf items=a.conf>a.conf",
		}},
		{"kinds-pod", []string{
			// init, sidecar (init with restartPolicy Always), regular and
			// ephemeral containers, in that order.
			"configmap/app-config init(init) envFrom",
			"configmap/app-config sidecar(sidecar) volume vol=cfg:/etc/app",
			"configmap/app-config main(regular) volume vol=cfg:/etc/app",
			"configmap/app-config debugger(ephemeral) env env=LOG_LEVEL keys=log-level",
		}},
		{"projected-subpath-pod", []string{
			// Every configMap and secret source of the volume, per mount.
			"configmap/app-config app(regular) subPath vol=bundle:/etc/app.yaml subPath=config/app.yaml keys=app.yaml items=app.yaml>config/app.yaml",
			"secret/db-creds app(regular) subPath vol=bundle:/etc/app.yaml subPath=config/app.yaml keys=password items=password>secrets/password",
			"configmap/app-config app(regular) subPath vol=bundle:/etc/secrets subPath=secrets keys=app.yaml items=app.yaml>config/app.yaml",
			"secret/db-creds app(regular) subPath vol=bundle:/etc/secrets subPath=secrets keys=password items=password>secrets/password",
			"configmap/app-config app(regular) subPath vol=bundle:/etc/token subPath=token keys=app.yaml items=app.yaml>config/app.yaml",
			"secret/db-creds app(regular) subPath vol=bundle:/etc/token subPath=token keys=password items=password>secrets/password",
			"configmap/app-config app(regular) subPath vol=bundle:/etc/nothing subPath=nothing-here keys=app.yaml items=app.yaml>config/app.yaml",
			"secret/db-creds app(regular) subPath vol=bundle:/etc/nothing subPath=nothing-here keys=password items=password>secrets/password",
		}},
		{"secret-pod", []string{
			// A secret volume with items; an emptyDir and a mount of an
			// undeclared volume are no use; an unmounted projected volume
			// gives one row per configMap or secret source.
			"secret/db-creds app(regular) items vol=creds:/etc/creds keys=user items=user>user defaultMode=0400",
			"secret/db-creds app(regular) envFrom prefix=DB_",
			"configmap/app-config - unmounted vol=spare:",
			"secret/db-creds - unmounted vol=spare: optional",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.pod, func(t *testing.T) {
			pod := statusPod(t, snap, "shop", tc.pod)
			var got []string
			for _, it := range Uses(pod) {
				got = append(got, useRow(it))
				if it.Object.Namespace != "shop" || it.Pod.Name != tc.pod || it.Pod.Node != pod.Spec.NodeName || it.Pod.Phase != string(pod.Status.Phase) {
					t.Errorf("%s: object namespace %q, pod %+v", useRow(it), it.Object.Namespace, it.Pod)
				}
				if it.Verdict != "" || it.Workload.Kind != "" || it.Object.Exists {
					t.Errorf("%s: Uses must leave the prediction, the workload and the object state to Build", useRow(it))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Uses(%s):\n got:\n\t%s\nwant:\n\t%s", tc.pod, strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestUsesNoConsumers: a pod without ConfigMaps or Secrets has no use.
func TestUsesNoConsumers(t *testing.T) {
	snap := statusSnapshot(t)
	pod := statusPod(t, snap, "shop", "secret-pod").DeepCopy()
	pod.Spec.Volumes = pod.Spec.Volumes[1:2] // the emptyDir
	pod.Spec.Containers[0].EnvFrom = nil
	if got := Uses(pod); len(got) != 0 {
		t.Errorf("Uses = %v, want none", got)
	}
}

// TestUseCount: Build sizes its slice with useCount, which must count what
// Uses returns for every fixture pod (every mode and container kind).
func TestUseCount(t *testing.T) {
	snap := statusSnapshot(t)
	if len(snap.Pods) == 0 {
		t.Fatal("no fixture pods")
	}
	for i := range snap.Pods {
		pod := &snap.Pods[i]
		checkUseCount(t, pod, Uses(pod))
	}
}
