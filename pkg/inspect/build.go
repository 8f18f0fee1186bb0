package inspect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SystemConfigMaps are projected into every pod by the platform (the
// kube-api-access volume); they are hidden unless asked for.
var SystemConfigMaps = map[string]bool{
	"kube-root-ca.crt":         true,
	"openshift-service-ca.crt": true,
}

// VerdictUnused marks the row of an object no pod nor workload template
// consumes (--unused): it may still be read through the API.
const VerdictUnused Verdict = "unused"

// VerdictNoPods marks the row of an object no running pod consumes, but a
// workload's pod template does (scaled to zero, a CronJob between runs) or
// only pods that have completed did: not unused.
const VerdictNoPods Verdict = "no-pods"

// BuildOptions selects the rows of a report.
type BuildOptions struct {
	// Names restricts the report to these objects; empty means all.
	Names []ObjectKey
	// Secrets includes Secret uses (without it only ConfigMaps are shown).
	Secrets bool
	// IncludeSystem shows system ConfigMaps such as kube-root-ca.crt.
	IncludeSystem bool
	// Unused adds one row for every selected object no pod consumes.
	Unused bool
	// Workloads narrows the report to the pods these workloads run (with
	// Names: to their uses of those objects); a workload that runs no pod
	// now has rows from its pod template instead (see Builder.Idle).
	Workloads []SelectedWorkload
}

// NotFoundError is a named object that neither exists nor has consumers.
type NotFoundError struct{ Key ObjectKey }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found in namespace %q", strings.ToLower(e.Key.Kind), e.Key.Name, e.Key.Namespace)
}

// Build turns a snapshot into report items: every use by every pod, with
// its owner and prediction, filtered and sorted (namespace, kind, name, pod,
// container, mode). A named object that does not exist and has no consumers
// is a *NotFoundError.
func Build(snap *Snapshot, o BuildOptions) ([]Use, error) {
	items, _, err := BuildSelected(snap, o)
	return items, err
}

// BuildSelected is Build, and the workloads of o.Workloads that run no pod
// now (Builder.Idle).
func BuildSelected(snap *Snapshot, o BuildOptions) ([]Use, []SelectedWorkload, error) {
	b := newBuilder(snap, o)
	// One allocation for the items of every running pod: at 10,000 pods
	// (70,000 uses) growing the slice by doubling cost more than building
	// the items. The uses of a pod are appended in place and those not kept
	// dropped, hence room for the largest pod's uses on top.
	all := func(ObjectKey) bool { return true }
	n, most := 0, 0
	for i := range snap.Pods {
		if !PodTerminated(&snap.Pods[i]) {
			n += useCount(&snap.Pods[i], b.keep)
			most = max(most, useCount(&snap.Pods[i], all))
		}
	}
	b.items = make([]Use, 0, n+most)
	for i := range snap.Pods {
		b.Add(&snap.Pods[i])
	}
	items, err := b.Items()
	return items, b.Idle(), err
}

// Builder builds the report one pod at a time, for pods that are not kept
// in the snapshot (LoadOptions.PodSink): Add each pod, then Items. The
// snapshot's other kinds must be complete before the first Add. Not safe
// for concurrent use.
type Builder struct {
	snap      *Snapshot
	o         BuildOptions
	keep      func(ObjectKey) bool
	items     []Use
	used      map[ObjectKey]bool
	reasons   map[string]string
	completed map[ObjectKey][]string
	// running: which of o.Workloads run a pod that is not done
	running []bool
	// stream: made by NewBuilder (the pods are not in the snapshot)
	stream bool
	// names: the pods' names, namespaces, nodes, containers and volumes,
	// which the Redactor leaves alone (stream only, and only when there
	// are Secret values to redact)
	names map[string]bool
	// full: the filled chunks of items before items (stream only).
	// Growing one slice to 70,000 items of 400 bytes cost more than all
	// the rest: every growth copies the slice without a preemption point
	// (the collector spins meanwhile) into fresh, zeroed memory. Items
	// joins the chunks in the sorted order, copying each item once.
	full [][]Use
}

// chunkItems is the size of a Builder's chunks of items (about 1.6 MB);
// each has room for chunkRoom more, so that the last pod's uses seldom make
// it grow (fresh memory costs here: its first touch faults every page in).
const chunkItems, chunkRoom = 4096, 64

// NewBuilder starts a report of the pods given to Add; Redactor then gives
// the redactor of the snapshot with those pods in it.
func NewBuilder(snap *Snapshot, o BuildOptions) *Builder {
	b := newBuilder(snap, o)
	b.stream = true
	if len(snap.Secrets) > 0 {
		b.names = map[string]bool{}
	}
	b.items = make([]Use, 0, chunkItems+chunkRoom)
	return b
}

func newBuilder(snap *Snapshot, o BuildOptions) *Builder {
	wanted := map[ObjectKey]bool{}
	for _, k := range o.Names {
		wanted[k] = true
	}
	keep := func(k ObjectKey) bool {
		if len(wanted) > 0 {
			return wanted[k]
		}
		if k.Kind == KindSecret && !o.Secrets {
			return false
		}
		if k.Kind == KindConfigMap && SystemConfigMaps[k.Name] && !o.IncludeSystem {
			return false
		}
		return true
	}
	return &Builder{snap: snap, o: o, keep: keep, used: map[ObjectKey]bool{}, reasons: map[string]string{}, completed: map[ObjectKey][]string{},
		running: make([]bool, len(o.Workloads))}
}

// Add adds the uses of one pod. The items keep its strings and a few small
// values it points to (a volume's default mode), never the pod itself: a
// pod given to Add and then dropped is garbage. The pod must not be
// modified afterwards.
func (b *Builder) Add(pod *corev1.Pod) {
	if !b.selectPod(pod) {
		return
	}
	if b.names != nil {
		podNames(b.names, pod)
	}
	if PodTerminated(pod) {
		// Succeeded or Failed: nothing in it reads anything any more;
		// no verdict, no --check.
		for _, it := range Uses(pod) {
			if k := it.Key(); b.keep(k) {
				b.completed[k] = appendOnce(b.completed[k], fmt.Sprintf("pod %s (%s)", pod.Name, pod.Status.Phase))
			}
		}
		return
	}
	if b.stream && len(b.items) >= chunkItems {
		b.full = append(b.full, b.items)
		b.items = make([]Use, 0, chunkItems+chunkRoom)
	}
	var owner *WorkloadRef
	items := b.items
	start := len(items)
	items = appendUses(items, pod)
	kept := start
	for j := start; j < len(items); j++ {
		it := &items[j]
		k := it.Key()
		if !b.keep(k) {
			continue
		}
		if owner == nil {
			w := Owner(pod, b.snap)
			owner = &w
		}
		it.Workload = *owner
		Predict(it, pod, b.snap.Object(k), b.snap)
		if it.Verdict == VerdictRestartNeeded {
			if v := restartWindowOf(pod, b.snap); v != "" {
				it.RestartWindow = &RestartWindow{Value: v}
			}
		}
		// the reasons repeat (one per object, mode and timing): keep
		// one copy of each
		if r, ok := b.reasons[it.Reason]; ok {
			it.Reason = r
		} else {
			b.reasons[it.Reason] = it.Reason
		}
		b.used[k] = true
		if kept != j {
			items[kept] = *it
		}
		kept++
	}
	clear(items[kept:])
	b.items = items[:kept]
}

// Items ends the report: the rows of named objects without consumers and
// of --unused, then the sort of Build. Call it once, after the last Add.
func (b *Builder) Items() ([]Use, error) {
	snap, o, items := b.snap, b.o, b.items
	for _, k := range o.Names {
		if b.used[k] {
			continue
		}
		obj := snap.Object(k)
		if !obj.Exists {
			return nil, &NotFoundError{Key: k}
		}
	}
	if len(o.Workloads) > 0 {
		// only the selected workloads' rows: their templates where they
		// run no pod
		items = b.idleRows(items)
	} else if o.Unused || len(o.Names) > 0 {
		templates := templateUses(snap)
		for _, k := range unusedKeys(snap, o, b.used, b.keep) {
			obj := snap.Object(k)
			base := Use{Object: ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Exists: true, Immutable: obj.Immutable}}
			lc := obj.LastChange.UTC()
			base.Object.LastChange = timePtr(lc)
			n := len(items)
			for _, tu := range templates[k] {
				it := base
				it.Workload = WorkloadRef{Kind: tu.kind, Name: tu.name}
				it.Verdict = VerdictNoPods
				state := ""
				if tu.state != "" {
					state = ", " + tu.state
				}
				it.Reason = fmt.Sprintf("no pod runs now (%s/%s%s), but its pod template consumes this %s (%s): its next pods read the current content",
					strings.ToLower(tu.kind), tu.name, state, strings.ToLower(k.Kind), strings.Join(tu.modes, ", "))
				items = append(items, it)
			}
			if len(items) > n {
				continue
			}
			it := base
			if pods := b.completed[k]; len(pods) > 0 {
				it.Verdict = VerdictNoPods
				it.Reason = fmt.Sprintf("only pods that have completed consume this %s (%s): they read nothing any more", strings.ToLower(k.Kind), listNames(pods, 3))
			} else {
				it.Verdict = VerdictUnused
				it.Reason = "no pod consumes it (it may be read through the API)"
			}
			items = append(items, it)
		}
	}
	b.items = nil
	if len(b.full) == 0 {
		if items == nil {
			items = []Use{} // as Build's: never nil
		}
		SortItems(items)
		return items, nil
	}
	// the chunks are joined in the sorted order: each item copied once
	chunks := append(b.full, items)
	b.full = nil
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	at := make([]*Use, 0, n)
	for _, c := range chunks {
		for i := range c {
			at = append(at, &c[i])
		}
	}
	perm := sortOrder(n, func(i int) *Use { return at[i] })
	out := make([]Use, n)
	for i, j := range perm {
		out[i] = *at[j]
	}
	return out, nil
}

// Redactor is NewRedactor of the snapshot with the pods given to Add in it.
func (b *Builder) Redactor() *Redactor {
	return newRedactor(b.snap, b.names)
}

func unusedKeys(snap *Snapshot, o BuildOptions, used map[ObjectKey]bool, keep func(ObjectKey) bool) []ObjectKey {
	var out []ObjectKey
	add := func(k ObjectKey) {
		if !used[k] && keep(k) {
			out = append(out, k)
		}
	}
	if len(o.Names) > 0 {
		for _, k := range o.Names {
			add(k)
		}
		return out
	}
	for k := range snap.ConfigMaps {
		add(k)
	}
	for k := range snap.Secrets {
		add(k)
	}
	return out
}

// modeRank orders the modes of one container's uses of one object.
func modeRank(m Mode) int {
	switch m {
	case ModeVolume:
		return 0
	case ModeItems:
		return 1
	case ModeProjected:
		return 2
	case ModeSubPath:
		return 3
	case ModeSubPathExpr:
		return 4
	case ModeEnv:
		return 5
	case ModeEnvFrom:
		return 6
	case ModeUnmounted:
		return 7
	}
	return 8
}

// SortItems orders items by namespace; then objects with a required
// problem (a required object or key missing, a subPath that breaks on
// change) first and objects whose only rows are optional and missing last;
// then kind (ConfigMap first) and name; within an object required problems
// first and optional missing rows last; then pod, container and mode. Items
// that compare equal keep their order.
//
// It sorts a permutation of indexes, with the ranks computed once, and then
// moves each item once: a Use is a few hundred bytes, and a stable sort
// of 70,000 of them moved each many times.
func SortItems(items []Use) {
	permute(items, sortOrder(len(items), func(i int) *Use { return &items[i] }))
}

// sortOrder is the order of SortItems of the n items at(0)..at(n-1): the
// index of the item that goes first, then the next...
func sortOrder(n int, at func(int) *Use) []int32 {
	objRank := map[ObjectKey]int{}
	prob := make([]int8, n)
	for i := range n {
		it := at(i)
		k := it.Key()
		pr := problemRank(*it)
		prob[i] = int8(pr)
		r, seen := objRank[k]
		switch {
		case !seen:
			objRank[k] = pr
		case pr == 0 || (pr == 1 && r == 2):
			objRank[k] = pr
		}
	}
	rank := make([]int8, n)
	for i := range n {
		rank[i] = int8(objRank[at(i).Key()])
	}
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(i, j int32) int {
		a, b := at(int(i)), at(int(j))
		if c := cmp.Compare(a.Object.Namespace, b.Object.Namespace); c != 0 {
			return c
		}
		if c := cmp.Compare(rank[i], rank[j]); c != 0 {
			return c
		}
		if a.Object.Kind != b.Object.Kind {
			if a.Object.Kind == KindConfigMap {
				return -1
			}
			if b.Object.Kind == KindConfigMap {
				return 1
			}
		}
		if c := cmp.Compare(a.Object.Name, b.Object.Name); c != 0 {
			return c
		}
		if c := cmp.Compare(prob[i], prob[j]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pod.Name, b.Pod.Name); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ContainerName(), b.ContainerName()); c != 0 {
			return c
		}
		if c := cmp.Compare(modeRank(a.Mode), modeRank(b.Mode)); c != 0 {
			return c
		}
		if c := compareVolumes(a, b); c != 0 {
			return c
		}
		// stable: equal items keep their order
		return cmp.Compare(i, j)
	})
	return perm
}

// permute puts items[perm[i]] at i, moving each item once (cycle by cycle);
// perm is consumed.
func permute(items []Use, perm []int32) {
	for start := range perm {
		if perm[start] < 0 || int(perm[start]) == start {
			continue
		}
		tmp := items[start]
		i := start
		for {
			src := int(perm[i])
			perm[i] = -1
			if src == start {
				items[i] = tmp
				break
			}
			items[i] = items[src]
			i = src
		}
	}
}

// compareVolumes orders two uses by volume name and mount path, or by
// environment variable name when they are not volume uses.
func compareVolumes(a, b *Use) int {
	if a.Volume == nil || b.Volume == nil {
		an, bn := a.EnvName, b.EnvName
		if a.Volume != nil {
			an = a.Volume.Name
		}
		if b.Volume != nil {
			bn = b.Volume.Name
		}
		return cmp.Compare(an, bn)
	}
	if c := cmp.Compare(a.Volume.Name, b.Volume.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.Volume.MountPath, b.Volume.MountPath)
}

// problemRank: 0 for a problem a pod cannot run or keep running with
// (required missing, breaks-on-change), 2 for an optional object or key
// that is absent (often by design), 1 for the rest.
func problemRank(it Use) int {
	switch {
	case it.Verdict == VerdictMissing && !it.Optional, it.Verdict == VerdictBreaksOnChange:
		return 0
	case it.Verdict == VerdictMissing:
		return 2
	}
	return 1
}

// templateUse is a workload whose pod template consumes an object.
type templateUse struct {
	kind, name, state string
	modes             []string
}

// templateUses maps each object to the workload templates that consume it.
func templateUses(snap *Snapshot) map[ObjectKey][]templateUse {
	out := map[ObjectKey][]templateUse{}
	for _, t := range snap.Templates {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}, Spec: t.Spec}
		modes := map[ObjectKey][]string{}
		var order []ObjectKey
		for _, it := range Uses(pod) {
			if it.Mode == ModeUnmounted {
				continue
			}
			k := it.Key()
			if _, ok := modes[k]; !ok {
				order = append(order, k)
			}
			modes[k] = appendOnce(modes[k], string(it.Mode))
		}
		for _, k := range order {
			out[k] = append(out[k], templateUse{kind: t.Kind, name: t.Name, state: t.State, modes: modes[k]})
		}
	}
	return out
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
