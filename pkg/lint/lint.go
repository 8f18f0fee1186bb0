package lint

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// KindLintReport is the kind of the document `lint -o json|yaml` prints.
const KindLintReport = "LintReport"

// Severity of a finding.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding codes.
const (
	CodeSubPathDirectory = "subpath-directory"
	CodeMissingReference = "missing-reference"
	CodeMissingKey       = "missing-key"
	CodeOptionalMissing  = "optional-missing"
	CodeNoHash           = "no-hash"
	CodeRollsOnChange    = "rolls-on-change"
	CodeNextRun          = "next-run"
	CodeHotUpdate        = "hot-update"
	CodeImmutable        = "immutable"
	CodeNotMounted       = "not-mounted"
)

// Finding is what lint says about one use: how bad, what, and what to do.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
}

// ManifestUse is a status item (the contract's use, with the workload in place of
// the pod) with where it is declared and the finding about it.
type ManifestUse struct {
	inspect.Use
	Source  Location `json:"source"`
	Finding Finding  `json:"finding"`
}

// Report is the document `lint -o json|yaml` prints.
type Report struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Items      []ManifestUse `json:"items"`
}

// NewReport wraps items in a LintReport document.
func NewReport(items []ManifestUse) Report {
	if items == nil {
		items = []ManifestUse{}
	}
	return Report{APIVersion: inspect.APIVersion, Kind: KindLintReport, Items: items}
}

// Lookup is what the live cluster said about an object the manifests do
// not hold (--cluster): the object, or both nil and Err nil when it is
// absent, or Err when it could not be read.
type Lookup struct {
	ConfigMap *corev1.ConfigMap
	Secret    *corev1.Secret
	Err       error
}

// Options of a lint run.
type Options struct {
	// Live holds what the cluster said about each reference that is not in
	// the set; nil when the cluster was not asked (no --cluster).
	Live map[inspect.ObjectKey]Lookup
}

// snapshot turns the set into the inspect package's input: one pod per
// workload (its template, named and owned as the workload; its UID is its
// index), and the set's objects plus those the cluster has.
func (s *Set) snapshot(live map[inspect.ObjectKey]Lookup) *inspect.Snapshot {
	snap := &inspect.Snapshot{ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{}, Secrets: map[inspect.ObjectKey]*corev1.Secret{},
		SecretsListed: true}
	for k, l := range live {
		if l.ConfigMap != nil {
			snap.ConfigMaps[k] = l.ConfigMap
		}
		if l.Secret != nil {
			snap.Secrets[k] = l.Secret
		}
	}
	for k, cm := range s.ConfigMaps {
		snap.ConfigMaps[k] = cm
	}
	for k, sec := range s.Secrets {
		snap.Secrets[k] = sec
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, UID: types.UID(strconv.Itoa(i)),
			Labels: w.Template.Labels, Annotations: w.Template.Annotations}, Spec: w.Template.Spec}
		if !(w.Kind == "Pod" && w.APIVersion == "v1") {
			yes := true
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: w.APIVersion, Kind: w.Kind, Name: w.Name, Controller: &yes}}
		}
		snap.Pods = append(snap.Pods, pod)
	}
	return snap
}

// uses runs the core over the set: every use of every workload, with its
// verdict, as `status` builds them (Secrets included, system ConfigMaps
// such as kube-root-ca.crt left out).
func (s *Set) uses(live map[inspect.ObjectKey]Lookup) []inspect.Use {
	// Build fails only for objects named in its options; none are.
	items, _ := inspect.Build(s.snapshot(live), inspect.BuildOptions{Secrets: true})
	return items
}

// Missing lists the objects the set's workloads refer to that the set does
// not hold (what --cluster asks the cluster about).
func (s *Set) Missing() []inspect.ObjectKey {
	seen := map[inspect.ObjectKey]bool{}
	var out []inspect.ObjectKey
	for _, it := range s.uses(nil) {
		k := it.Key()
		if !it.Object.Exists && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// Lint returns one item per use of a ConfigMap or Secret by a pod template
// of the set, with its finding, ordered by file and line.
func Lint(s *Set, o Options) []ManifestUse {
	var out []ManifestUse
	for _, it := range s.uses(o.Live) {
		i, _ := strconv.Atoi(it.Pod.UID)
		w := &s.Workloads[i]
		k := it.Key()
		_, inSet := s.Sources[k]
		if inSet {
			// no times for what is not in a cluster yet
			it.Object.LastChange = nil
		}
		it.Pod = inspect.PodRef{}
		li := ManifestUse{Use: it, Source: Location{File: w.Source.File, Line: w.line(it)}}
		li.Finding = s.finding(w, it, inSet, o.Live)
		out = append(out, li)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Source, out[j].Source
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return out
}

// finding decides what to say about one use from its verdict (the core's)
// and, for uses that never update, whether anything rolls the workload.
func (s *Set) finding(w *Workload, it inspect.Use, inSet bool, live map[inspect.ObjectKey]Lookup) Finding {
	k := it.Key()
	what := fmt.Sprintf("%s %q", it.Object.Kind, it.Object.Name)
	where := ""
	if !inSet && it.Object.Exists {
		where = " (not in the manifests; found in the live cluster)"
	}
	switch it.Verdict {
	case inspect.VerdictBreaksOnChange:
		return Finding{SeverityError, CodeSubPathDirectory, it.Reason,
			"mount the volume without subPath at its own directory, or make subPath name a single file (an items path), which only needs a restart"}
	case inspect.VerdictMissing:
		return missingFinding(it, what, inSet, live)
	case inspect.VerdictNeverChanges:
		return Finding{SeverityInfo, CodeImmutable, fmt.Sprintf("%s is immutable%s: it never changes", what, where),
			"ship a change as a new object with a new name (kustomize's generator does this) and point the workload at it"}
	case inspect.VerdictHotUpdate:
		return Finding{SeverityInfo, CodeHotUpdate, fmt.Sprintf("%s hot-updates within %s of a change%s", what, inspect.FormatDelay(it.Delay), where), ""}
	case inspect.VerdictNotMounted:
		return Finding{SeverityInfo, CodeNotMounted, it.Reason, ""}
	case inspect.VerdictRestartNeeded:
	default:
		return Finding{SeverityInfo, string(it.Verdict), it.Reason, ""}
	}
	// restart-needed: env, envFrom, subPath onto a file
	switch w.Kind {
	case "Job", "CronJob":
		return Finding{SeverityInfo, CodeNextRun, fmt.Sprintf("%s is read when a pod of the %s starts: a change reaches the next run, not a running one%s", what, strings.ToLower(w.Kind), where), ""}
	}
	var objAnn map[string]string
	switch {
	case s.ConfigMaps[k] != nil:
		objAnn = s.ConfigMaps[k].Annotations
	case s.Secrets[k] != nil:
		objAnn = s.Secrets[k].Annotations
	case live[k].ConfigMap != nil:
		objAnn = live[k].ConfigMap.Annotations
	case live[k].Secret != nil:
		objAnn = live[k].Secret.Annotations
	}
	if how := hashOf(w, k, objAnn); how != "" && w.Kind != "Pod" {
		return Finding{SeverityInfo, CodeRollsOnChange, fmt.Sprintf("%s use of %s needs a restart to see a change; %s", it.Mode, what, how), ""}
	}
	msg := fmt.Sprintf("%s use of %s%s never sees a change: ", it.Mode, what, where)
	hint := "add a hash of it to the pod template so that a change rolls the workload: Helm's checksum/config annotation " +
		"(sha256sum of the rendered template), kustomize's configMapGenerator (a name per content), or a Reloader annotation " +
		"(configmap.reloader.stakater.com/reload); or mount it as a volume, which hot-updates"
	switch w.Kind {
	case "Pod":
		msg += "a bare pod is never re-created by a controller"
		hint = "re-create the pod after each change, or run it from a Deployment whose pod template carries a hash of it"
	case "ReplicaSet":
		msg += "a ReplicaSet does not replace its pods when its template changes"
		hint = "run it from a Deployment whose pod template carries a hash of it (Helm checksum/config, kustomize configMapGenerator, or Reloader)"
	default:
		msg += "the pod template carries no hash of it"
		if cs := checksumAnnotations(w.Template.Annotations); len(cs) > 0 {
			msg += fmt.Sprintf(" (its %s annotations do not name it)", strings.Join(cs, ", "))
		}
	}
	return Finding{SeverityWarning, CodeNoHash, msg + ", so a change needs a manual restart", hint}
}

// missingFinding: a required object or key that is not there is an error
// when it is certain (a key absent from an object of the set, or --cluster
// confirmed the object absent), a warning otherwise; an optional one is
// information.
func missingFinding(it inspect.Use, what string, inSet bool, live map[inspect.ObjectKey]Lookup) Finding {
	if it.Optional {
		return Finding{SeverityInfo, CodeOptionalMissing, it.Reason, ""}
	}
	if it.Object.Exists {
		src := "in the manifests"
		if !inSet {
			src = "in the live cluster"
		}
		return Finding{SeverityError, CodeMissingKey, it.Reason + " (" + src + ")",
			fmt.Sprintf("add the key to %s, or mark the reference optional: true", what)}
	}
	hint := fmt.Sprintf("add %s to the manifests, create it before applying these, or mark the reference optional: true", what)
	switch l, asked := live[it.Key()]; {
	case live == nil:
		return Finding{SeverityWarning, CodeMissingReference, fmt.Sprintf("%s is not in the manifests; required, so pods cannot start unless it exists in the cluster", what),
			hint + "; --cluster checks the live cluster"}
	case asked && l.Err != nil:
		return Finding{SeverityWarning, CodeMissingReference, fmt.Sprintf("%s is not in the manifests, and the live cluster could not be asked: %v", what, l.Err), hint}
	default:
		return Finding{SeverityError, CodeMissingReference, fmt.Sprintf("%s is neither in the manifests nor in the live cluster; required, so pods cannot start", what), hint}
	}
}

// Counts tallies the findings by severity.
func Counts(items []ManifestUse) map[Severity]int {
	out := map[Severity]int{}
	for _, it := range items {
		out[it.Finding.Severity]++
	}
	return out
}

// Failed lists the items that fail --check: errors, and with strict also
// warnings.
func Failed(items []ManifestUse, strict bool) []ManifestUse {
	var out []ManifestUse
	for _, it := range items {
		if it.Finding.Severity == SeverityError || strict && it.Finding.Severity == SeverityWarning {
			out = append(out, it)
		}
	}
	return out
}
