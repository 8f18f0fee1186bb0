package cmd

import (
	"fmt"
	"io"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// scaleSnapshot is the snapshot of hack/bench/scale.sh in memory: pods in
// 50 namespaces, 10 Deployments per namespace whose pods use 6 ConfigMaps
// and a Secret in every mode (volume, items, projected, subPath, env,
// envFrom, a sidecar).
func scaleSnapshot(pods int) *inspect.Snapshot {
	s := &inspect.Snapshot{ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{}, Secrets: map[inspect.ObjectKey]*corev1.Secret{},
		ReplicaSets: map[inspect.NamespacedName]*appsv1.ReplicaSet{}, Nodes: map[string]*corev1.Node{}}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	perDeployment := pods / 500
	for n := 0; n < 50; n++ {
		ns := fmt.Sprintf("cmsync-scale-%02d", n)
		for c := 0; c < 60; c++ {
			name := fmt.Sprintf("cm-%d", c)
			s.ConfigMaps[inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: ns, Name: name}] = &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: created},
				Data:       map[string]string{"key": "v", "app.properties": "a=1\n", "other": "x"}}
		}
		for d := 0; d < 10; d++ {
			c := d * 6
			rs := fmt.Sprintf("app-%d-5fc97f5599", d)
			s.ReplicaSets[inspect.NamespacedName{Namespace: ns, Name: rs}] = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rs, Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("app-%d", d), Controller: ptr(true)}}}}
			for p := 0; p < perDeployment; p++ {
				cm := func(i int) string { return fmt.Sprintf("cm-%d", c+i) }
				s.Pods = append(s.Pods, corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", rs, p), Namespace: ns, UID: types.UID(fmt.Sprintf("uid-%d-%d-%d", n, d, p)),
						OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, Controller: ptr(true)}}},
					Spec: corev1.PodSpec{NodeName: "cmsync-scale-no-kubelet",
						InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
							VolumeMounts: []corev1.VolumeMount{{Name: "whole", MountPath: "/etc/sidecar"}}}},
						Containers: []corev1.Container{{Name: "app",
							Env: []corev1.EnvVar{{Name: "KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: cm(4)}, Key: "key"}}}},
							EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm(5)}}}},
							VolumeMounts: []corev1.VolumeMount{{Name: "whole", MountPath: "/etc/whole"}, {Name: "items", MountPath: "/etc/items"},
								{Name: "projected", MountPath: "/etc/projected"}, {Name: "sub", MountPath: "/etc/app.properties", SubPath: "app.properties"}}}},
						Volumes: []corev1.Volume{
							{Name: "whole", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm(0)}}}},
							{Name: "items", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm(1)},
								Items: []corev1.KeyToPath{{Key: "key", Path: "key.txt"}}}}},
							{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
								{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: cm(2)}}},
								{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("secret-%d", d)}}}}}}},
							{Name: "sub", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm(3)}}}},
						}},
					Status: corev1.PodStatus{Phase: corev1.PodPending}})
			}
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// benchmarkStatus times what status does after the LISTs: Build, the
// redaction boundary and the output, for 10,000 pods (70,000 ConfigMap uses; the Secret ones need --secrets).
//
//	go test ./pkg/cmd/ -run '^$' -bench BenchmarkStatus -benchmem -cpuprofile /tmp/cpu.out
func benchmarkStatus(b *testing.B, pods int, o printOptions) {
	for b.Loop() {
		snap := scaleSnapshot(pods)
		items, err := inspect.Build(snap, inspect.BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(items) != pods*7 {
			b.Fatalf("%d uses, want %d", len(items), pods*7)
		}
		inspect.NewRedactor(snap).Redact(items)
		if err := printReport(io.Discard, items, o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStatusJSON1k(b *testing.B) {
	benchmarkStatus(b, 1000, printOptions{Format: "json", AllNamespaces: true})
}
func BenchmarkStatusJSON10k(b *testing.B) {
	benchmarkStatus(b, 10000, printOptions{Format: "json", AllNamespaces: true})
}
func BenchmarkStatusTable10k(b *testing.B) {
	benchmarkStatus(b, 10000, printOptions{AllNamespaces: true})
}
func BenchmarkStatusGrouped10k(b *testing.B) {
	benchmarkStatus(b, 10000, printOptions{AllNamespaces: true, GroupBy: groupByWorkload})
}
