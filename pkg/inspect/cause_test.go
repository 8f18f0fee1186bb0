package inspect

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// Every unverifiable state that cannot pass by waiting carries a typed
// cause (the refresh wait ends at once on them), one that may pass carries
// a passing cause, and no other state has one.
func TestStateCauses(t *testing.T) {
	pod := secretOverridePod()
	unread := secretSnapshot(false)
	proj := volItem(ModeProjected, "/etc/cfg")
	envFrom := volItem(ModeEnvFrom, "")
	envFrom.Volume = nil
	volObs := atomicObs(map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": secretValue, "a": "1", "token": secretValue})
	envObs := &containerread.Verified{EnvRead: true, Env: map[string]string{"DB_PASSWORD": secretValue, "HOST": "db", "shared": "cm-shared", "a": "1"}}
	plain := volItem(ModeVolume, "/etc/cfg")
	simple := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}})
	cm := cmObject(map[string]string{"a": "1"}, nil)
	immutableObj := unread.Object(proj.Key())
	immutableObj.Immutable = true
	noListing := &containerread.Verified{NoShell: true, Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": {Kind: containerread.PathUnknown,
		Files: map[string]*containerread.VerifiedFile{"a": {Path: "a", Mode: -1, Size: 1, Data: []byte("1"), HasData: true}}}}}
	cases := []struct {
		name      string
		it        Use
		obj       Object
		obs       *containerread.Verified
		want      StateCause
		permanent bool
	}{
		{"projected volume whose files a later unread Secret may shadow: pending, the wait goes on", proj, unread.Object(proj.Key()), volObs, "", false},
		{"the same, immutable: the kubelet writes no more", proj, immutableObj, volObs, CauseSecretsNotRead, true},
		{"envFrom that an unread Secret may override", envFrom, unread.Object(envFrom.Key()), envObs, CauseSecretsNotRead, true},
		{"exec forbidden", plain, cm, &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyForbidden, Message: "nope"}}, CauseExecForbidden, true},
		{"no shell at all", plain, cm, &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyNoShell, Message: "no sh"}}, CauseNoShell, true},
		{"no shell, files cannot be listed", plain, cm, noListing, CauseNoShell, true},
		{"exec timed out", plain, cm, &containerread.Verified{Err: &containerread.VerifyError{Reason: containerread.VerifyTimeout, Message: "slow"}}, CauseExecTimeout, false},
		{"in sync", plain, cm, atomicObs(map[string]string{"a": "1"}), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pod
			if c.it.Mode == ModeVolume {
				p = simple
			}
			got := CompareUse(c.it, p, c.obj, c.obs, CompareOptions{Now: testNow, Object: unread.Object})
			if got.Cause != c.want || got.Cause.Permanent() != c.permanent {
				t.Errorf("%s (%s): cause %q (permanent %v), want %q (permanent %v)", got.State, got.Reason, got.Cause, got.Cause.Permanent(), c.want, c.permanent)
			}
			if (got.State == StateUnverifiable) != (got.Cause != "") {
				t.Errorf("state %s with cause %q", got.State, got.Cause)
			}
		})
	}

	// precheck: a volume the kubelet cannot write, a container not running
	bad := volItem(ModeItems, "/etc/cfg")
	bad.KeyPaths = []KeyPath{{Key: "a", Path: "../escape"}}
	if got, _ := precheck(bad, runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}), inputsFor(bad, cm)); got.Cause != CauseVolumeNotWritable || !got.Cause.Permanent() {
		t.Errorf("bad items path: %s (%s) cause %q, want %q", got.State, got.Reason, got.Cause, CauseVolumeNotWritable)
	}
	waiting := runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}})
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	if got, _ := precheck(plain, waiting, inputsFor(plain, cm)); got.Cause != CauseNotRunning || got.Cause.Permanent() {
		t.Errorf("crashlooping: %s (%s) cause %q, want %q", got.State, got.Reason, got.Cause, CauseNotRunning)
	}

	// Verify copies the cause into the item (the json field stateCause).
	snap := secretSnapshot(false)
	snap.Pods = []corev1.Pod{*pod}
	sec := Use{Object: ObjectRef{Kind: KindSecret, Namespace: "ns", Name: "creds"}, Pod: PodRef{Name: "p"},
		Container: &ContainerRef{Name: "c", Type: ContainerRegular}, Mode: ModeEnvFrom, Verdict: VerdictRestartNeeded}
	items := Verify(t.Context(), []Use{sec}, snap, nil, VerifyOptions{})
	if items[0].State != StateUnverifiable || items[0].StateCause != CauseSecretsNotRead {
		t.Errorf("Secret not read: %s cause %q (%s)", items[0].State, items[0].StateCause, items[0].StateReason)
	}
}
