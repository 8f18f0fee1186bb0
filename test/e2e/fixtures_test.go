//go:build e2e

package e2e

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fixture builders. Every pod: local image, never pulled; dnsPolicy Default
// (the cluster has no DNS); 1 s grace period so that namespaces go fast.

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func secret(name string, stringData map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: stringData}
}

// busybox is a container that sleeps (PID 1: the process whose environment
// environ reads).
func busybox(name string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           imageBusybox,
		ImagePullPolicy: corev1.PullNever,
		Command:         []string{"sleep", "1000000"},
	}
}

func podSpec(containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		Containers:                    containers,
		DNSPolicy:                     corev1.DNSDefault,
		TerminationGracePeriodSeconds: ptr(int64(1)),
		RestartPolicy:                 corev1.RestartPolicyAlways,
	}
}

func pod(name string, spec corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}, Spec: spec}
}

func withMounts(c corev1.Container, m ...corev1.VolumeMount) corev1.Container {
	c.VolumeMounts = append(c.VolumeMounts, m...)
	return c
}

func withEnv(c corev1.Container, e ...corev1.EnvVar) corev1.Container {
	c.Env = append(c.Env, e...)
	return c
}

func withVolumes(s corev1.PodSpec, v ...corev1.Volume) corev1.PodSpec {
	s.Volumes = append(s.Volumes, v...)
	return s
}

func mount(volume, path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: volume, MountPath: path}
}

func subPathMount(volume, path, subPath string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: volume, MountPath: path, SubPath: subPath}
}

func cmVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}
}

func cmItemsVolume(name, configMap string, items ...corev1.KeyToPath) corev1.Volume {
	v := cmVolume(name, configMap)
	v.ConfigMap.Items = items
	return v
}

func optionalCMVolume(name, configMap string) corev1.Volume {
	v := cmVolume(name, configMap)
	v.ConfigMap.Optional = ptr(true)
	return v
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func cmEnv(name, configMap, key string, optional *bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key, Optional: optional}}}
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func cmEnvFrom(configMap, prefix string) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}
}
