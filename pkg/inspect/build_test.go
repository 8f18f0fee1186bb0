package inspect

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildRow renders the sort key, verdict and workload of a report row.
func buildRow(it Use) string {
	where := ""
	if it.Volume != nil {
		where = it.Volume.Name + ":" + it.Volume.MountPath
	} else if it.EnvName != "" {
		where = "$" + it.EnvName
	}
	return strings.TrimRight(fmt.Sprintf("%s %s/%s pod=%s c=%s %s %s %s w=%s/%s", it.Object.Namespace, strings.ToLower(it.Object.Kind), it.Object.Name,
		it.Pod.Name, it.ContainerName(), it.Mode, where, it.Verdict, it.Workload.Kind, it.Workload.Name), " ")
}

// buildObjects lists the distinct objects of the rows in order, with the
// number of rows of each: "shop configmap/app-config 27".
func buildObjects(items []Use) []string {
	var out []string
	n := 0
	for i, it := range items {
		n++
		if i+1 == len(items) || items[i+1].Key() != it.Key() {
			out = append(out, fmt.Sprintf("%s %s/%s %d", it.Object.Namespace, strings.ToLower(it.Object.Kind), it.Object.Name, n))
			n = 0
		}
	}
	return out
}

func cmKey(ns, name string) ObjectKey     { return ObjectKey{KindConfigMap, ns, name} }
func secretKey(ns, name string) ObjectKey { return ObjectKey{KindSecret, ns, name} }

// TestBuildFilters: which objects a report shows for each option.
func TestBuildFilters(t *testing.T) {
	snap := statusSnapshot(t)
	// Per namespace: objects with a required problem first, objects whose
	// rows are all optional and missing last.
	problems := []string{
		"owners configmap/settings 12",
		"shop configmap/app-config 27",
		"shop configmap/ghost-config 2",
		"shop configmap/nested-config 6",
		"shop configmap/partial 5",
	}
	fine := []string{"shop configmap/frozen 3"}
	optional := []string{"shop configmap/maybe-config 2"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	consumed := join(problems, fine, optional)
	cases := []struct {
		name string
		opts BuildOptions
		want []string
	}{
		{"default: ConfigMaps with consumers; no Secrets, no kube-root-ca.crt", BuildOptions{}, consumed},
		{"secrets", BuildOptions{Secrets: true}, join(problems, []string{"shop secret/db-creds 10"}, fine, optional, []string{"shop secret/ghost-secret 1"})},
		{"include system", BuildOptions{IncludeSystem: true}, join(problems, fine, []string{"shop configmap/kube-root-ca.crt 1"}, optional)},
		{"unused: one row per object no pod consumes", BuildOptions{Unused: true},
			join([]string{"other configmap/app-config 1"}, problems, fine, []string{"shop configmap/orphan 1"}, optional)},
		{"unused with secrets", BuildOptions{Unused: true, Secrets: true},
			join([]string{"other configmap/app-config 1"}, problems, []string{"shop secret/db-creds 10"}, fine, []string{"shop configmap/orphan 1", "shop secret/unused-secret 1"}, optional, []string{"shop secret/ghost-secret 1"})},
		{"a name", BuildOptions{Names: []ObjectKey{cmKey("shop", "frozen")}}, []string{"shop configmap/frozen 3"}},
		{"a name in another namespace", BuildOptions{Names: []ObjectKey{cmKey("other", "app-config")}}, []string{"other configmap/app-config 1"}},
		{"a Secret by name, without --secrets", BuildOptions{Names: []ObjectKey{secretKey("shop", "db-creds")}}, []string{"shop secret/db-creds 10"}},
		{"kube-root-ca.crt by name", BuildOptions{Names: []ObjectKey{cmKey("shop", "kube-root-ca.crt")}}, []string{"shop configmap/kube-root-ca.crt 1"}},
		{"an unused name gets its row without --unused", BuildOptions{Names: []ObjectKey{cmKey("shop", "orphan"), cmKey("shop", "frozen")}},
			[]string{"shop configmap/frozen 3", "shop configmap/orphan 1"}},
		{"a missing name with consumers", BuildOptions{Names: []ObjectKey{cmKey("shop", "ghost-config")}}, []string{"shop configmap/ghost-config 2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, err := Build(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := buildObjects(items); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("objects:\n got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
			for _, it := range items {
				if it.Verdict == "" || it.Reason == "" {
					t.Errorf("%s: no verdict or reason", buildRow(it))
				}
				if it.Verdict != VerdictUnused && it.Workload.Kind == "" {
					t.Errorf("%s: no workload", buildRow(it))
				}
			}
		})
	}
}

// TestBuildUnusedRow: the row of an object no pod consumes.
func TestBuildUnusedRow(t *testing.T) {
	snap := statusSnapshot(t)
	items, err := Build(snap, BuildOptions{Names: []ObjectKey{cmKey("shop", "orphan")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 {
		t.Fatalf("got %d rows, want 1", len(items))
	}
	it := items[0]
	want := ObjectRef{Kind: KindConfigMap, Namespace: "shop", Name: "orphan", Exists: true}
	lc := it.Object.LastChange
	it.Object.LastChange = nil
	if it.Object != want || lc == nil || !lc.Time.Equal(time.Date(2024, 5, 4, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("object = %+v (last change %v), want %+v", it.Object, lc, want)
	}
	if it.Verdict != VerdictUnused || it.Reason != "no pod consumes it (it may be read through the API)" {
		t.Errorf("verdict, reason = %s, %q", it.Verdict, it.Reason)
	}
	if it.Pod != (PodRef{}) || it.Container != nil || it.Workload != (WorkloadRef{}) || it.Mode != "" || it.Volume != nil || it.Delay != nil {
		t.Errorf("an unused row names no consumer: %+v", it)
	}
}

// TestBuildNotFound: a named object that neither exists nor has consumers.
func TestBuildNotFound(t *testing.T) {
	snap := statusSnapshot(t)
	cases := []struct {
		names []ObjectKey
		want  string
	}{
		{[]ObjectKey{cmKey("shop", "x")}, `configmap "x" not found in namespace "shop"`},
		{[]ObjectKey{cmKey("shop", "frozen"), cmKey("y", "x")}, `configmap "x" not found in namespace "y"`},
		{[]ObjectKey{secretKey("shop", "nope")}, `secret "nope" not found in namespace "shop"`},
		{[]ObjectKey{cmKey("owners", "app-config")}, `configmap "app-config" not found in namespace "owners"`},
	}
	for _, tc := range cases {
		items, err := Build(snap, BuildOptions{Names: tc.names})
		var nf *NotFoundError
		if !errors.As(err, &nf) || err.Error() != tc.want || items != nil {
			t.Errorf("Build(%v) = %d rows, %v; want *NotFoundError %q", tc.names, len(items), err, tc.want)
		}
	}
}

// TestBuildOrder: rows sort by namespace, objects with a required problem
// first, kind (ConfigMap first), name, required problems first and optional
// missing rows last, pod, container, mode (volume, items, projected, subPath, subPathExpr, env,
// envFrom, unmounted), then volume and mount path or variable name.
func TestBuildOrder(t *testing.T) {
	snap := statusSnapshot(t)
	// Reverse the pods: the order must not depend on the LIST order.
	for i, j := 0, len(snap.Pods)-1; i < j; i, j = i+1, j-1 {
		snap.Pods[i], snap.Pods[j] = snap.Pods[j], snap.Pods[i]
	}
	items, err := Build(snap, BuildOptions{Names: []ObjectKey{cmKey("shop", "app-config"), cmKey("shop", "nested-config")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"shop configmap/app-config pod=env-pod c=app env $LOGO missing w=Pod/env-pod",
		"shop configmap/app-config pod=env-pod c=app env $LOG_LEVEL restart-needed w=Pod/env-pod",
		"shop configmap/app-config pod=env-pod c=app envFrom  restart-needed w=Pod/env-pod",
		"shop configmap/app-config pod=kc-nottl-pod c=app volume cfg:/etc/app hot-update w=Pod/kc-nottl-pod",
		"shop configmap/app-config pod=kc-pod c=app volume cfg:/etc/app hot-update w=Pod/kc-pod",
		"shop configmap/app-config pod=kinds-pod c=debugger env $LOG_LEVEL restart-needed w=Pod/kinds-pod",
		"shop configmap/app-config pod=kinds-pod c=init envFrom  restart-needed w=Pod/kinds-pod",
		"shop configmap/app-config pod=kinds-pod c=main volume cfg:/etc/app hot-update w=Pod/kinds-pod",
		"shop configmap/app-config pod=kinds-pod c=sidecar volume cfg:/etc/app hot-update w=Pod/kinds-pod",
		"shop configmap/app-config pod=projected-pod c=app projected bundle:/etc/bundle hot-update w=Pod/projected-pod",
		"shop configmap/app-config pod=projected-subpath-pod c=app subPath bundle:/etc/app.yaml restart-needed w=Pod/projected-subpath-pod",
		"shop configmap/app-config pod=projected-subpath-pod c=app subPath bundle:/etc/nothing restart-needed w=Pod/projected-subpath-pod",
		"shop configmap/app-config pod=projected-subpath-pod c=app subPath bundle:/etc/secrets not-mounted w=Pod/projected-subpath-pod",
		"shop configmap/app-config pod=projected-subpath-pod c=app subPath bundle:/etc/token not-mounted w=Pod/projected-subpath-pod",
		"shop configmap/app-config pod=secret-pod c= unmounted spare: not-mounted w=Pod/secret-pod",
		"shop configmap/app-config pod=subpath-pod c=app subPath cfg:/etc/app.yaml restart-needed w=Pod/subpath-pod",
		"shop configmap/app-config pod=subpath-pod c=app subPath cfg:/etc/empty restart-needed w=Pod/subpath-pod",
		"shop configmap/app-config pod=subpathexpr-pod c=app subPathExpr cfg:/etc/empty-var restart-needed w=Pod/subpathexpr-pod",
		"shop configmap/app-config pod=subpathexpr-pod c=app subPathExpr cfg:/etc/file-env restart-needed w=Pod/subpathexpr-pod",
		"shop configmap/app-config pod=subpathexpr-pod c=app subPathExpr cfg:/etc/file-field restart-needed w=Pod/subpathexpr-pod",
		"shop configmap/app-config pod=subpathexpr-pod c=app subPathExpr cfg:/etc/unresolved restart-needed w=Pod/subpathexpr-pod",
		"shop configmap/app-config pod=subpathexpr-pod c=app env $FROM_CM restart-needed w=Pod/subpathexpr-pod",
		"shop configmap/app-config pod=ttl-pod c=app volume cfg:/etc/app hot-update w=Pod/ttl-pod",
		"shop configmap/app-config pod=unmounted-pod c= unmounted cfg: not-mounted w=Pod/unmounted-pod",
		"shop configmap/app-config pod=unscheduled-pod c=app volume cfg:/etc/app hot-update w=Pod/unscheduled-pod",
		"shop configmap/app-config pod=volume-pod c=app volume cfg:/etc/app hot-update w=Pod/volume-pod",
		"shop configmap/app-config pod=env-pod c=app env $OPT_LOGO missing w=Pod/env-pod",
		"shop configmap/nested-config pod=subpath-pod c=app subPath nested:/etc/conf.d breaks-on-change w=Pod/subpath-pod",
		"shop configmap/nested-config pod=subpathexpr-pod c=app subPathExpr nested:/etc/dir-env breaks-on-change w=Pod/subpathexpr-pod",
		"shop configmap/nested-config pod=subpathexpr-pod c=app subPathExpr nested:/etc/dir-field breaks-on-change w=Pod/subpathexpr-pod",
		"shop configmap/nested-config pod=items-pod c=app items nested:/etc/nested hot-update w=Pod/items-pod",
		"shop configmap/nested-config pod=subpath-pod c=app subPath nested:/etc/a.conf restart-needed w=Pod/subpath-pod",
		"shop configmap/nested-config pod=unmounted-pod c= unmounted nested: not-mounted w=Pod/unmounted-pod",
	}
	var got []string
	for _, it := range items {
		got = append(got, buildRow(it))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestSortItems: namespace, then ConfigMap before Secret, then name.
func TestSortItems(t *testing.T) {
	row := func(ns, kind, name, pod string) Use {
		return Use{Object: ObjectRef{Kind: kind, Namespace: ns, Name: name}, Pod: PodRef{Name: pod}}
	}
	items := []Use{
		row("b", KindConfigMap, "a", "p"),
		row("a", KindSecret, "a", "p"),
		row("a", KindConfigMap, "z", "p"),
		row("a", KindConfigMap, "z", ""),
		row("a", KindConfigMap, "b", "q"),
	}
	SortItems(items)
	var got []string
	for _, it := range items {
		got = append(got, it.Object.Namespace+"/"+it.Object.Kind+"/"+it.Object.Name+"/"+it.Pod.Name)
	}
	want := "a/ConfigMap/b/q a/ConfigMap/z/ a/ConfigMap/z/p a/Secret/a/p b/ConfigMap/a/p"
	if strings.Join(got, " ") != want {
		t.Errorf("order = %s, want %s", strings.Join(got, " "), want)
	}
}

// TestBuildWorkloads: Build fills the workload of every row from the
// pod's owners.
func TestBuildWorkloads(t *testing.T) {
	snap := statusSnapshot(t)
	items, err := Build(snap, BuildOptions{Names: []ObjectKey{cmKey("owners", "settings")}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]WorkloadRef{}
	for _, it := range items {
		got[it.Pod.Name] = it.Workload
	}
	for pod, want := range map[string]WorkloadRef{
		"web-5d8f-abcde":  {Kind: "Deployment", Name: "web"},
		"backup-28610-k9": {Kind: "CronJob", Name: "backup"},
		"canary-6c9-aaa":  {Kind: "Rollout", Name: "canary", APIVersion: "argoproj.io/v1alpha1"},
		"bare":            {Kind: "Pod", Name: "bare"},
	} {
		if got[pod] != want {
			t.Errorf("%s: workload %+v, want %+v", pod, got[pod], want)
		}
	}
}

// TestBuildSkipsTerminatedPods: Succeeded and Failed pods read nothing any
// more: no rows, hence no verdict and no --check failure for them.
func TestBuildSkipsTerminatedPods(t *testing.T) {
	mk := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "a"}}}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	snap := &Snapshot{Pods: []corev1.Pod{mk("done", corev1.PodSucceeded), mk("crashed", corev1.PodFailed), mk("live", corev1.PodRunning)}}
	items, err := Build(snap, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Pod.Name == "done" || it.Pod.Name == "crashed" {
			t.Errorf("row for terminated pod %s: %s", it.Pod.Name, it.Verdict)
		}
	}
	if len(items) != 1 || items[0].Pod.Name != "live" || items[0].Verdict != VerdictMissing {
		t.Errorf("want the live pod's missing row only, got %d rows", len(items))
	}
}

// TestSortItemsShuffled: the order of every fixture use (Secrets included)
// does not depend on the input order, and uses that compare equal keep
// theirs (the sort moves a permutation of indexes, cycle by cycle).
func TestSortItemsShuffled(t *testing.T) {
	snap := statusSnapshot(t)
	sorted, err := Build(snap, BuildOptions{Secrets: true, IncludeSystem: true, Unused: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sorted) < 20 {
		t.Fatalf("only %d fixture uses", len(sorted))
	}
	rows := func(items []Use) string {
		var out []string
		for _, it := range items {
			out = append(out, buildRow(it)+" "+it.Reason)
		}
		return strings.Join(out, "\n")
	}
	want := rows(sorted)
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		items := slices.Clone(sorted)
		r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		SortItems(items)
		if got := rows(items); got != want {
			t.Fatalf("round %d: shuffled order sorts to:\n%s\nwant:\n%s", round, got, want)
		}
	}
	// equal keys: the input order stays
	eq := []Use{sorted[0], sorted[0], sorted[0]}
	for i, reason := range []string{"first", "second", "third"} {
		eq[i].Reason = reason
	}
	eq = append([]Use{sorted[len(sorted)-1]}, eq...)
	SortItems(eq)
	var got []string
	for _, it := range eq[:3] {
		got = append(got, it.Reason)
	}
	if strings.Join(got, " ") != "first second third" {
		t.Errorf("equal uses reordered: %v", got)
	}
}

// A Builder fed the pods one at a time makes Build's report, across the
// chunks it keeps its items in (more items than one chunk holds here).
func TestBuilderMatchesBuildAcrossChunks(t *testing.T) {
	snap := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("cm-%d", i)
		snap.ConfigMaps[ObjectKey{KindConfigMap, "ns", name}] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"k": "v"}}
	}
	for p := 0; p < 2*chunkItems/3+7; p++ {
		var env []corev1.EnvVar
		for i := 0; i < 3; i++ {
			env = append(env, corev1.EnvVar{Name: fmt.Sprintf("E%d", i), ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%d", (p+i)%4)}, Key: "k"}}})
		}
		snap.Pods = append(snap.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%05d", p)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: env}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	o := BuildOptions{Names: []ObjectKey{{KindConfigMap, "ns", "cm-0"}, {KindConfigMap, "ns", "cm-1"}, {KindConfigMap, "ns", "cm-3"}}}
	want, err := Build(snap, o)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(snap, o)
	for i := range snap.Pods {
		b.Add(&snap.Pods[i])
	}
	got, err := b.Items()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= chunkItems {
		t.Fatalf("%d items: the test must fill more than one chunk of %d", len(want), chunkItems)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the Builder's %d items differ from Build's %d", len(got), len(want))
	}
}
