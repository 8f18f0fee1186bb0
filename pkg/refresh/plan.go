// Package refresh makes the consumers of ConfigMaps and Secrets current with
// the least disruptive action. Refresher (refresher.go) is the one engine
// that `refresh` and the dashboard both run: Plan observes what the plan
// depends on, reads the workloads, plans (Plan in plan.go, pure) and
// refuses before anything is sent (--max-restarts, permissions, -l);
// Apply patches (apply.go) or evicts (evict.go), then waits until what it
// changed is verified current (wait.go). The cluster is behind one small
// interface per concern, each with its client-go adapter in a client_*.go
// file: workload reads and the one workload-pod listing, patches,
// evictions, rollout status, the verifying Verifier and access reviews.
package refresh

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Strategy chooses how consumers are refreshed.
type Strategy string

const (
	StrategyAuto     Strategy = "auto"
	StrategyAnnotate Strategy = "annotate"
	StrategyRestart  Strategy = "restart"
)

// Strategies lists the valid strategies.
var Strategies = []Strategy{StrategyAuto, StrategyAnnotate, StrategyRestart}

// ActionKind is one of the contract's actions.
type ActionKind string

const (
	ActionAnnotate ActionKind = "annotate"
	ActionRestart  ActionKind = "restart"
	ActionNone     ActionKind = "none"
	ActionManual   ActionKind = "manual"
)

// Annotations the actions set.
const (
	// RefreshedAtAnnotation is bumped on a Pod: the kubelet re-syncs the pod
	// at once and rewrites its configMap/secret/projected volumes.
	RefreshedAtAnnotation = "kubectl-cmsync.io/refreshed-at"
	// RestartedAtAnnotation is what `kubectl rollout restart` sets on the
	// pod template.
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
)

// Target is the object an action changes: a Pod (annotate) or a workload
// (restart); for manual and none it names what a person would act on.
type Target struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (t Target) String() string { return strings.ToLower(t.Kind) + "/" + t.Name }

// Consumer is one use covered by an action. With the object's namespace,
// PodUID, Container, Mode, Volume, MountPath and Env it carries the use's
// identity (inspect.UseID): the wait matches observations by it, so a pod of
// the same name in another namespace, a re-created pod or a second mount of
// the same object in the same container is never taken for this use.
type Consumer struct {
	Object    inspect.ObjectRef `json:"object"`
	Pod       string            `json:"pod"`
	PodUID    string            `json:"podUID,omitempty"`
	Container string            `json:"container,omitempty"`
	Mode      inspect.Mode      `json:"mode"`
	// Volume and MountPath of a volume use.
	Volume    string `json:"volume,omitempty"`
	MountPath string `json:"mountPath,omitempty"`
	// Env is the variable of an env use or the prefix of an envFrom use.
	Env string `json:"env,omitempty"`
	// Source is the place of the use's source in a projected volume that
	// names the same object more than once (inspect.VolumeRef.Source).
	Source  int             `json:"source,omitempty"`
	Verdict inspect.Verdict `json:"verdict"`
	State   inspect.State   `json:"state,omitempty"`
}

// ModeNamed marks the consumer of a restart that Reloader's reload
// annotation asks for: the workload names the object there, its pod spec
// does not read it (the application reads it some other way). It has no
// pod; the restart is verified by its rollout alone.
const ModeNamed inspect.Mode = "named"

// ConsumerOf is the consumer entry of one use.
func ConsumerOf(it inspect.Use) Consumer {
	id := it.ID()
	return Consumer{Object: it.Object, Pod: it.Pod.Name, PodUID: it.Pod.UID, Container: id.Container, Mode: it.Mode,
		Volume: id.Volume, MountPath: id.MountPath, Env: id.Env, Source: id.Source, Verdict: it.Verdict, State: it.State}
}

// ID is the identity of the consumer's use.
func (c Consumer) ID() inspect.UseID {
	return inspect.UseID{Namespace: c.Object.Namespace, PodUID: c.PodUID, Pod: c.Pod, Container: c.Container, Mode: c.Mode,
		ObjectKind: c.Object.Kind, ObjectName: c.Object.Name, Volume: c.Volume, MountPath: c.MountPath, Env: c.Env, Source: c.Source}
}

// Where names the use inside its container: the mount path of a volume
// use, $NAME of an env use, $PREFIX* of an envFrom use with a prefix.
func (c Consumer) Where() string {
	switch {
	case c.MountPath != "":
		return c.MountPath
	case c.Mode == inspect.ModeEnv && c.Env != "":
		return "$" + c.Env
	case c.Mode == inspect.ModeEnvFrom && c.Env != "":
		return "$" + c.Env + "*"
	case c.Mode == inspect.ModeUnmounted && c.Volume != "":
		return "volume " + c.Volume
	}
	return ""
}

// Action is one step of a plan.
type Action struct {
	Action    ActionKind `json:"action"`
	Target    Target     `json:"target"`
	Reason    string     `json:"reason"`
	Warnings  []string   `json:"warnings,omitempty"`
	Consumers []Consumer `json:"consumers"`
	// Pods are the pods an annotate action patches or a restart replaces
	// (for a restart: every pod of the workload's selector that the rollout
	// replaces, not only those -l selected).
	Pods []string `json:"pods,omitempty"`
	// OutsideSelector are the pods of Pods that -l does not select: a
	// restart replaces them too. Such a plan is refused without --yes.
	OutsideSelector []string `json:"outsideSelector,omitempty"`
	// Hook is an annotated pod's reload hook (ReloadHookAnnotation),
	// sent once its remount is verified current.
	Hook *Hook `json:"reloadHook,omitempty"`
	// RestartAt: a restart of an Argo Rollout sets spec.restartAt (its
	// controller evicts the pods) instead of changing its pod template.
	RestartAt bool `json:"restartAt,omitempty"`
	// NotAfter, when set, is when the workload's restart window closes
	// (the continuous refresh sets it on every restart): no restart patch
	// and no eviction of an evict action is sent from then on (a patch
	// retried after a 429 included), and what is not sent by then fails
	// the action for a cause that passes when the window opens again.
	NotAfter time.Time `json:"-"`
	// podUIDs are the UIDs of Pods when the plan was made: a pod of the same
	// name with another UID has been replaced.
	podUIDs map[string]string
}

// WorkloadPod is one pod a workload runs now: the planner reads its name,
// UID and labels, the eviction loop whether it is Ready or terminating.
type WorkloadPod struct {
	Name, UID string
	Labels    map[string]string
	// Ready: the pod's Ready condition is true and it is not terminating.
	Ready bool
	// Terminating: it has a deletion timestamp.
	Terminating bool
}

// WorkloadInfo is what the planner needs to know about an owning workload.
type WorkloadInfo struct {
	Exists bool
	// Pods are the live pods the workload owns (listed by its selector);
	// nil when unknown: then a restart is taken to replace the pods of its
	// consumers only.
	Pods []WorkloadPod
	// Paused is a paused Deployment.
	Paused bool
	// OnDelete is a StatefulSet or DaemonSet with the OnDelete strategy.
	OnDelete bool
	// Partition is a StatefulSet's rolling update partition.
	Partition int32
	// OrdinalsStart is a StatefulSet's spec.ordinals.start (its first
	// ordinal; the partition counts from it).
	OrdinalsStart int32
	// Rollout is what an Argo Rollout adds; nil for any other kind.
	Rollout *RolloutInfo
}

// RolloutInfo is what the planner reads of an Argo Rollout.
type RolloutInfo struct {
	// Strategy is the value of reloader.stakater.com/rollout-strategy on
	// the Rollout, RolloutStrategyRestart when it has none.
	Strategy string
	// Paused: spec.paused or a pause condition (a canary step, a
	// blue-green pre-promotion pause). Aborted: status.abort.
	Paused, Aborted bool
}

// WorkloadKey names a workload.
type WorkloadKey struct{ Kind, Namespace, Name string }

// PlanInput is everything Plan reads.
type PlanInput struct {
	Items    []inspect.Use
	Pods     map[string]*corev1.Pod // by namespace/name
	Workload map[WorkloadKey]WorkloadInfo
	Strategy Strategy
	// Verified tells whether the items carry --verify states; without them
	// restart-needed uses cannot be told stale from current.
	Verified bool
	// NotVerified are the pods (by PodKey) whose uses were left unobserved
	// on purpose although Verified is true (see NeedsVerify): their
	// hot-updating mounts are annotated without a prior exec.
	NotVerified map[string]bool
	// Selector is the user's -l (nil: every pod): a restart that replaces
	// pods outside it says so.
	Selector labels.Selector
	// RestartVia is how a workload is restarted: template (default) or
	// evict (an evict action per workload, for the pods of its consumers).
	RestartVia RestartVia
	// MaxUnavailable is how many pods of a workload an evict action
	// evicts at once (default 1); the plan's reason says the batches.
	MaxUnavailable int
}

// verified tells whether the use carries a verified state.
func (in PlanInput) verified(it inspect.Use) bool {
	return in.Verified && !in.NotVerified[PodKey(it.Object.Namespace, it.Pod.Name)]
}

// PodKey is the key of PlanInput.Pods.
func PodKey(namespace, name string) string { return namespace + "/" + name }

// Restartable are the workload kinds a rollout restart applies to.
var Restartable = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, RolloutKind: true}

type need int

const (
	needNothing need = iota
	needAnnotate
	needRestart
	needManual
)

// decision is what one consumer needs, with why.
type decision struct {
	need   need
	reason string
	// onPod: a manual step concerns the pod, not its workload
	onPod bool
}

// notVerifiedReason is the reason of an annotation planned without a prior
// observation: the plan does not claim a state it did not see.
const notVerifiedReason = "hot-updating mount, state not observed: an annotation makes the kubelet rewrite it now, and is harmless where it is already current (nothing restarts); the wait verifies it"

// decide applies the contract's rules to one use; pod is its pod, when known.
func decide(it inspect.Use, pod *corev1.Pod, s Strategy, observed bool) decision {
	// hot: the kubelet rewrites it in place. By verdict, not by mode: an
	// init container's volume use is restart-needed (it read once).
	hot := it.Verdict == inspect.VerdictHotUpdate
	switch it.Verdict {
	case inspect.VerdictNotMounted, inspect.VerdictUnused, inspect.VerdictNoPods, "":
		return decision{need: needNothing, reason: "nothing consumes it"}
	case inspect.VerdictMissing:
		if !it.Optional {
			return decision{need: needManual, reason: fmt.Sprintf("create the missing %s or key: %s", strings.ToLower(it.Object.Kind), it.Reason), onPod: true}
		}
		if !(observed && readAtStart(it) && (it.State == inspect.StateStale || it.State == inspect.StateBroken)) {
			return decision{need: needNothing, reason: "optional and absent: " + it.Reason}
		}
		// removed after the container read it: it keeps the old value, and
		// is planned as any other stale use below
	}
	if it.Container != nil && it.Container.Type == inspect.ContainerEphemeral && !hot {
		// not in the pod template: a rollout restart would replace the pod
		// and refresh nothing
		if observed && (it.State == inspect.StateInSync || it.State == inspect.StateCurrent || it.State == inspect.StateNA) {
			return decision{need: needNothing, reason: AlreadyReason(it.State)}
		}
		return decision{need: needManual, reason: "ephemeral container (kubectl debug): it cannot be restarted and a rollout would not bring it back; start a new debug container to read the current values", onPod: true}
	}
	if s == StrategyRestart && it.State != inspect.StateMissing && !(it.Object.Immutable && it.State == inspect.StateStale) {
		return decision{need: needRestart, reason: "--strategy restart rolls out every owning workload"}
	}
	if observed {
		switch it.State {
		case inspect.StateInSync, inspect.StateCurrent, inspect.StateNA:
			return decision{need: needNothing, reason: AlreadyReason(it.State)}
		case inspect.StateMissing:
			return decision{need: needManual, reason: "create the missing object or key: " + it.StateReason, onPod: true}
		}
	}
	if it.Object.Immutable {
		if observed && (it.State == inspect.StateStale || it.State == inspect.StatePending) {
			return decision{need: needManual, reason: fmt.Sprintf("immutable %s %q was re-created: the kubelet keeps serving the old copy to running pods and to new pods on nodes where it is still in use; create it under a new name (e.g. kustomize's hash suffix) and point the workload at it",
				strings.ToLower(it.Object.Kind), it.Object.Name)}
		}
		if !observed {
			return decision{need: needNothing, reason: "immutable: it never changes"}
		}
	}
	if hot && observed && it.State == inspect.StateUnverifiable && it.StateCause.Permanent() {
		if at, ok := annotatedSince(pod, it.Object.LastChange); ok {
			return decision{need: needNothing, reason: fmt.Sprintf("cannot be verified (%s: %s), and the pod was annotated at %s, after the last change of the %s: the kubelet re-synced it then; nothing more to do",
				it.StateCause, unverifiableReason(it), at.UTC().Format(time.RFC3339), strings.ToLower(it.Object.Kind))}
		}
	}
	if !observed && pod != nil && pod.DeletionTimestamp != nil {
		// not read first, but its status says enough: an annotation of a
		// terminating pod refreshes nothing, and the wait could not verify it
		return decision{need: needNothing, reason: "the pod is terminating: its replacement, if any, reads the object when it starts"}
	}
	switch s {
	case StrategyAnnotate:
		if hot {
			if observed && it.State != inspect.StatePending && it.State != inspect.StateUnverifiable {
				return decision{need: needNothing, reason: AlreadyReason(it.State)}
			}
			if !observed {
				return decision{need: needAnnotate, reason: notVerifiedReason}
			}
			return decision{need: needAnnotate, reason: "mount is " + string(it.State) + ": an annotation makes the kubelet rewrite it now"}
		}
		if observed && (it.State == inspect.StateStale || it.State == inspect.StateBroken) {
			return decision{need: needManual, reason: fmt.Sprintf("%s use is %s%s and stays so with --strategy annotate: restart the workload (--strategy auto or restart)", it.Mode, it.State, removed(it))}
		}
		if !observed {
			return cannotTell(it, " without exec")
		}
		return decision{need: needManual, reason: fmt.Sprintf("%s use is %s; an annotation cannot refresh it", it.Mode, it.State)}
	}
	// auto
	if !observed {
		if hot {
			return decision{need: needAnnotate, reason: notVerifiedReason}
		}
		return cannotTell(it, "")
	}
	switch it.State {
	case inspect.StatePending:
		return decision{need: needAnnotate, reason: "mount is pending: an annotation makes the kubelet rewrite it now"}
	case inspect.StateUnverifiable:
		if hot {
			return decision{need: needAnnotate, reason: "mount is unverifiable (" + unverifiableReason(it) + "): annotating is harmless and makes the kubelet rewrite it now"}
		}
		return cannotTell(it, " ("+unverifiableReason(it)+")")
	case inspect.StateStale, inspect.StateBroken:
		return decision{need: needRestart, reason: fmt.Sprintf("%s use is %s%s: only new containers read it again", it.Mode, it.State, removed(it))}
	}
	return decision{need: needNothing, reason: "state " + string(it.State)}
}

// cannotTell is the manual step of a use read at start whose state is
// unknown (detail says why). For a Job's or CronJob's pod, what cmsync
// does is the same whatever its state (jobReason): no restart applies,
// so --strategy restart is no hint there.
func cannotTell(it inspect.Use, detail string) decision {
	if k := it.Workload.Kind; it.Workload.Builtin() && (k == "Job" || k == "CronJob") {
		return decision{need: needManual, reason: jobReason(it)}
	}
	return decision{need: needManual, reason: "cannot tell whether stale" + detail + "; use --strategy restart"}
}

// readAtStart tells whether the use is read once, when its container
// starts, and kept for the container's life: env, envFrom, subPath and
// subPathExpr, and any use of an init container.
func readAtStart(it inspect.Use) bool {
	if it.Container != nil && it.Container.Type == inspect.ContainerInit {
		return true
	}
	return it.Mode != inspect.ModeUnmounted && !it.Mode.HotUpdating()
}

// removed says, for a use whose optional object or key is absent now, what
// was removed while the container kept what it read ("" for any other use).
func removed(it inspect.Use) string {
	if it.Verdict != inspect.VerdictMissing {
		return ""
	}
	kind := strings.ToLower(it.Object.Kind)
	what := fmt.Sprintf("optional %s %q no longer exists", kind, it.Object.Name)
	switch {
	case it.Object.Exists && len(it.Keys) == 1:
		what = fmt.Sprintf("optional key %q is no longer in %s %q", it.Keys[0], kind, it.Object.Name)
	case it.Object.Exists && len(it.Keys) > 1:
		what = fmt.Sprintf("optional keys %s are no longer in %s %q", strings.Join(quoted(it.Keys), ", "), kind, it.Object.Name)
	case it.Object.Exists:
		what = fmt.Sprintf("optional data of %s %q was removed", kind, it.Object.Name)
	}
	return " (" + what + ", but the container still has what it read when it started)"
}

func quoted(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// NeedsVerify returns the pods (by PodKey) that --strategy auto or
// annotate must observe before planning: those with a use whose action
// depends on its state (restart-needed, breaks-on-change, never-changes,
// and a use read at container start whose optional object or key is
// missing, as it may have been removed after the read: a stale one is
// restarted or manual, a current one left alone). A pod whose
// every use is a hot-updating mount (volume, items, projected of a running
// container) or needs nothing whatever its state is annotated without a
// prior exec: an annotation bump is harmless where the volume is already
// current (the kubelet does not rewrite identical payloads, and nothing
// restarts), and the wait verifies it afterwards.
func NeedsVerify(items []inspect.Use) map[string]bool {
	need := map[string]bool{}
	for _, it := range items {
		if it.Pod.Name == "" {
			continue
		}
		switch it.Verdict {
		case inspect.VerdictMissing:
			if !it.Optional || !readAtStart(it) {
				continue // decided by the verdict
			}
			// an optional object or key removed after the container read
			// it: the container may keep the old value (stale)
		case inspect.VerdictHotUpdate, inspect.VerdictNotMounted, inspect.VerdictUnused, inspect.VerdictNoPods, "":
			continue // decided by the verdict, or annotated whatever the state
		}
		need[PodKey(it.Object.Namespace, it.Pod.Name)] = true
	}
	return need
}

// PlanActions turns a report into actions: at most one restart per workload, one
// annotate per pod whose workload is not restarted, and manual or none
// entries for everything else. It is pure.
func PlanActions(in PlanInput) []Action {
	restarts := map[WorkloadKey]*Action{}
	annotates := map[string]*Action{}
	var manual, none []*Action

	consumerOf := ConsumerOf
	manualFor := func(t Target, reason string, it inspect.Use) {
		for _, a := range manual {
			if a.Target == t && a.Reason == reason {
				a.Consumers = append(a.Consumers, consumerOf(it))
				return
			}
		}
		manual = append(manual, &Action{Action: ActionManual, Target: t, Reason: reason, Consumers: []Consumer{consumerOf(it)}})
	}
	// First pass: restarts (they replace pods, so annotating those is moot).
	var deferred []inspect.Use
	for _, it := range in.Items {
		d := decide(it, in.Pods[PodKey(it.Object.Namespace, it.Pod.Name)], in.Strategy, in.verified(it))
		ns := it.Object.Namespace
		podTarget := Target{Kind: "Pod", Namespace: ns, Name: it.Pod.Name}
		switch d.need {
		case needRestart:
			wk, wt := workloadKey(it), workloadTarget(it)
			kind, why := ActionRestart, ""
			if in.RestartVia == RestartViaEvict {
				kind, why = ActionEvict, notEvictable(it, in)
			} else {
				why = notRestartable(it, in)
			}
			if why != "" {
				manualFor(wt, why, it)
				continue
			}
			a, ok := restarts[wk]
			if !ok {
				a = &Action{Action: kind, Target: wt, Reason: d.reason}
				if r := in.Workload[wk].Rollout; kind == ActionRestart && r != nil {
					a.RestartAt = r.Strategy == RolloutStrategyRestart
				}
				restarts[wk] = a
			}
			a.Consumers = append(a.Consumers, consumerOf(it))
			a.addPod(it.Pod.Name, it.Pod.UID)
		case needManual:
			t := podTarget
			if Restartable[it.Workload.GroupKind()] && !d.onPod {
				t = workloadTarget(it)
			}
			manualFor(t, d.reason, it)
		default:
			deferred = append(deferred, it)
		}
	}
	for _, it := range deferred {
		d := decide(it, in.Pods[PodKey(it.Object.Namespace, it.Pod.Name)], in.Strategy, in.verified(it))
		ns := it.Object.Namespace
		pk := PodKey(ns, it.Pod.Name)
		wk := workloadKey(it)
		restart := restarts[wk]
		if restart != nil && restart.Action == ActionRestart && spared(in.Workload[wk], wk, it.Pod.Name) {
			restart = nil // below the partition: the restart leaves this pod alone
		}
		if restart != nil && restart.Action == ActionEvict && !contains(restart.Pods, it.Pod.Name) {
			restart = nil // only the pods of stale consumers are evicted
		}
		switch {
		case d.need == needAnnotate && restart != nil:
			// its workload restarts: the new pods read everything afresh
			restart.Consumers = append(restart.Consumers, consumerOf(it))
			restart.addPod(it.Pod.Name, it.Pod.UID)
		case d.need == needAnnotate:
			a, ok := annotates[pk]
			if !ok {
				a = &Action{Action: ActionAnnotate, Target: Target{Kind: "Pod", Namespace: ns, Name: it.Pod.Name}, Reason: d.reason, Pods: []string{it.Pod.Name}}
				if w := downwardAnnotationsWarning(in.Pods[pk]); w != "" {
					a.Warnings = append(a.Warnings, w)
				}
				annotates[pk] = a
			}
			a.Consumers = append(a.Consumers, consumerOf(it))
		default:
			t := Target{Kind: "Pod", Namespace: ns, Name: it.Pod.Name}
			if it.Pod.Name == "" {
				t = Target{Kind: it.Object.Kind, Namespace: ns, Name: it.Object.Name}
			}
			found := false
			for _, a := range none {
				if a.Target == t {
					a.Consumers = append(a.Consumers, consumerOf(it))
					found = true
					break
				}
			}
			if !found {
				none = append(none, &Action{Action: ActionNone, Target: t, Reason: d.reason, Consumers: []Consumer{consumerOf(it)}})
			}
		}
	}
	var out []Action
	for k, a := range restarts {
		if a.Action == ActionEvict {
			a.evictionPlan(in)
		} else {
			a.replacedPods(in.Workload[k], in.Selector)
		}
		out = append(out, *a)
	}
	for _, a := range annotates {
		out = append(out, *a)
	}
	for _, a := range manual {
		out = append(out, *a)
	}
	for _, a := range none {
		out = append(out, *a)
	}
	sort.SliceStable(out, func(i, j int) bool { return Precedes(out[i], out[j]) })
	return out
}

// actionOrder ranks the kinds of action in a plan (Precedes).
// AlreadyReason is the reason of a none action for a use already in the
// state s (in-sync, current, n/a): what the loop's result events say, and
// what shadow mode reads them by.
func AlreadyReason(s inspect.State) string { return "already " + string(s) }

var actionOrder = map[ActionKind]int{ActionRestart: 0, ActionEvict: 0, ActionAnnotate: 1, ActionManual: 2, ActionNone: 3}

// Precedes is the order of a plan: restarts and evictions, annotations,
// manual steps, then nothing to do; by namespace, kind and name within each.
func Precedes(a, b Action) bool {
	if actionOrder[a.Action] != actionOrder[b.Action] {
		return actionOrder[a.Action] < actionOrder[b.Action]
	}
	if a.Target.Namespace != b.Target.Namespace {
		return a.Target.Namespace < b.Target.Namespace
	}
	if a.Target.Kind != b.Target.Kind {
		return a.Target.Kind < b.Target.Kind
	}
	return a.Target.Name < b.Target.Name
}

// annotatedSince returns the time of the pod's refresh annotation when it is
// surely later than the object's last change (its time has whole seconds).
func annotatedSince(pod *corev1.Pod, lastChange *metav1.Time) (time.Time, bool) {
	if pod == nil || lastChange == nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, pod.Annotations[RefreshedAtAnnotation])
	if err != nil || at.Before(lastChange.Add(time.Second)) {
		return time.Time{}, false
	}
	return at, true
}

// AddPod adds a pod (and its UID, when known) to the pods a restart
// replaces: the wait verifies that each was replaced.
func (a *Action) AddPod(name, uid string) { a.addPod(name, uid) }

func (a *Action) addPod(name, uid string) {
	if !contains(a.Pods, name) {
		a.Pods = append(a.Pods, name)
	}
	if a.podUIDs == nil {
		a.podUIDs = map[string]string{}
	}
	if uid != "" {
		a.podUIDs[name] = uid
	}
}

// replacedPods sets Pods of a restart to the pods the rollout replaces:
// every live pod of the workload (its selector, not -l), except, in a
// StatefulSet with a partition, those below it, which the plan names in a
// warning. Pods outside sel are listed in OutsideSelector, with a warning.
func (a *Action) replacedPods(info WorkloadInfo, sel labels.Selector) {
	wk := WorkloadKey{a.Target.Kind, a.Target.Namespace, a.Target.Name}
	var sparedPods []string
	if info.Pods != nil {
		for _, p := range info.Pods {
			if spared(info, wk, p.Name) {
				sparedPods = append(sparedPods, p.Name)
				continue
			}
			a.addPod(p.Name, p.UID)
			if sel != nil && !sel.Empty() && !sel.Matches(labels.Set(p.Labels)) && !contains(a.OutsideSelector, p.Name) {
				a.OutsideSelector = append(a.OutsideSelector, p.Name)
			}
		}
	}
	sort.Strings(a.Pods)
	sort.Strings(a.OutsideSelector)
	sort.Strings(sparedPods)
	if len(sparedPods) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("partition %d: the restart replaces only ordinals %d and up; %s %s not replaced (delete a pod to replace it)",
			info.Partition, info.OrdinalsStart+info.Partition, listPods(sparedPods), map[bool]string{true: "is", false: "are"}[len(sparedPods) == 1]))
	}
	if len(a.OutsideSelector) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("the restart also replaces %s, which -l does not select", listPods(a.OutsideSelector)))
	}
}

// listPods names pods, at most 5.
func listPods(names []string) string {
	s := "pod"
	if len(names) > 1 {
		s = "pods"
	}
	if len(names) > 5 {
		return fmt.Sprintf("%s %s and %d more", s, strings.Join(names[:5], ", "), len(names)-5)
	}
	return s + " " + strings.Join(names, ", ")
}

// notRestartable says why a rollout restart would not refresh the pod of
// this use, or "" when it would.
func notRestartable(it inspect.Use, in PlanInput) string {
	w := it.Workload
	ns := it.Object.Namespace
	if IsRollout(w.GroupKind()) {
		return rolloutReason(it, in)
	}
	if !w.Builtin() {
		return foreignOwnerReason(it)
	}
	switch w.Kind {
	case "Pod":
		return fmt.Sprintf("bare pod: nothing would re-create it, so it is not deleted; re-create it yourself (kubectl replace --force -f <its manifest>)")
	case "CronJob", "Job":
		return jobReason(it)
	}
	if w.Kind == "ReplicaSet" {
		return fmt.Sprintf("ReplicaSet %q: its Deployment, if any, is unknown (listing replicasets was not possible or it has none); restart the owner by hand (kubectl rollout restart deployment/NAME)", w.Name)
	}
	if !Restartable[w.Kind] {
		return fmt.Sprintf("%s %q is not a Deployment, StatefulSet or DaemonSet: restart it with its own controller's tooling", w.Kind, w.Name)
	}
	info, ok := in.Workload[workloadKey(it)]
	if !ok || !info.Exists {
		return fmt.Sprintf("%s %q was not found; restart the pod's owner by hand", w.Kind, w.Name)
	}
	switch {
	case info.Paused:
		return fmt.Sprintf("Deployment %q is paused: resume it (kubectl rollout resume deployment/%s -n %s), then run this again", w.Name, w.Name, ns)
	case info.OnDelete:
		return fmt.Sprintf("%s %q uses the OnDelete update strategy: a restart replaces no pods; delete pod %s to replace it", w.Kind, w.Name, it.Pod.Name)
	case spared(info, WorkloadKey{w.Kind, ns, w.Name}, it.Pod.Name):
		ord, _ := ordinal(it.Pod.Name, w.Name)
		if info.OrdinalsStart != 0 {
			return fmt.Sprintf("StatefulSet %q has partition %d and ordinals from %d: a restart spares pod %s (ordinal %d, index %d); delete it to replace it",
				w.Name, info.Partition, info.OrdinalsStart, it.Pod.Name, ord, ord-int(info.OrdinalsStart))
		}
		return fmt.Sprintf("StatefulSet %q has partition %d: a restart spares pod %s (ordinal %d); delete it to replace it", w.Name, info.Partition, it.Pod.Name, ord)
	}
	return ""
}

// rolloutReason says why a restart of an Argo Rollout would not refresh the
// pod of this use, or "" when it would. spec.restartAt makes the Argo
// Rollouts controller evict the pods older than it whatever the Rollout's
// pause or abort (its pod restarter runs before the steps), so only a
// restart through the pod template is refused there: its new revision
// would stop at the pause, or stay scaled down after the abort.
func rolloutReason(it inspect.Use, in PlanInput) string {
	w, ns := it.Workload, it.Object.Namespace
	info, ok := in.Workload[workloadKey(it)]
	r := info.Rollout
	switch {
	case !ok || !info.Exists || r == nil:
		return fmt.Sprintf("Rollout %q was not found; restart it with kubectl argo rollouts restart %s -n %s", w.Name, w.Name, ns)
	case r.Strategy != RolloutStrategyRestart && r.Strategy != RolloutStrategyRollout:
		return fmt.Sprintf("Rollout %q has %s=%q: neither %q nor %q; fix the annotation, then run this again",
			w.Name, RolloutStrategyAnnotation, r.Strategy, RolloutStrategyRestart, RolloutStrategyRollout)
	case r.Strategy == RolloutStrategyRestart:
		return ""
	case r.Aborted:
		return fmt.Sprintf("Rollout %q is aborted: a new revision would not be promoted; retry it (kubectl argo rollouts retry rollout %s -n %s), or set %s=%s to restart its pods in place",
			w.Name, w.Name, ns, RolloutStrategyAnnotation, RolloutStrategyRestart)
	case r.Paused:
		return fmt.Sprintf("Rollout %q is paused: a new revision would stop at the pause; promote it (kubectl argo rollouts promote %s -n %s), or set %s=%s to restart its pods in place",
			w.Name, w.Name, ns, RolloutStrategyAnnotation, RolloutStrategyRestart)
	}
	return ""
}

// jobReason says what is true of a Job's (or CronJob's) use: no rollout
// restarts a Job, but a hot-updating mount of a running pod follows the
// change by itself, while env, subPath and init container uses keep what
// they read.
func jobReason(it inspect.Use) string {
	kind := it.Workload.Kind
	next := "the change reaches new Jobs only"
	if kind == "CronJob" {
		next = "the next scheduled run reads the new data"
	}
	if it.Verdict == inspect.VerdictHotUpdate {
		return fmt.Sprintf("%s: no rollout restarts it, and none is needed: this %s mount of a running pod hot-updates by itself within the kubelet's delay (--strategy auto or annotate makes it now); %s", kind, it.Mode, next)
	}
	return fmt.Sprintf("%s: no rollout restarts it; a running pod's %s use keeps what it read; %s", kind, it.Mode, next)
}

// spared reports whether a restart of the workload leaves the pod alone: a
// StatefulSet pod below the partition. The StatefulSet controller compares
// the partition with the pod's index in the set, its ordinal minus
// spec.ordinals.start (updateStatefulSet: replicas[ordinal-start], updated
// from the last index down to the partition), not with the ordinal.
func spared(info WorkloadInfo, wk WorkloadKey, pod string) bool {
	if wk.Kind != "StatefulSet" || info.Partition <= 0 {
		return false
	}
	ord, ok := ordinal(pod, wk.Name)
	return ok && ord-int(info.OrdinalsStart) < int(info.Partition)
}

// ordinal parses the ordinal of a StatefulSet pod name "<set>-<n>".
func ordinal(pod, set string) (int, bool) {
	if !strings.HasPrefix(pod, set+"-") {
		return 0, false
	}
	n := 0
	s := pod[len(set)+1:]
	if s == "" {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// downwardAnnotationsWarning warns when bumping a pod annotation changes a
// file the pod sees (a downwardAPI projection of metadata.annotations).
func downwardAnnotationsWarning(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	check := func(files []corev1.DownwardAPIVolumeFile) bool {
		for _, f := range files {
			if f.FieldRef != nil && (f.FieldRef.FieldPath == "metadata.annotations" || strings.HasPrefix(f.FieldRef.FieldPath, "metadata.annotations['"+RefreshedAtAnnotation)) {
				return true
			}
		}
		return false
	}
	for _, v := range pod.Spec.Volumes {
		hit := v.DownwardAPI != nil && check(v.DownwardAPI.Items)
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.DownwardAPI != nil && check(s.DownwardAPI.Items) {
					hit = true
				}
			}
		}
		if hit {
			return fmt.Sprintf("volume %q projects metadata.annotations: the pod will see the %s annotation appear there", v.Name, RefreshedAtAnnotation)
		}
	}
	return ""
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Counts tallies actions by kind.
func Counts(actions []Action) map[ActionKind]int {
	c := map[ActionKind]int{}
	for _, a := range actions {
		c[a.Action]++
	}
	return c
}

// AnyUnverifiable reports whether a consumer cannot be proven current: an
// action `none` with such a consumer has nothing left to do, but is not
// current either (refresh exits 3 for it; the dashboard says so).
func AnyUnverifiable(cs []Consumer) bool {
	for _, c := range cs {
		if c.State == inspect.StateUnverifiable {
			return true
		}
	}
	return false
}
