package inspect

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzUses: the pod spec walker over any pod (JSON bytes) never panics, and
// every use it returns by a container names a container of the pod (a
// regular, init or ephemeral one); a use by no container is an unmounted
// volume; useCount counts exactly what Uses returns.
func FuzzUses(f *testing.F) {
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","volumeMounts":[{"name":"v","mountPath":"/x","subPathExpr":"$(A)"}],` +
		`"env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"c","key":"k"}}}],"envFrom":[{"configMapRef":{"name":"c"}},{"secretRef":{"name":"s"}}]}],` +
		`"initContainers":[{"name":"i","restartPolicy":"Always","volumeMounts":[{"name":"p","mountPath":"/p"}]}],` +
		`"volumes":[{"name":"v","configMap":{"name":"c","items":[{"key":"k","path":"a/b"}]}},{"name":"p","projected":{"sources":[{"configMap":{"name":"c"}},{"secret":{"name":"s"}}]}},{"name":"u","secret":{"secretName":"s"}}]}}`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","volumeMounts":[{"name":"missing","mountPath":"/x"},{"name":"v","mountPath":"/y","subPath":"k"}]}],"volumes":[{"name":"v","configMap":{}},{"name":"v","secret":{}}]},"status":{"containerStatuses":[{"name":"zzz"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return
		}
		names := map[string]bool{}
		for _, c := range pod.Spec.Containers {
			names[c.Name] = true
		}
		for _, c := range pod.Spec.InitContainers {
			names[c.Name] = true
		}
		for _, c := range pod.Spec.EphemeralContainers {
			names[c.Name] = true
		}
		uses := Uses(&pod)
		checkUseCount(t, &pod, uses)
		for _, it := range uses {
			if it.Mode == "" || it.Object.Kind == "" {
				t.Fatalf("use without a mode or an object kind: %+v", it)
			}
			if it.Mode == ModeUnmounted {
				continue
			}
			if it.Container == nil || !names[it.Container.Name] {
				t.Fatalf("use %+v names container %v, which the pod does not have", it, it.Container)
			}
		}
	})
}

// checkUseCount: useCount counts what Uses returns, with every object kept
// and with the Secrets left out.
func checkUseCount(t *testing.T, pod *corev1.Pod, uses []Use) {
	t.Helper()
	if n := useCount(pod, func(ObjectKey) bool { return true }); n != len(uses) {
		t.Fatalf("pod %s: useCount = %d, Uses returned %d", pod.Name, n, len(uses))
	}
	noSecrets := func(k ObjectKey) bool { return k.Kind != KindSecret }
	want := 0
	for _, it := range uses {
		if noSecrets(it.Key()) {
			want++
		}
	}
	if n := useCount(pod, noSecrets); n != want {
		t.Fatalf("pod %s without Secrets: useCount = %d, Uses kept %d", pod.Name, n, want)
	}
}
