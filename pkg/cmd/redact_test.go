package cmd

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// redactSentinel is a Secret value that must never be printed.
const redactSentinel = "S3CRET-tenant-7f3a"

// redactCluster: pod p reads ConfigMap cfg through two subPathExpr mounts
// whose expressions expand to Secret data: $(TENANT) (a secretKeyRef) and
// $(DERIVED) (a literal that refers to $(TENANT)). The container shows them
// as empty directories (the payload has no such path).
func redactCluster() ([]runtime.Object, *readtest.Executor) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tenant"}, Data: map[string][]byte{"id": []byte(redactSentinel)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Data: map[string]string{"app.conf": "v2"}}
	c := corev1.Container{Name: "app",
		Env: []corev1.EnvVar{
			{Name: "TENANT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tenant"}, Key: "id"}}},
			{Name: "DERIVED", Value: "x-$(TENANT)"},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/t", SubPathExpr: "$(TENANT)-conf"},
			{Name: "cfg", MountPath: "/etc/d", SubPathExpr: "$(DERIVED)"},
		}}
	p := diffPod("p", c, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/p/app": {
		Dirs: map[string]map[string][]byte{"/etc/t": {}, "/etc/d": {}},
		Env:  map[string]string{"TENANT": redactSentinel, "DERIVED": "x-" + redactSentinel}}}}
	return []runtime.Object{sec, cm, &p}, ex
}

// TestNoSecretDataInAnyOutput scans every command and format for the
// sentinel: status (table, wide, json, yaml; with and without --secrets and
// --verify), diff (with and without --secrets), refresh --dry-run=client
// (table and json).
func TestNoSecretDataInAnyOutput(t *testing.T) {
	objs, ex := redactCluster()
	scan := func(what string, out, errOut *bytes.Buffer, err error) {
		t.Helper()
		all := out.String() + errOut.String()
		if err != nil {
			all += err.Error()
		}
		if strings.Contains(all, redactSentinel) {
			t.Errorf("%s prints the Secret's value:\n%s", what, all)
		}
		if out.Len() == 0 && errOut.Len() == 0 {
			t.Errorf("%s printed nothing: the scan proves nothing", what)
		}
	}
	for _, format := range []string{"", "wide", "json", "yaml"} {
		for _, secrets := range []bool{false, true} {
			for _, verify := range []bool{false, true} {
				writeStatusKubeconfig(t, "https://127.0.0.1:1", "ns")
				o, out, errOut := newTestStatusOptions(t, &statusLoader{objs: objs})
				o.Output, o.Secrets = format, secrets
				o.Verify.Enabled, o.Verify.Executor = verify, ex
				err := runStatusOptions(t, o, nil)
				scan("status -o "+format+map[bool]string{true: " --secrets"}[secrets]+map[bool]string{true: " --verify"}[verify], out, errOut, err)
			}
		}
	}
	for _, secrets := range []bool{false, true} {
		var out, errOut bytes.Buffer
		o := NewDiffOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		o.Namespace, o.Names, o.HMACKey, o.Secrets = "ns", []inspect.ObjectKey{cfgKey}, []byte("k"), secrets
		o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
			return inspect.Load(ctx, fake.NewClientset(objs...), lo)
		}
		o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Executor: ex}
		err := o.Run(context.Background())
		if out.Len() == 0 && errOut.Len() == 0 {
			errOut.WriteString("(nothing)") // diff prints nothing when all is current
		}
		scan("diff", &out, &errOut, err)
	}
	for _, format := range []string{"", "json"} {
		for _, secrets := range []bool{false, true} {
			out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
			o := NewRefreshOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
			o.Namespace, o.Client, o.Cluster.Executor, o.Cluster.Patcher = "ns", fake.NewClientset(objs...), ex, &countingPatcher{}
			o.Output, o.Secrets, o.DryRun = format, secrets, string(refresh.DryRunClient)
			o.Strategy = string(refresh.StrategyRestart)
			err := o.Run(context.Background())
			scan("refresh --dry-run=client -o "+format, out, errOut, err)
		}
	}
}

// TestOutputEdgeRedactsExecErrors: a reason that no earlier step knew came
// from Secret data (here an exec error on a ConfigMap use that quotes the
// value) is caught by the output edge alone, in every status format and in
// diff.
func TestOutputEdgeRedactsExecErrors(t *testing.T) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tenant"}, Data: map[string][]byte{"id": []byte(redactSentinel)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Data: map[string]string{"app.conf": "v2"}}
	p := diffPod("p", corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}},
		corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/p/app": {
		Err: errors.New("command terminated: cannot open /run/tenant-" + redactSentinel + ": permission denied")}}}
	objs := []runtime.Object{sec, cm, &p}
	for _, format := range []string{"", "wide", "json", "yaml"} {
		writeStatusKubeconfig(t, "https://127.0.0.1:1", "ns")
		o, out, errOut := newTestStatusOptions(t, &statusLoader{objs: objs})
		o.Output, o.Secrets = format, true
		o.Verify.Enabled, o.Verify.Executor = true, ex
		err := runStatusOptions(t, o, nil)
		all := out.String() + errOut.String()
		if err != nil {
			all += err.Error()
		}
		if strings.Contains(all, redactSentinel) {
			t.Errorf("status --secrets --verify -o %q prints the Secret's value:\n%s", format, all)
		}
		if format != "" && !strings.Contains(all, "permission denied") { // the table shows no reasons
			t.Errorf("status -o %q does not show the exec error at all (the scan proves nothing):\n%s", format, all)
		}
	}
}
