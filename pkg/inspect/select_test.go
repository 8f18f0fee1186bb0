package inspect

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectSnapshot: in namespace shop, Deployment web (through ReplicaSet
// web-5d8f) reads app-config by env and creds by volume; StatefulSet db
// and a Rollout's pod read app-config; a CronJob's pod reads jobs-config;
// bare pod toolbox reads app-config. A pod of another namespace has the
// same owner names.
func selectSnapshot() *Snapshot {
	ctrl := true
	owned := func(p *corev1.Pod, api, kind, name string) *corev1.Pod {
		p.Namespace = "shop"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, Controller: &ctrl}}
		return p
	}
	envFrom := func(kind, name string) corev1.PodSpec {
		src := corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		if kind == KindSecret {
			src = corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		}
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{src}}}}
	}
	web := envFrom(KindConfigMap, "app-config")
	web.Containers[0].EnvFrom = append(web.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}})
	other := owned(runningPod("web-5d8f-zzzzz", web), "apps/v1", "ReplicaSet", "web-5d8f")
	other.Namespace = "elsewhere"
	toolbox := runningPod("toolbox", envFrom(KindConfigMap, "app-config"))
	toolbox.Namespace = "shop"
	pods := []*corev1.Pod{
		owned(runningPod("web-5d8f-abcde", web), "apps/v1", "ReplicaSet", "web-5d8f"),
		owned(runningPod("web-5d8f-fghij", web), "apps/v1", "ReplicaSet", "web-5d8f"),
		owned(runningPod("db-0", envFrom(KindConfigMap, "app-config")), "apps/v1", "StatefulSet", "db"),
		owned(runningPod("canary-6c9-aaa", envFrom(KindConfigMap, "app-config")), "apps/v1", "ReplicaSet", "canary-6c9"),
		owned(runningPod("backup-1-x", envFrom(KindConfigMap, "jobs-config")), "batch/v1", "Job", "backup-1"),
		toolbox, other,
	}
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}, Secrets: map[ObjectKey]*corev1.Secret{}, SecretsListed: true,
		ReplicaSets: map[NamespacedName]*appsv1.ReplicaSet{
			{"shop", "web-5d8f"}:   {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: &ctrl}}}},
			{"shop", "canary-6c9"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "canary-6c9", OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary", Controller: &ctrl}}}},
		},
		Jobs: map[NamespacedName]*batchv1.Job{
			{"shop", "backup-1"}: {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "backup-1", OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "backup", Controller: &ctrl}}}},
		},
	}
	for _, p := range pods {
		s.Pods = append(s.Pods, *p)
	}
	for _, n := range []string{"app-config", "jobs-config"} {
		s.ConfigMaps[cmKey("shop", n)] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: n}}
	}
	s.Secrets[secretKey("shop", "creds")] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "creds"}}
	return s
}

func wk(kind, name string) WorkloadKey {
	w := WorkloadRef{Kind: kind, Name: name}
	if kind == "Rollout" {
		w.APIVersion = "argoproj.io/v1alpha1"
	}
	return WorkloadKey{Namespace: "shop", Workload: w}
}

// podsOf lists the distinct pod names of the rows, in order.
func podsOf(items []Use) []string {
	var out []string
	for _, it := range items {
		if !slices.Contains(out, it.Pod.Name) {
			out = append(out, it.Pod.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestBuildByWorkload: a workload selects the pods whose owner chain holds
// it (by group, kind, name and namespace), with every object they read;
// with objects named too, only those.
func TestBuildByWorkload(t *testing.T) {
	cases := []struct {
		name      string
		workloads []WorkloadKey
		names     []ObjectKey
		pods      []string
		objects   []string
	}{
		{"deployment through its ReplicaSet", []WorkloadKey{wk("Deployment", "web")}, nil,
			[]string{"web-5d8f-abcde", "web-5d8f-fghij"}, []string{"shop configmap/app-config 2", "shop secret/creds 2"}},
		{"the ReplicaSet itself", []WorkloadKey{wk("ReplicaSet", "web-5d8f")}, nil,
			[]string{"web-5d8f-abcde", "web-5d8f-fghij"}, []string{"shop configmap/app-config 2", "shop secret/creds 2"}},
		{"statefulset", []WorkloadKey{wk("StatefulSet", "db")}, nil, []string{"db-0"}, []string{"shop configmap/app-config 1"}},
		{"Argo Rollout, by group", []WorkloadKey{wk("Rollout", "canary")}, nil, []string{"canary-6c9-aaa"}, []string{"shop configmap/app-config 1"}},
		{"Rollout of another group is not it", []WorkloadKey{{Namespace: "shop", Workload: WorkloadRef{Kind: "Rollout", Name: "canary", APIVersion: "example.com/v1"}}}, nil, nil, nil},
		{"cronjob through its job", []WorkloadKey{wk("CronJob", "backup")}, nil, []string{"backup-1-x"}, []string{"shop configmap/jobs-config 1"}},
		{"the job", []WorkloadKey{wk("Job", "backup-1")}, nil, []string{"backup-1-x"}, []string{"shop configmap/jobs-config 1"}},
		{"a pod", []WorkloadKey{wk("Pod", "toolbox")}, nil, []string{"toolbox"}, []string{"shop configmap/app-config 1"}},
		{"two workloads", []WorkloadKey{wk("StatefulSet", "db"), wk("Pod", "toolbox")}, nil, []string{"db-0", "toolbox"}, []string{"shop configmap/app-config 2"}},
		{"intersection with a named object", []WorkloadKey{wk("Deployment", "web")}, []ObjectKey{secretKey("shop", "creds")},
			[]string{"web-5d8f-abcde", "web-5d8f-fghij"}, []string{"shop secret/creds 2"}},
		{"a kind that is not the owner's", []WorkloadKey{wk("StatefulSet", "web")}, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sel []SelectedWorkload
			for _, k := range tc.workloads {
				sel = append(sel, SelectedWorkload{Key: k})
			}
			items, idle, err := BuildSelected(selectSnapshot(), BuildOptions{Workloads: sel, Names: tc.names, Secrets: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := podsOf(items); !slices.Equal(got, tc.pods) {
				t.Errorf("pods = %v, want %v", got, tc.pods)
			}
			if got := buildObjects(items); !slices.Equal(got, tc.objects) {
				t.Errorf("objects = %v, want %v", got, tc.objects)
			}
			if (len(tc.pods) == 0) != (len(idle) == len(sel)) {
				t.Errorf("idle = %v with pods %v", idle, tc.pods)
			}
		})
	}
}

// TestBuildIdleWorkload: a workload that runs no pod has rows from its
// template: no-pods for an object that exists, missing (as for a pod) for
// one that does not; it is reported idle, and the stream gives the same.
func TestBuildIdleWorkload(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}},
	}}}}
	sel := []SelectedWorkload{{Key: wk("Deployment", "api"), Template: &WorkloadTemplate{Kind: "Deployment", Namespace: "shop", Name: "api", State: "scaled to 0 replicas", Spec: spec}}}
	snap := selectSnapshot()
	items, idle, err := BuildSelected(snap, BuildOptions{Workloads: sel, Secrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(idle) != 1 || idle[0].Key != sel[0].Key {
		t.Errorf("idle = %v", idle)
	}
	var rows []string
	for _, it := range items {
		rows = append(rows, buildRow(it))
	}
	want := []string{
		"shop configmap/gone pod= c=app envFrom  missing w=Deployment/api",
		"shop configmap/app-config pod= c=   no-pods w=Deployment/api",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("rows =\n%v\nwant\n%v", rows, want)
	}
	if items[0].Reason != `ConfigMap "gone" does not exist; required, so the container cannot start until it is created` {
		t.Errorf("missing reason = %q", items[0].Reason)
	}
	if items[1].Reason != "no pod runs now (deployment/api, scaled to 0 replicas), but its pod template consumes this configmap (envFrom): its next pods read the current content" {
		t.Errorf("no-pods reason = %q", items[1].Reason)
	}
	// the same through the streaming Builder
	b := NewBuilder(snap, BuildOptions{Workloads: sel, Secrets: true})
	for i := range snap.Pods {
		b.Add(&snap.Pods[i])
	}
	streamed, _ := b.Items()
	if len(streamed) != 2 || len(b.Idle()) != 1 {
		t.Errorf("stream: %d rows, idle %v", len(streamed), b.Idle())
	}
}

// TestOwnerChain: each step Owner walks, the last being Owner's answer.
func TestOwnerChain(t *testing.T) {
	snap := selectSnapshot()
	got := OwnerChain(&snap.Pods[0], snap)
	want := []WorkloadRef{{Kind: "Pod", Name: "web-5d8f-abcde"}, {Kind: "ReplicaSet", Name: "web-5d8f"}, {Kind: "Deployment", Name: "web"}}
	if !slices.Equal(got, want) || Owner(&snap.Pods[0], snap) != want[2] {
		t.Errorf("chain = %v, want %v", got, want)
	}
}
