package refresh

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// use builds one observed use for the planner.
func use(pod, workloadKind, workload string, mode inspect.Mode, verdict inspect.Verdict, state inspect.State) inspect.Use {
	return inspect.Use{
		Object:    inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cm", Exists: true},
		Pod:       inspect.PodRef{Name: pod, Node: "n1", Phase: "Running"},
		Container: &inspect.ContainerRef{Name: "c", Type: inspect.ContainerRegular},
		Workload:  inspect.WorkloadRef{Kind: workloadKind, Name: workload},
		Mode:      mode, Verdict: verdict, State: state,
	}
}

func summary(actions []Action) string {
	var parts []string
	for _, a := range actions {
		parts = append(parts, string(a.Action)+" "+a.Target.String())
	}
	return strings.Join(parts, "; ")
}

func TestPlan(t *testing.T) {
	deploy := map[WorkloadKey]WorkloadInfo{
		{"Deployment", "ns", "web"}:   {Exists: true},
		{"Deployment", "ns", "held"}:  {Exists: true, Paused: true},
		{"StatefulSet", "ns", "db"}:   {Exists: true, Partition: 2},
		{"DaemonSet", "ns", "agent"}:  {Exists: true, OnDelete: true},
		{"StatefulSet", "ns", "db2"}:  {Exists: true},
		{"Deployment", "ns", "other"}: {Exists: true},
	}
	hotPending := func(pod, kind, name string) inspect.Use {
		return use(pod, kind, name, inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
	}
	envStale := func(pod, kind, name string) inspect.Use {
		return use(pod, kind, name, inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
	}
	immutableStale := envStale("web-1", "Deployment", "web")
	immutableStale.Object.Immutable = true
	immutableStale.Verdict = inspect.VerdictNeverChanges
	secondCM := envStale("web-2", "Deployment", "web")
	secondCM.Object.Name = "cm2"
	ephemeralEnv := envStale("web-1", "Deployment", "web")
	ephemeralEnv.Container = &inspect.ContainerRef{Name: "debugger", Type: inspect.ContainerEphemeral}
	missingRequired := use("web-1", "Deployment", "web", inspect.ModeEnv, inspect.VerdictMissing, inspect.StateMissing)

	tests := []struct {
		name     string
		items    []inspect.Use
		strategy Strategy
		observed bool
		want     string
	}{
		{"pending volume is annotated", []inspect.Use{hotPending("web-1", "Deployment", "web")}, StrategyAuto, true, "annotate pod/web-1"},
		{"in-sync volume needs nothing", []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StateInSync)}, StrategyAuto, true, "none pod/web-1"},
		{"current env needs nothing", []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)}, StrategyAuto, true, "none pod/web-1"},
		{"stale env restarts the deployment", []inspect.Use{envStale("web-1", "Deployment", "web")}, StrategyAuto, true, "restart deployment/web"},
		{"broken subPath restarts", []inspect.Use{use("db2-0", "StatefulSet", "db2", inspect.ModeSubPath, inspect.VerdictBreaksOnChange, inspect.StateBroken)}, StrategyAuto, true, "restart statefulset/db2"},
		{"two ConfigMaps and two pods give one restart", []inspect.Use{envStale("web-1", "Deployment", "web"), secondCM, hotPending("web-2", "Deployment", "web")}, StrategyAuto, true, "restart deployment/web"},
		{"annotate and restart in different workloads", []inspect.Use{envStale("web-1", "Deployment", "web"), hotPending("other-1", "Deployment", "other")}, StrategyAuto, true, "restart deployment/web; annotate pod/other-1"},
		{"bare pod with stale env is manual", []inspect.Use{envStale("solo", "Pod", "solo")}, StrategyAuto, true, "manual pod/solo"},
		{"paused deployment is manual", []inspect.Use{envStale("held-1", "Deployment", "held")}, StrategyAuto, true, "manual deployment/held"},
		{"OnDelete daemonset is manual", []inspect.Use{envStale("agent-x", "DaemonSet", "agent")}, StrategyAuto, true, "manual daemonset/agent"},
		{"partition spares ordinal 1", []inspect.Use{envStale("db-1", "StatefulSet", "db")}, StrategyAuto, true, "manual statefulset/db"},
		{"partition does not spare ordinal 2", []inspect.Use{envStale("db-2", "StatefulSet", "db")}, StrategyAuto, true, "restart statefulset/db"},
		{"job is manual", []inspect.Use{envStale("j-1", "Job", "j")}, StrategyAuto, true, "manual job/j"},
		{"cronjob is manual", []inspect.Use{envStale("cj-1", "CronJob", "cj")}, StrategyAuto, true, "manual cronjob/cj"},
		{"custom controller is manual", []inspect.Use{envStale("r-1", "Rollout", "r")}, StrategyAuto, true, "manual rollout/r"},
		{"re-created immutable is manual", []inspect.Use{immutableStale}, StrategyAuto, true, "manual deployment/web"},
		{"missing required key is manual on the pod", []inspect.Use{missingRequired}, StrategyAuto, true, "manual pod/web-1"},
		{"annotate strategy leaves stale env manual", []inspect.Use{envStale("web-1", "Deployment", "web"), hotPending("web-1", "Deployment", "web")}, StrategyAnnotate, true, "annotate pod/web-1; manual deployment/web"},
		{"restart strategy restarts even in-sync consumers", []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StateInSync)}, StrategyRestart, true, "restart deployment/web"},
		{"restart strategy restarts pending", []inspect.Use{hotPending("web-1", "Deployment", "web")}, StrategyRestart, true, "restart deployment/web"},
		{"without exec: annotate hot, manual env", []inspect.Use{
			use("web-1", "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, ""),
			use("web-1", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, "")}, StrategyAuto, false, "annotate pod/web-1; manual deployment/web"},
		{"unverifiable hot mount is annotated", []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeProjected, inspect.VerdictHotUpdate, inspect.StateUnverifiable)}, StrategyAuto, true, "annotate pod/web-1"},
		{"stale env in an ephemeral container never restarts the workload", []inspect.Use{ephemeralEnv}, StrategyAuto, true, "manual pod/web-1"},
		{"even with --strategy restart", []inspect.Use{ephemeralEnv}, StrategyRestart, true, "manual pod/web-1"},
		{"unverifiable env is manual", []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateUnverifiable)}, StrategyAuto, true, "manual deployment/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanActions(PlanInput{Items: tt.items, Workload: deploy, Strategy: tt.strategy, Verified: tt.observed})
			if s := summary(got); s != tt.want {
				t.Errorf("plan = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestPlanRestartCollectsPodsAndConsumers(t *testing.T) {
	items := []inspect.Use{
		use("web-1", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
		use("web-2", "Deployment", "web", inspect.ModeEnvFrom, inspect.VerdictRestartNeeded, inspect.StateStale),
		use("web-2", "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending),
	}
	got := PlanActions(PlanInput{Items: items, Workload: map[WorkloadKey]WorkloadInfo{{"Deployment", "ns", "web"}: {Exists: true}}, Strategy: StrategyAuto, Verified: true})
	if len(got) != 1 {
		t.Fatalf("want one action, got %s", summary(got))
	}
	if len(got[0].Consumers) != 3 || strings.Join(got[0].Pods, ",") != "web-1,web-2" {
		t.Errorf("restart covers consumers %v pods %v", got[0].Consumers, got[0].Pods)
	}
}

func TestPlanWarnsAboutDownwardAPIAnnotations(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "podinfo", VolumeSource: corev1.VolumeSource{
		DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}}}}}}
	items := []inspect.Use{use("web-1", "Deployment", "web", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)}
	got := PlanActions(PlanInput{Items: items, Pods: map[string]*corev1.Pod{PodKey("ns", "web-1"): pod}, Strategy: StrategyAuto, Verified: true})
	if len(got) != 1 || len(got[0].Warnings) != 1 || !strings.Contains(got[0].Warnings[0], `volume "podinfo" projects metadata.annotations`) {
		t.Fatalf("want a downwardAPI warning, got %+v", got)
	}
}

func TestOrdinal(t *testing.T) {
	for _, tt := range []struct {
		pod, set string
		n        int
		ok       bool
	}{{"db-0", "db", 0, true}, {"db-12", "db", 12, true}, {"db-x", "db", 0, false}, {"dbx-1", "db", 0, false}, {"db-", "db", 0, false}} {
		n, ok := ordinal(tt.pod, tt.set)
		if n != tt.n || ok != tt.ok {
			t.Errorf("ordinal(%q,%q) = %d,%v want %d,%v", tt.pod, tt.set, n, ok, tt.n, tt.ok)
		}
	}
}

// Consumers carry the use's identity: the same pod name in two namespaces
// gives two actions, two mounts of one ConfigMap in one container two
// consumers with their mount paths, and the pod's UID is kept.
func TestPlanConsumersCarryIdentity(t *testing.T) {
	mk := func(ns, uid, path string) inspect.Use {
		it := use("redis-0", "StatefulSet", "redis", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
		it.Object.Namespace, it.Pod.UID = ns, uid
		it.Volume = &inspect.VolumeRef{Name: "v" + path, MountPath: path}
		return it
	}
	got := PlanActions(PlanInput{Items: []inspect.Use{mk("prod", "u1", "/etc/a"), mk("prod", "u1", "/etc/b"), mk("staging", "u2", "/etc/a")}, Strategy: StrategyAuto, Verified: true})
	if len(got) != 2 || got[0].Target.Namespace != "prod" || got[1].Target.Namespace != "staging" {
		t.Fatalf("want one annotate per namespace, got %+v", got)
	}
	cs := got[0].Consumers
	if len(cs) != 2 || cs[0].MountPath != "/etc/a" || cs[1].MountPath != "/etc/b" || cs[0].PodUID != "u1" || cs[0].ID() == cs[1].ID() {
		t.Errorf("prod consumers %+v, want two with their mount paths and the pod UID", cs)
	}
	if id := got[1].Consumers[0].ID(); id.Namespace != "staging" || id.PodUID != "u2" {
		t.Errorf("staging consumer identity %+v", id)
	}
}

// A hot mount that can never be verified is annotated once; a second run,
// finding the pod annotated after the object's last change, does nothing.
func TestPlanDoesNotAnnotateAnUnverifiableMountTwice(t *testing.T) {
	last := metav1.NewTime(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	it := use("web-1", "Deployment", "web", inspect.ModeProjected, inspect.VerdictHotUpdate, inspect.StateUnverifiable)
	it.Object.LastChange = &last
	it.StateCause, it.StateReason = inspect.CauseSecretsNotRead, "Secret \"s\" was not read (add --secrets)"
	pod := func(annotated string) map[string]*corev1.Pod {
		p := &corev1.Pod{}
		if annotated != "" {
			p.Annotations = map[string]string{RefreshedAtAnnotation: annotated}
		}
		return map[string]*corev1.Pod{PodKey("ns", "web-1"): p}
	}
	for _, tt := range []struct {
		name, annotated string
		cause           inspect.StateCause
		want            string
	}{
		{"first run", "", inspect.CauseSecretsNotRead, "annotate pod/web-1"},
		{"annotated before the change", "2026-11-23T08:59:59.5Z", inspect.CauseSecretsNotRead, "annotate pod/web-1"},
		{"annotated in the second of the change", "2026-11-23T09:00:00.5Z", inspect.CauseSecretsNotRead, "annotate pod/web-1"},
		{"second run", "2026-11-23T09:00:05.123Z", inspect.CauseSecretsNotRead, "none pod/web-1"},
		{"second run, no shell", "2026-11-23T09:00:05.123Z", inspect.CauseNoShell, "none pod/web-1"},
		{"second run, but the cause may pass", "2026-11-23T09:00:05.123Z", inspect.CauseNotRunning, "annotate pod/web-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			it := it
			it.StateCause = tt.cause
			for _, s := range []Strategy{StrategyAuto, StrategyAnnotate} {
				got := PlanActions(PlanInput{Items: []inspect.Use{it}, Pods: pod(tt.annotated), Strategy: s, Verified: true})
				if summary(got) != tt.want {
					t.Errorf("--strategy %s: plan %q, want %q", s, summary(got), tt.want)
				}
				if tt.want == "none pod/web-1" && !strings.Contains(got[0].Reason, "cannot be verified (secrets-not-read") && tt.cause == inspect.CauseSecretsNotRead {
					t.Errorf("reason %q must say why", got[0].Reason)
				}
			}
		})
	}
}

func dbPods(n int) []WorkloadPod {
	var ps []WorkloadPod
	for i := 0; i < n; i++ {
		name := "db-" + string(rune('0'+i))
		ps = append(ps, WorkloadPod{Name: name, UID: "u-" + name, Labels: map[string]string{"app": "db", "statefulset.kubernetes.io/pod-name": name}})
	}
	return ps
}

// -l narrows what is observed, not what a restart replaces: the plan names
// every pod the rollout replaces and those -l does not select.
func TestPlanRestartNamesPodsBeyondTheSelector(t *testing.T) {
	sel, err := labels.Parse("statefulset.kubernetes.io/pod-name=db-2")
	if err != nil {
		t.Fatal(err)
	}
	stale := use("db-2", "StatefulSet", "db", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
	wl := map[WorkloadKey]WorkloadInfo{{"StatefulSet", "ns", "db"}: {Exists: true, Pods: dbPods(3)}}
	got := PlanActions(PlanInput{Items: []inspect.Use{stale}, Workload: wl, Strategy: StrategyAuto, Verified: true, Selector: sel})
	if summary(got) != "restart statefulset/db" {
		t.Fatalf("plan %q", summary(got))
	}
	a := got[0]
	if strings.Join(a.Pods, ",") != "db-0,db-1,db-2" || strings.Join(a.OutsideSelector, ",") != "db-0,db-1" {
		t.Errorf("pods %v outside -l %v, want db-0,db-1,db-2 and db-0,db-1", a.Pods, a.OutsideSelector)
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "also replaces pods db-0, db-1, which -l does not select") {
		t.Errorf("warnings %q", a.Warnings)
	}
	// without -l nothing is outside it
	got = PlanActions(PlanInput{Items: []inspect.Use{stale}, Workload: wl, Strategy: StrategyAuto, Verified: true, Selector: labels.Everything()})
	if len(got[0].OutsideSelector) != 0 || len(got[0].Warnings) != 0 {
		t.Errorf("no -l: outside %v warnings %v", got[0].OutsideSelector, got[0].Warnings)
	}
}

// A partitioned StatefulSet: the restart replaces only the ordinals at or
// above the partition, says which pods it spares, and a pending mount of a
// spared pod is annotated instead of waiting for a restart that never
// replaces it.
func TestPlanPartitionedStatefulSet(t *testing.T) {
	wl := map[WorkloadKey]WorkloadInfo{{"StatefulSet", "ns", "db"}: {Exists: true, Partition: 2, Pods: dbPods(3)}}
	items := []inspect.Use{
		use("db-2", "StatefulSet", "db", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
		use("db-0", "StatefulSet", "db", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending),
	}
	got := PlanActions(PlanInput{Items: items, Workload: wl, Strategy: StrategyAuto, Verified: true})
	if summary(got) != "restart statefulset/db; annotate pod/db-0" {
		t.Fatalf("plan %q, want the restart and an annotation of the spared pod", summary(got))
	}
	if strings.Join(got[0].Pods, ",") != "db-2" {
		t.Errorf("restart pods %v, want db-2 only", got[0].Pods)
	}
	if len(got[0].Warnings) != 1 || !strings.Contains(got[0].Warnings[0], "partition 2") || !strings.Contains(got[0].Warnings[0], "pods db-0, db-1 are not replaced") {
		t.Errorf("warnings %q", got[0].Warnings)
	}
}

// A consumer is hot (annotated) only when its verdict is hot-update: an init
// container's volume use is restart-needed (it read once), so an annotation
// cannot refresh it (it was taken for hot by its mode).
func TestPlanInitContainerVolumeIsNotAnnotated(t *testing.T) {
	wl := map[WorkloadKey]WorkloadInfo{{"Deployment", "ns", "web"}: {Exists: true}}
	initUse := func(state inspect.State) inspect.Use {
		it := use("web-1", "Deployment", "web", inspect.ModeVolume, inspect.VerdictRestartNeeded, state)
		it.Container = &inspect.ContainerRef{Name: "copy", Type: inspect.ContainerInit}
		return it
	}
	for _, tt := range []struct {
		name     string
		it       inspect.Use
		strategy Strategy
		observed bool
		want     string
	}{
		{"not observed, auto", initUse(""), StrategyAuto, false, "manual deployment/web"},
		{"stale, annotate", initUse(inspect.StateStale), StrategyAnnotate, true, "manual deployment/web"},
		{"unverifiable, auto", initUse(inspect.StateUnverifiable), StrategyAuto, true, "manual deployment/web"},
		{"stale, auto", initUse(inspect.StateStale), StrategyAuto, true, "restart deployment/web"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanActions(PlanInput{Items: []inspect.Use{tt.it}, Workload: wl, Strategy: tt.strategy, Verified: tt.observed})
			if s := summary(got); s != tt.want {
				t.Errorf("plan %q, want %q (reasons: %v)", s, tt.want, reasons(got))
			}
		})
	}
}

func reasons(actions []Action) []string {
	var r []string
	for _, a := range actions {
		r = append(r, a.Reason)
	}
	return r
}

// Job and CronJob reasons say what is true per use: a hot-updating mount of
// a running Job's pod follows the change by itself; env and subPath keep
// what they read.
func TestPlanJobReasonsPerMode(t *testing.T) {
	for _, tt := range []struct {
		kind, name string
		mode       inspect.Mode
		verdict    inspect.Verdict
		want, not  string
	}{
		{"Job", "j", inspect.ModeProjected, inspect.VerdictHotUpdate, "hot-updates by itself", "keep what they read"},
		{"Job", "j", inspect.ModeVolume, inspect.VerdictHotUpdate, "hot-updates by itself", "keep what they read"},
		{"CronJob", "cj", inspect.ModeProjected, inspect.VerdictHotUpdate, "hot-updates by itself", "keep what they read"},
		{"Job", "j", inspect.ModeEnv, inspect.VerdictRestartNeeded, "keeps what it read", "hot-updates"},
		{"CronJob", "cj", inspect.ModeSubPath, inspect.VerdictRestartNeeded, "keeps what it read", "hot-updates"},
	} {
		t.Run(tt.kind+" "+string(tt.mode), func(t *testing.T) {
			it := use("p-1", tt.kind, tt.name, tt.mode, tt.verdict, inspect.StateInSync)
			got := PlanActions(PlanInput{Items: []inspect.Use{it}, Strategy: StrategyRestart, Verified: true})
			if len(got) != 1 || got[0].Action != ActionManual {
				t.Fatalf("plan %q, want one manual action", summary(got))
			}
			if r := got[0].Reason; !strings.Contains(r, tt.want) || strings.Contains(r, tt.not) {
				t.Errorf("reason %q: want %q, not %q", r, tt.want, tt.not)
			}
		})
	}
}

// The planning split: pods whose every use is a hot-updating mount are
// annotated without a prior exec (their reason says the state was not
// observed); a pod with an env or subPath use, or a re-creatable immutable
// object, is observed first, and planned from what was seen.
func TestNeedsVerifyAndPlanWithoutVerifying(t *testing.T) {
	vol := use("vol-1", "Deployment", "vol", inspect.ModeVolume, inspect.VerdictHotUpdate, "")
	items := use("items-1", "Deployment", "items", inspect.ModeItems, inspect.VerdictHotUpdate, "")
	proj := use("proj-1", "Deployment", "proj", inspect.ModeProjected, inspect.VerdictHotUpdate, "")
	missing := use("miss-1", "Deployment", "miss", inspect.ModeVolume, inspect.VerdictMissing, "")
	mixedVol := use("mixed-1", "Deployment", "mixed", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
	mixedEnv := use("mixed-1", "Deployment", "mixed", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)
	sub := use("sub-1", "Deployment", "sub", inspect.ModeSubPath, inspect.VerdictRestartNeeded, inspect.StateStale)
	subDir := use("subdir-1", "Deployment", "subdir", inspect.ModeSubPath, inspect.VerdictBreaksOnChange, inspect.StateBroken)
	initVol := use("init-1", "Deployment", "init", inspect.ModeVolume, inspect.VerdictRestartNeeded, inspect.StateCurrent)
	initVol.Container = &inspect.ContainerRef{Name: "setup", Type: inspect.ContainerInit}
	immutable := use("imm-1", "Deployment", "imm", inspect.ModeVolume, inspect.VerdictNeverChanges, inspect.StateInSync)
	all := []inspect.Use{vol, items, proj, missing, mixedVol, mixedEnv, sub, subDir, initVol, immutable}
	need := NeedsVerify(all)
	for _, pod := range []string{"mixed-1", "sub-1", "subdir-1", "init-1", "imm-1"} {
		if !need[PodKey("ns", pod)] {
			t.Errorf("pod %s must be observed before planning", pod)
		}
	}
	for _, pod := range []string{"vol-1", "items-1", "proj-1", "miss-1"} {
		if need[PodKey("ns", pod)] {
			t.Errorf("pod %s needs no observation before planning", pod)
		}
	}
	notVerified := map[string]bool{}
	for _, it := range all {
		if k := PodKey("ns", it.Pod.Name); !need[k] {
			notVerified[k] = true
		}
	}
	workloads := map[WorkloadKey]WorkloadInfo{}
	for _, w := range []string{"sub", "subdir"} {
		workloads[WorkloadKey{"Deployment", "ns", w}] = WorkloadInfo{Exists: true}
	}
	for _, s := range []Strategy{StrategyAuto, StrategyAnnotate} {
		gone := use("gone-1", "Deployment", "vol", inspect.ModeVolume, inspect.VerdictHotUpdate, "")
		now := metav1.Now()
		pods := map[string]*corev1.Pod{PodKey("ns", "gone-1"): {ObjectMeta: metav1.ObjectMeta{Name: "gone-1", Namespace: "ns", DeletionTimestamp: &now}}}
		notVerified[PodKey("ns", "gone-1")] = true
		plan := PlanActions(PlanInput{Items: append(all, gone), Pods: pods, Strategy: s, Verified: true, NotVerified: notVerified, Workload: workloads})
		byTarget := map[string]Action{}
		for _, a := range plan {
			if _, seen := byTarget[a.Target.String()]; !seen { // annotate before none
				byTarget[a.Target.String()] = a
			}
		}
		for _, pod := range []string{"vol-1", "items-1", "proj-1"} {
			a := byTarget["pod/"+pod]
			if a.Action != ActionAnnotate || !strings.Contains(a.Reason, "state not observed") {
				t.Errorf("%s: pod %s: %s %q, want annotate saying the state was not observed", s, pod, a.Action, a.Reason)
			}
		}
		if a := byTarget["pod/mixed-1"]; a.Action != ActionAnnotate || !strings.Contains(a.Reason, "pending") {
			t.Errorf("%s: pod mixed-1: %s %q, want annotate because its mount was seen pending", s, a.Action, a.Reason)
		}
		if a := byTarget["pod/gone-1"]; a.Action != ActionNone || !strings.Contains(a.Reason, "terminating") {
			t.Errorf("%s: terminating pod gone-1: %s %q, want none (an annotation refreshes nothing)", s, a.Action, a.Reason)
		}
		if a := byTarget["pod/miss-1"]; a.Action != ActionManual {
			t.Errorf("%s: pod miss-1: %s, want manual (a required object is missing)", s, a.Action)
		}
		if a := byTarget["pod/init-1"]; a.Action != ActionNone {
			t.Errorf("%s: pod init-1: %s %q, want none (observed current)", s, a.Action, a.Reason)
		}
		if s == StrategyAuto {
			if a := byTarget["deployment/sub"]; a.Action != ActionRestart || !strings.Contains(a.Reason, "stale") {
				t.Errorf("auto: deployment/sub: %s %q, want restart (observed stale)", a.Action, a.Reason)
			}
		}
	}
}

// A Job's or CronJob's use whose state cannot be read is told what cmsync
// does for it whatever its state, not to use --strategy restart (which
// restarts no Job); a Deployment's keeps the hint, which works there.
func TestPlanUnreadableJobUseSaysWhatHappens(t *testing.T) {
	for _, tt := range []struct {
		kind, want, not string
		verified        bool
	}{
		{"Job", "the change reaches new Jobs only", "--strategy restart", true},
		{"Job", "the change reaches new Jobs only", "--strategy restart", false},
		{"CronJob", "the next scheduled run reads the new data", "--strategy restart", true},
		{"Deployment", "use --strategy restart", "Jobs", true},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			it := use("p-1", tt.kind, "w", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateUnverifiable)
			it.StateReason = "timeout: the exec did not finish in time"
			got := PlanActions(PlanInput{Items: []inspect.Use{it}, Strategy: StrategyAuto, Verified: tt.verified})
			if len(got) != 1 || got[0].Action != ActionManual {
				t.Fatalf("plan %q, want one manual action", summary(got))
			}
			if r := got[0].Reason; !strings.Contains(r, tt.want) || strings.Contains(r, tt.not) {
				t.Errorf("reason %q: want %q, not %q", r, tt.want, tt.not)
			}
		})
	}
}
