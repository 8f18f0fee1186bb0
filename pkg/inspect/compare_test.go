package inspect

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
)

var testNow = time.Date(2024, 5, 6, 7, 10, 0, 0, time.UTC)

func runningPod(name string, spec corev1.PodSpec) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, c := range spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: running})
	}
	for _, c := range spec.InitContainers {
		st := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
		if c.RestartPolicy != nil {
			st = running
		}
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: st})
	}
	return p
}

// configMapVolumePod runs container "c" with configMap volume "v".
func configMapVolumePod() *corev1.Pod {
	return runningPod("p", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}})
}

func volItem(mode Mode, mountPath string) Use {
	return Use{Object: ObjectRef{Kind: KindConfigMap, Namespace: "ns", Name: "cm", Exists: true},
		Pod: PodRef{Name: "p", Phase: "Running"}, Container: &ContainerRef{Name: "c", Type: ContainerRegular},
		Mode: mode, Volume: &VolumeRef{Name: "v", MountPath: mountPath}, Verdict: VerdictHotUpdate}
}

func cmWith(data map[string]string, changed time.Time) Object {
	o := cmObject(data, nil)
	o.LastChange = changed
	return o
}

func atomicObs(files map[string]string) *containerread.Verified {
	op := &containerread.VerifiedPath{Kind: containerread.PathAtomic, Target: readtest.TS, Listed: true, Files: map[string]*containerread.VerifiedFile{}}
	for p, c := range files {
		op.Files[p] = &containerread.VerifiedFile{Path: p, Mode: 0o644, Size: int64(len(c)), Data: []byte(c), HasData: true}
	}
	return &containerread.Verified{Paths: map[string]*containerread.VerifiedPath{"/etc/cfg": op}}
}
