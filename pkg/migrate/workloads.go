package migrate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// Workload is a workload as migrate reads it: a Deployment, StatefulSet,
// DaemonSet, Job, CronJob or Argo Rollout (APIVersion set).
type Workload struct {
	Kind, Namespace, Name string
	APIVersion            string
	// Annotations of the workload; TemplateAnnotations of its pod template
	// (a CronJob's: its jobTemplate's).
	Annotations, TemplateAnnotations map[string]string
	Spec                             corev1.PodSpec
}

func (w Workload) ref() inspect.WorkloadRef {
	return inspect.WorkloadRef{Kind: w.Kind, Name: w.Name, APIVersion: w.APIVersion}
}

// Row is one Reloader-annotated workload and what cmsync does differently.
type Row struct {
	Namespace string `json:"namespace"`
	Workload  string `json:"workload"`
	// Annotations are the Reloader annotations it carries (custom names
	// included), key=value, on the workload or its pod template.
	Annotations []string `json:"annotations"`
	// Lines say what cmsync does for it, one line each; those where it
	// does something Reloader does not are marked Differs.
	Lines []Line `json:"lines,omitempty"`
	// Custom tells whether it carries a custom annotation name, which
	// cmsync does not read: its manifest must change.
	Custom bool `json:"custom,omitempty"`
}

// Line is one thing cmsync does for a workload.
type Line struct {
	Differs bool   `json:"differs"`
	Text    string `json:"text"`
}

// Differs tells whether any line of r differs from what Reloader does.
func (r Row) Differs() bool {
	return slices.ContainsFunc(r.Lines, func(l Line) bool { return l.Differs })
}

const (
	// reloaderDomain is in every Reloader annotation's name.
	reloaderDomain = "reloader.stakater.com/"
	// lastReloaded and pausedAt are written by Reloader, not set by a team.
	lastReloaded = "reloader.stakater.com/last-reloaded-from"
	pausedAt     = "deployment.reloader.stakater.com/paused-at"

	spcAuto    = "secretproviderclass.reloader.stakater.com/auto"
	spcReload  = "secretproviderclass.reloader.stakater.com/reload"
	argoFormat = "reloader.stakater.com/rollout-strategy"
)

// Rows explains every workload among ws that carries one of Reloader's
// annotations (or a custom name m says Reloader reads), in the order of
// ws, selected as the mapped controller would (m.Values.RequireOptIn).
func Rows(ws []Workload, m Mapping) []Row {
	var rows []Row
	for _, w := range ws {
		ann := reloaderKeys(w, m.Custom)
		if len(ann) == 0 {
			continue
		}
		r := Row{Namespace: w.Namespace, Workload: w.ref().String(), Annotations: ann}
		for _, c := range m.Custom {
			if has(w, c.Name) {
				r.Custom = true
				r.Lines = append(r.Lines, Line{true, fmt.Sprintf("carries %s, which cmsync does not read: rename it to %s", c.Name, c.Standard)})
			}
		}
		r.Lines = append(r.Lines, lines(w, m.Values.RequireOptIn)...)
		rows = append(rows, r)
	}
	return rows
}

// has tells whether the workload or its pod template carries key.
func has(w Workload, key string) bool {
	_, a := w.Annotations[key]
	_, b := w.TemplateAnnotations[key]
	return a || b
}

// reloaderKeys are the Reloader annotations w carries, key=value, sorted,
// a key on both the workload and its template once (the workload's).
func reloaderKeys(w Workload, custom []CustomAnnotation) []string {
	all := map[string]string{}
	for _, ann := range []map[string]string{w.TemplateAnnotations, w.Annotations} {
		for k, v := range ann {
			if (strings.Contains(k, reloaderDomain) && k != lastReloaded) || slices.ContainsFunc(custom, func(c CustomAnnotation) bool { return c.Name == k }) {
				all[k] = v
			}
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, k+"="+all[k])
	}
	return out
}

// subject is the annotations the controller reads for w's pods: a CronJob's
// own are not read (its pods', from its jobTemplate, are).
func subject(w Workload) reconcile.Subject {
	if w.Kind == "CronJob" && w.APIVersion == "" {
		return reconcile.Subject{Annotations: w.TemplateAnnotations, TemplateAnnotations: w.TemplateAnnotations, Consumes: true}
	}
	return reconcile.Subject{Annotations: w.Annotations, TemplateAnnotations: w.TemplateAnnotations, Consumes: true}
}

// lines are what cmsync does for w, decided by the controller's own
// selection (reconcile.Select), on-change policy (reconcile.OnChange) and
// restart rule (reconcile.RestartsOnRollout).
func lines(w Workload, requireOptIn bool) []Line {
	var out []Line
	if w.Kind == "CronJob" && w.APIVersion == "" && reloaderOn(w.Annotations) && !reloaderOn(w.TemplateAnnotations) {
		out = append(out, Line{true, "its Reloader annotations are on the CronJob itself: cmsync reads those of its pods (jobTemplate's pod template); move them there"})
	}
	if has(w, spcAuto) || has(w, spcReload) {
		out = append(out, Line{true, "SecretProviderClass not watched: sync the driver's secrets into Kubernetes Secrets (secretObjects), which cmsync handles like any Secret"})
	}
	if has(w, pausedAt) {
		out = append(out, Line{true, "carries " + pausedAt + ": Reloader may have left it paused, which cmsync never resumes: kubectl rollout resume it"})
	}
	if w.Kind == "Rollout" && strings.HasPrefix(w.APIVersion, "argoproj.io/") && !has(w, argoFormat) {
		out = append(out, Line{true, "restarted through spec.restartAt (no new revision); Reloader changes the pod template: set " + argoFormat + ": rollout to keep that"})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}, Spec: w.Spec}
	uses := map[inspect.ObjectKey][]inspect.Use{}
	for _, u := range inspect.Uses(pod) {
		if u.Mode != inspect.ModeUnmounted {
			uses[u.Key()] = append(uses[u.Key()], u)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(uses), func(a, b inspect.ObjectKey) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) }) {
		out = append(out, objectLine(w, k, uses[k], requireOptIn))
	}
	return out
}

func reloaderOn(ann map[string]string) bool {
	for k := range ann {
		if strings.Contains(k, reloaderDomain) {
			return true
		}
	}
	return false
}

// objectLine is what cmsync does when the object k, which w's pod spec
// reads through uses, is edited, and whether Reloader does otherwise.
func objectLine(w Workload, k inspect.ObjectKey, uses []inspect.Use, requireOptIn bool) Line {
	obj := strings.ToLower(k.Kind) + "/" + k.Name + ": "
	s := subject(w)
	d := reconcile.Select(requireOptIn, s, reconcile.Changed{Kind: k.Kind, Name: k.Name})
	if d.Selection == reconcile.Skip {
		return Line{false, obj + "left alone: " + d.Reason}
	}
	volumeOnly := !slices.ContainsFunc(uses, func(u inspect.Use) bool { return !u.Mode.HotUpdating() })
	if !reconcile.RestartsOnRollout(w.ref()) {
		if volumeOnly {
			return Line{true, obj + w.Kind + " not re-run: the volumes of its running pods are remounted (Reloader re-runs it)"}
		}
		return Line{true, obj + w.Kind + " not re-run: env and subPath uses reach its next run only (Reloader re-runs it)"}
	}
	policy, why := reconcile.OnChange(s.Annotations, s.TemplateAnnotations, k.Kind)
	switch {
	case volumeOnly && policy == reconcile.OnChangeRemount:
		return Line{true, obj + "volume-only: remounted, not restarted (" + why + ")"}
	case policy == reconcile.OnChangeRemount:
		return Line{false, obj + "restarted for its env and subPath uses, as with Reloader; its volumes are remounted (" + why + ")"}
	}
	return Line{false, obj + "restarted on every edit, as with Reloader (" + why + ")"}
}
