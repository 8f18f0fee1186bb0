package inspect

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// secretOverridePod: container c takes envFrom [configMapRef cm, secretRef
// creds] (both have DB_PASSWORD) and mounts a projected volume of cm and
// creds (both have "shared").
func secretOverridePod() *corev1.Pod {
	return runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		}}}}}})
}

func secretSnapshot(listed bool) *Snapshot {
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{{KindConfigMap, "ns", "cm"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data: map[string]string{"DB_PASSWORD": "from-cm", "HOST": "db", "shared": "cm-shared", "a": "1"}}},
		Secrets: map[ObjectKey]*corev1.Secret{}, SecretsListed: listed}
	if listed {
		s.Secrets[ObjectKey{KindSecret, "ns", "creds"}] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data: map[string][]byte{"DB_PASSWORD": []byte(secretValue), "shared": []byte(secretValue), "token": []byte(secretValue)}}
	}
	return s
}

func leaks(c Comparison) bool {
	for _, e := range c.Env {
		if strings.Contains(e.Verified, secretValue) {
			return true
		}
	}
	for _, f := range c.Files {
		if f.Verified != nil && strings.Contains(string(f.Verified.Data), secretValue) {
			return true
		}
	}
	return strings.Contains(c.Reason, secretValue)
}

// TestCompareSecretOverrides: a ConfigMap use whose variables or files a
// Secret source of the same container may override. Without the Secret
// read, those are unknown: never stale (refresh would restart the workload
// on every run), never in sync, never the Secret's value in the result; a
// file that differs is pending, the reason saying it may be the Secret's.
// With it read, they are left out and the rest compares.
func TestCompareSecretOverrides(t *testing.T) {
	pod := secretOverridePod()
	envObs := &containerread.Verified{EnvRead: true, Env: map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": "cm-shared", "a": "1", "token": secretValue}}
	volObs := func() *containerread.Verified {
		o := atomicObs(map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": secretValue, "a": "1", "token": secretValue})
		return o
	}
	envFrom := volItem(ModeEnvFrom, "")
	envFrom.Volume = nil
	proj := volItem(ModeProjected, "/etc/cfg")
	cases := []struct {
		name   string
		listed bool
		it     Use
		obs    *containerread.Verified
		want   State
		reason string
	}{
		{"envFrom, Secret not read", false, envFrom, envObs, StateUnverifiable, `DB_PASSWORD may come from Secret "creds", which was not read (add --secrets)`},
		{"envFrom, Secret read", true, envFrom, envObs, StateCurrent, "2 variables set by other entries"},
		{"projected, Secret not read", false, proj, volObs(), StatePending, `"DB_PASSWORD", "shared" differ from the API: stale, or shadowed by Secret "creds" (not read; --secrets reads it)`},
		{"projected, Secret read", true, proj, volObs(), StateInSync, "2 files overwritten by a later source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := secretSnapshot(c.listed)
			got := CompareUse(c.it, pod, snap.Object(c.it.Key()), c.obs, CompareOptions{Now: testNow, Object: snap.Object})
			if got.State != c.want || !strings.Contains(got.Reason, c.reason) {
				t.Errorf("got %s (%s), want %s with %q", got.State, got.Reason, c.want, c.reason)
			}
			if leaks(got) {
				t.Errorf("the Secret's value is in the comparison: %+v", got)
			}
		})
	}
	// A definite difference elsewhere is still stale (envFrom) or pending
	// (volume), without the unknown values.
	snap := secretSnapshot(false)
	obs := &containerread.Verified{EnvRead: true, Env: map[string]string{"DB_PASSWORD": secretValue, "HOST": "old"}}
	secretPrefixed := secretOverridePod()
	secretPrefixed.Spec.Containers[0].EnvFrom[1].Prefix = "S_"
	got := CompareUse(envFrom, secretPrefixed, snap.Object(envFrom.Key()), obs, CompareOptions{Now: testNow, Object: snap.Object})
	if got.State != StateStale || !strings.Contains(got.Reason, "DB_PASSWORD") {
		t.Errorf("prefixed Secret: %s (%s)", got.State, got.Reason)
	}
}

// TestSecretExposure: which values of a ConfigMap use may be a Secret's.
func TestSecretExposure(t *testing.T) {
	pod := secretOverridePod()
	pod.Spec.Containers[0].EnvFrom[1].Prefix = "S_"
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
	env := volItem(ModeEnvFrom, "")
	e := SecretExposureOf(env, pod)
	if !e.Env("S_X") || !e.Env("PW") || e.Env("HOST") {
		t.Errorf("env exposure wrong")
	}
	p := SecretExposureOf(volItem(ModeProjected, "/etc/cfg"), pod)
	if !p.File("shared") || p.File("dir/nested") {
		t.Errorf("file exposure wrong")
	}
	if !SecretExposureOf(env, nil).Env("HOST") {
		t.Error("no pod: everything may be a Secret's")
	}
}

const secretValue = "s3cret-value"
