package cmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

const diffTS = "..2024_05_06_07_08_09.123456789"

func diffPod(name string, c corev1.Container, vols ...corev1.Volume) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: vols},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

// diffFixture: pod "old" has a stale volume and env, pod "new" is in sync;
// a Secret consumed by pod "sec".
func diffFixture() (*inspect.Snapshot, *readtest.Executor) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg",
		CreationTimestamp: metav1.NewTime(time.Now().Add(-20 * time.Second))},
		Data: map[string]string{"greeting": "hello v2\n", "same": "s\n"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data: map[string][]byte{"password": []byte("hunter2-new"), "user": []byte("admin")}}
	cmVol := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	secVol := corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}
	app := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
		Env: []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "greeting"}}}}}
	secApp := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}},
		Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}}
	snap := &inspect.Snapshot{
		Pods:        []corev1.Pod{diffPod("old", app, cmVol), diffPod("new", app, cmVol), diffPod("sec", secApp, secVol)},
		ConfigMaps:  map[inspect.ObjectKey]*corev1.ConfigMap{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}: cm},
		Secrets:     map[inspect.ObjectKey]*corev1.Secret{{Kind: inspect.KindSecret, Namespace: "ns", Name: "creds"}: sec},
		ReplicaSets: nil, SecretsListed: true,
	}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{
		"ns/old/app": {Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: diffTS, Files: map[string][]byte{
			"greeting": []byte("hello v1\n"), "same": []byte("s\n"), "removed": []byte("r\n")}}},
			Env: map[string]string{"GREETING": "hello v1\n", "PATH": "/bin"}},
		"ns/new/app": {Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: diffTS, Files: map[string][]byte{
			"greeting": []byte("hello v2\n"), "same": []byte("s\n")}}},
			Env: map[string]string{"GREETING": "hello v2\n"}},
		"ns/sec/app": {Volumes: map[string]readtest.Volume{"/etc/creds": {Target: diffTS, Files: map[string][]byte{
			"password": []byte("hunter2-old"), "user": []byte("admin")}}},
			Env: map[string]string{"PASSWORD": "hunter2-old"}},
	}}
	return snap, ex
}

func runDiff(t *testing.T, key inspect.ObjectKey, mutate func(*DiffOptions)) (string, string, error) {
	t.Helper()
	snap, ex := diffFixture()
	var out, errOut bytes.Buffer
	o := NewDiffOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	o.Namespace, o.Names = "ns", []inspect.ObjectKey{key}
	o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) { return snap, nil }
	o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Executor: ex}
	o.HMACKey = []byte("fixed key for tests")
	if mutate != nil {
		mutate(o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	return out.String(), errOut.String(), err
}

var cfgKey = inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
var credsKey = inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: "ns", Name: "creds"}

func TestDiffConfigMap(t *testing.T) {
	out, errOut, err := runDiff(t, cfgKey, nil)
	if ExitCode(err) != ExitCheck {
		t.Fatalf("exit %d (%v), want 3\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	for _, want := range []string{
		"diff pod/old container app volume /etc/cfg configmap/cfg (pending)",
		"--- pod/old/app:/etc/cfg/greeting",
		"+++ configmap/cfg key greeting",
		"-hello v1",
		"+hello v2",
		"--- pod/old/app:/etc/cfg/removed",
		"+++ /dev/null",
		"diff pod/old container app env GREETING configmap/cfg (stale)",
		`-GREETING="hello v1\n"`,
		`+GREETING="hello v2\n"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pod/new") || strings.Contains(out, "same") || strings.Contains(out, "PATH") {
		t.Errorf("output shows equal content:\n%s", out)
	}
	if strings.Contains(out, "\033[") {
		t.Error("colour without a terminal")
	}
}

func TestDiffNoDifferences(t *testing.T) {
	out, errOut, err := runDiff(t, cfgKey, func(o *DiffOptions) { o.Pod = "new" })
	if err != nil || out != "" {
		t.Fatalf("err %v, out %q, errOut %q", err, out, errOut)
	}
}

func TestDiffFilters(t *testing.T) {
	_, _, err := runDiff(t, cfgKey, func(o *DiffOptions) { o.Pod = "nope" })
	if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "nope") {
		t.Errorf("err = %v", err)
	}
	out, _, err := runDiff(t, cfgKey, func(o *DiffOptions) { o.Pod, o.Container = "old", "app" })
	if ExitCode(err) != ExitCheck || !strings.Contains(out, "pod/old") {
		t.Errorf("exit %d, out %s", ExitCode(err), out)
	}
}

func TestDiffSecret(t *testing.T) {
	out, errOut, err := runDiff(t, credsKey, nil)
	if ExitCode(err) != ExitCheck {
		t.Fatalf("exit %d (%v)\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	if strings.Contains(out+errOut, "hunter2") {
		t.Fatalf("secret value printed:\n%s", out)
	}
	if !strings.Contains(out, "password: differs (container hmac:") || !strings.Contains(out, "PASSWORD (key password): differs") {
		t.Errorf("output:\n%s", out)
	}
	if strings.Contains(out, "user") {
		t.Errorf("equal key shown:\n%s", out)
	}

	out, _, err = runDiff(t, credsKey, func(o *DiffOptions) { o.ShowSecretValues = true })
	if ExitCode(err) != ExitCheck || !strings.Contains(out, "-hunter2-old") || !strings.Contains(out, "+hunter2-new") {
		t.Errorf("--show-secret-values: exit %d\n%s", ExitCode(err), out)
	}
}

func TestDiffExternal(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff")
	}
	// A diff program that also records the directories it was given.
	dir := t.TempDir()
	rec := filepath.Join(dir, "args")
	prog := filepath.Join(dir, "mydiff")
	script := "#!/bin/sh\necho \"$@\" > " + rec + "\nexec diff \"$@\"\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runDiff(t, cfgKey, func(o *DiffOptions) { o.ExternalDiff = prog + " -u -r -N --bad;rm" })
	if ExitCode(err) != ExitCheck {
		t.Fatalf("exit %d (%v)\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	args, _ := os.ReadFile(rec)
	fields := strings.Fields(string(args))
	if len(fields) != 5 || fields[0] != "-u" || fields[1] != "-r" || fields[2] != "-N" {
		t.Fatalf("args = %q", args)
	}
	if !strings.Contains(fields[3], "CONTAINER-") || !strings.Contains(fields[4], "API-") {
		t.Errorf("dirs = %q", fields[3:])
	}
	for _, d := range fields[3:] {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed", d)
		}
	}
	for _, want := range []string{"-hello v1", "+hello v2", "old/app/volume-cfg/greeting", "old/app/env/environment"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// Secrets never go through it.
	os.Remove(rec)
	out, _, err = runDiff(t, credsKey, func(o *DiffOptions) { o.ExternalDiff = prog; o.ShowSecretValues = true })
	if ExitCode(err) != ExitCheck {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Error("the external diff ran for a Secret")
	}
	if !strings.Contains(out, "+hunter2-new") {
		t.Errorf("secret diff not built in:\n%s", out)
	}
}

func TestDiffUnverifiable(t *testing.T) {
	_, errOut, err := runDiff(t, cfgKey, func(o *DiffOptions) {
		o.Pod = "new"
		o.Verify.Executor = &readtest.Executor{Containers: map[string]*readtest.Container{"ns/new/app": {NoShell: true}}}
	})
	if ExitCode(err) != ExitFailure || !strings.Contains(errOut, "unverifiable") {
		t.Errorf("exit %d (%v), stderr %s", ExitCode(err), err, errOut)
	}
}

func TestDiffColour(t *testing.T) {
	out, _, _ := runDiff(t, cfgKey, func(o *DiffOptions) { o.Color = true; o.Pod = "old" })
	if !strings.Contains(out, "\033[31m-hello v1") || !strings.Contains(out, "\033[32m+hello v2") {
		t.Errorf("no colour:\n%q", out)
	}
}

// TestDiffConfigMapNeverShowsSecretOverrides: `diff configmap/X` reads no
// Secrets; a Secret source of the same container that overrides a variable
// or a file of X must not show up, in the output or on disk. The file that
// differs is a difference (exit 3) named as stale or the Secret's; the
// variable the Secret may set is unverifiable.
func TestDiffConfigMapNeverShowsSecretOverrides(t *testing.T) {
	const value = "hunter2-override"
	app := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "proj", MountPath: "/etc/proj"}},
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}}
	proj := corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
	}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"DB_PASSWORD": "from-cm", "HOST": "db"}}
	snap := &inspect.Snapshot{Pods: []corev1.Pod{diffPod("p", app, proj)},
		ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{cfgKey: cm}}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/p/app": {
		Volumes: map[string]readtest.Volume{"/etc/proj": {Target: diffTS, Files: map[string][]byte{"DB_PASSWORD": []byte(value), "HOST": []byte("db")}}},
		Env:     map[string]string{"DB_PASSWORD": value, "HOST": "db"}}}}
	dir := t.TempDir()
	prog := filepath.Join(dir, "mydiff")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ncat -r \"$1\" \"$2\" 2>/dev/null; grep -r . \"$1\" \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, external := range []string{"", prog} {
		var out, errOut bytes.Buffer
		o := NewDiffOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		o.Namespace, o.Names, o.ExternalDiff, o.HMACKey = "ns", []inspect.ObjectKey{cfgKey}, external, []byte("k")
		o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) { return snap, nil }
		o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Executor: ex}
		err := o.Run(context.Background())
		if strings.Contains(out.String()+errOut.String(), value) {
			t.Fatalf("external %q: the Secret's value is shown:\n%s\n%s", external, out.String(), errOut.String())
		}
		if ExitCode(err) != ExitCheck || !strings.Contains(errOut.String(), `DB_PASSWORD may come from Secret "creds", which was not read (add --secrets)`) ||
			!strings.Contains(out.String(), `DB_PASSWORD: differs: stale, or shadowed by Secret "creds" (not read; --secrets reads it)`) {
			t.Errorf("external %q: exit %d (%v), want 3, the file stale or shadowed, the variable unverifiable\n%s\n%s", external, ExitCode(err), err, out.String(), errOut.String())
		}
	}
}

// TestDiffRendererFingerprintsSecretSources: whatever a comparison says,
// a value the container shows that may come from a Secret source of the
// container is only fingerprinted.
func TestDiffRendererFingerprintsSecretSources(t *testing.T) {
	const value = "hunter2-backstop"
	app := corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "proj", MountPath: "/etc/proj"}},
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}, Prefix: "S_"}}}
	proj := corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
	}}}}
	pod := diffPod("p", app, proj)
	base := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}, Pod: inspect.PodRef{Name: "p"},
		Container: &inspect.ContainerRef{Name: "app", Type: inspect.ContainerRegular}}
	envUse, volUse := base, base
	envUse.Mode, envUse.EnvPrefix = inspect.ModeEnvFrom, "S_"
	volUse.Mode, volUse.Volume = inspect.ModeProjected, &inspect.VolumeRef{Name: "proj", MountPath: "/etc/proj"}
	results := []inspect.VerifiedUse{
		{Use: envUse, Pod: &pod, Comparison: inspect.Comparison{State: inspect.StateStale, Env: []inspect.EnvComparison{
			{Name: "S_PW", Key: "PW", Expected: "cm", ExpectedSet: true, Verified: value, VerifiedSet: true},
			{Name: "OTHER", Key: "OTHER", Expected: "new", ExpectedSet: true, Verified: "old", VerifiedSet: true}}}},
		{Use: volUse, Pod: &pod, Comparison: inspect.Comparison{State: inspect.StatePending, Files: []inspect.FileComparison{
			{Path: "pw", Key: "pw", Status: inspect.FileDiffers, Expected: &inspect.ExpectedFile{Path: "pw", Key: "pw", Data: []byte("cm")},
				Verified: &containerread.VerifiedFile{Path: "pw", Data: []byte(value), HasData: true, Size: int64(len(value))}}}}},
	}
	var out, errOut bytes.Buffer
	r := diffRenderer{Out: &out, ErrOut: &errOut, HMACKey: []byte("k")}
	if _, err := r.render(results, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), value) || !strings.Contains(out.String(), "-S_PW=hmac:") || !strings.Contains(out.String(), "pw: differs (container hmac:") {
		t.Errorf("output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "-OTHER=old") {
		t.Errorf("a value no Secret can set is hidden:\n%s", out.String())
	}
}

// TestDiffSecretsFlag: diff recommends "add --secrets" for a ConfigMap
// consumer that shares its container with a Secret; diff has that flag, it
// loads Secrets, and the comparison then completes without printing the
// Secret's value.
func TestDiffSecretsFlag(t *testing.T) {
	cmd := NewCmdDiff(nil, genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if cmd.Flags().Lookup("secrets") == nil {
		t.Fatal("diff has no --secrets flag, yet it recommends it")
	}
	const value = "hunter2-override"
	app := corev1.Container{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
	}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"DB_PASSWORD": "from-cm", "HOST": "db-v2"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"DB_PASSWORD": []byte(value)}}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/p/app": {
		Env: map[string]string{"DB_PASSWORD": value, "HOST": "db-v1"}}}}
	for _, secrets := range []bool{false, true} {
		var out, errOut bytes.Buffer
		o := NewDiffOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		o.Namespace, o.Names, o.HMACKey, o.Secrets = "ns", []inspect.ObjectKey{cfgKey}, []byte("k"), secrets
		var asked inspect.LoadOptions
		o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
			asked = lo
			snap := &inspect.Snapshot{Pods: []corev1.Pod{diffPod("p", app)},
				ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{cfgKey: cm}, SecretsListed: lo.Secrets,
				Secrets: map[inspect.ObjectKey]*corev1.Secret{}}
			if lo.Secrets {
				snap.Secrets[credsKey] = sec
			}
			return snap, nil
		}
		o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Executor: ex}
		err := o.Run(context.Background())
		all := out.String() + errOut.String()
		if strings.Contains(all, value) {
			t.Fatalf("--secrets=%v: the Secret's value is shown:\n%s", secrets, all)
		}
		if asked.Secrets != secrets {
			t.Errorf("--secrets=%v: loaded Secrets=%v", secrets, asked.Secrets)
		}
		if !secrets {
			if !strings.Contains(all, "add --secrets") {
				t.Errorf("without --secrets: no hint to add it:\n%s", all)
			}
			continue
		}
		if ExitCode(err) != ExitCheck || strings.Contains(all, "add --secrets") || !strings.Contains(out.String(), "+HOST=") {
			t.Errorf("--secrets: exit %d (%v), want 3 with the HOST difference and no hint\n%s", ExitCode(err), err, all)
		}
	}
}

// TestDiffInitContainerStale: an init container that read a ConfigMap and
// finished before its last change cannot be read; diff says it is stale and
// exits 3 instead of claiming no differences.
func TestDiffInitContainerStale(t *testing.T) {
	finished := time.Now().Add(-time.Hour)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Minute))},
		Data: map[string]string{"my.cnf": "v2"}}
	init := corev1.Container{Name: "copy", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/src"}}}
	p := diffPod("db-0", corev1.Container{Name: "db"}, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	p.Spec.InitContainers = []corev1.Container{init}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "copy", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Reason: "Completed", StartedAt: metav1.NewTime(finished.Add(-time.Second)), FinishedAt: metav1.NewTime(finished)}}}}
	var out, errOut bytes.Buffer
	o := NewDiffOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	o.Namespace, o.Names, o.HMACKey = "ns", []inspect.ObjectKey{cfgKey}, []byte("k")
	o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
		return &inspect.Snapshot{Pods: []corev1.Pod{p}, ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{cfgKey: cm}}, nil
	}
	o.Verify = VerifyFlags{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Executor: &readtest.Executor{}}
	err := o.Run(context.Background())
	if ExitCode(err) != ExitCheck || !strings.Contains(out.String(), "diff pod/db-0 container copy volume /src configmap/cfg (stale)") ||
		!strings.Contains(out.String(), "after the init container finished") {
		t.Errorf("exit %d (%v), want 3 and the stale init container\nstdout:\n%s\nstderr:\n%s", ExitCode(err), err, out.String(), errOut.String())
	}
}
