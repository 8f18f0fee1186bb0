package inspect

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func TestCompareEnv(t *testing.T) {
	cm := cmObject(map[string]string{"A": "1", "with-dash": "d", "with.dot": "o", "9lives": "n"}, map[string][]byte{"bin": {1}})
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "P_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}, Prefix: "P_"},
		},
		Env: []corev1.EnvVar{
			{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "A"}}},
			{Name: "Y", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "A"}}},
			{Name: "Y", Value: "literal"},
			{Name: "Z", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "gone"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "bin"}}},
		}}}})
	later := cmObject(map[string]string{"with.dot": "later wins"}, nil)
	lookup := func(k ObjectKey) Object {
		if k.Name == "later" {
			return later
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	env := func(name, key string) Use {
		it := volItem(ModeEnv, "")
		it.Volume, it.EnvName, it.Keys, it.Optional = nil, name, []string{key}, true
		return it
	}
	envFrom := volItem(ModeEnvFrom, "")
	envFrom.Volume, envFrom.EnvPrefix = nil, "P_"
	obs := func(vars map[string]string) *containerread.Verified {
		return &containerread.Verified{EnvRead: true, Env: vars}
	}
	allGood := map[string]string{"X": "1", "P_A": "1", "P_with-dash": "d", "P_with.dot": "later wins", "P_9lives": "n"}
	cases := []struct {
		name string
		it   Use
		obs  *containerread.Verified
		want State
		text string
	}{
		{"env equal", env("X", "A"), obs(allGood), StateCurrent, "matches"},
		{"env differs", env("X", "A"), obs(map[string]string{"X": "0"}), StateStale, "restart the workload"},
		{"env unset, key now present", env("X", "A"), obs(map[string]string{}), StateStale, "not set"},
		{"env overridden by a later entry", env("Y", "A"), obs(map[string]string{"Y": "literal"}), StateNA, "later env entry"},
		{"optional key absent, unset", env("Z", "gone"), obs(map[string]string{}), StateCurrent, "unset"},
		{"optional key removed, still set", env("Z", "gone"), obs(map[string]string{"Z": "x"}), StateStale, "no longer"},
		{"binaryData never becomes a variable", env("B", "bin"), obs(map[string]string{}), StateCurrent, "unset"},
		{"envFrom equal (every key, later source wins)", envFrom, obs(allGood), StateCurrent, "3 variables match"},
		{"envFrom one differs", envFrom, obs(map[string]string{"P_A": "1", "P_with-dash": "old", "P_9lives": "n"}), StateStale, "P_with-dash"},
		{"envFrom key added", envFrom, obs(map[string]string{"P_A": "1", "P_with-dash": "d"}), StateStale, "P_9lives (not set)"},
		{"env unreadable", env("X", "A"), &containerread.Verified{EnvErr: "no /proc"}, StateUnverifiable, "no /proc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CompareUse(c.it, pod, cm, c.obs, CompareOptions{Now: testNow, Object: lookup})
			if got.State != c.want || !strings.Contains(got.Reason, c.text) {
				t.Errorf("got %s (%s), want %s with %q", got.State, got.Reason, c.want, c.text)
			}
		})
	}
}

// TestCompareEnvFromRemovedKey: a variable with the use's prefix whose key
// is no longer in the ConfigMap stays in the container: stale, unless
// another source sets it or the kubelet does (service links).
func TestCompareEnvFromRemovedKey(t *testing.T) {
	pod := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "APP_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}, Prefix: "APP_"},
		},
		Env: []corev1.EnvVar{{Name: "APP_LITERAL", Value: "x"}}}}})
	cm := cmObject(map[string]string{"A": "1"}, nil)
	other := cmObject(map[string]string{"O": "o"}, nil)
	other.Name = "other"
	lookup := func(k ObjectKey) Object {
		if k.Name == "other" {
			return other
		}
		return Object{Kind: k.Kind, Name: k.Name}
	}
	it := volItem(ModeEnvFrom, "")
	it.Volume, it.EnvPrefix = nil, "APP_"
	env := map[string]string{"APP_A": "1", "APP_O": "o", "APP_LITERAL": "x", "APP_DB_SERVICE_HOST": "10.0.0.1", "APP_DB_PORT_5432_TCP": "tcp://x", "OTHER": "y"}
	got := CompareUse(it, pod, cm, &containerread.Verified{EnvRead: true, Env: env}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateCurrent {
		t.Errorf("nothing removed: %s (%s)", got.State, got.Reason)
	}
	env["APP_GONE"] = "old"
	got = CompareUse(it, pod, cm, &containerread.Verified{EnvRead: true, Env: env}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateStale || !strings.Contains(got.Reason, "APP_GONE still set") || !got.Differs() {
		t.Errorf("removed key: %s (%s)", got.State, got.Reason)
	}
	// Without a prefix, removed keys are not detected.
	it.EnvPrefix = ""
	pod.Spec.Containers[0].EnvFrom[0].Prefix = ""
	got = CompareUse(it, pod, cm, &containerread.Verified{EnvRead: true, Env: map[string]string{"A": "1", "GONE": "old"}}, CompareOptions{Now: testNow, Object: lookup})
	if got.State != StateCurrent {
		t.Errorf("no prefix: %s (%s)", got.State, got.Reason)
	}
}
