package inspect

import (
	"fmt"
	"sort"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// Redacted replaces a Secret's value in any text the plugin prints.
const Redacted = "<redacted: Secret data>"

// minRedactLen: shorter values ("1", "yes") would blank out ordinary words;
// the expressions that could carry them are not expanded in the first
// place (secretDerived).
const minRedactLen = 4

// Redactor is the output edge for strings derived from Secret data: every
// reason, state reason, plan reason and detail passes through it before it
// is printed, whatever the command and format. It knows the values of the
// Secrets of the snapshot; values the plugin never read cannot be in its
// output except through a container's environment, which secretDerived
// keeps out at the source.
type Redactor struct {
	values []string
}

// NewRedactor collects the Secret values of the snapshot. A value that is
// also the name of something the report names anyway (a pod, a ConfigMap, a
// namespace, a container...) is left alone: it is printed as that name
// whatever happens, and blanking it would make every row unreadable.
func NewRedactor(snap *Snapshot) *Redactor {
	if snap == nil || len(snap.Secrets) == 0 {
		return &Redactor{} // nothing to redact
	}
	names := map[string]bool{}
	for i := range snap.Pods {
		podNames(names, &snap.Pods[i])
	}
	return newRedactor(snap, names)
}

// podNames adds the names a pod gives the report: its own, its namespace,
// node, containers and volumes.
func podNames(names map[string]bool, p *corev1.Pod) {
	names[p.Name], names[p.Namespace], names[p.Spec.NodeName] = true, true, true
	for _, c := range podContainers(p) {
		names[c.ref.Name] = true
	}
	for _, v := range p.Spec.Volumes {
		names[v.Name] = true
	}
}

// newRedactor is NewRedactor with the pods' names given (names is added to).
func newRedactor(snap *Snapshot, names map[string]bool) *Redactor {
	r := &Redactor{}
	if names == nil {
		names = map[string]bool{}
	}
	for k := range snap.ConfigMaps {
		names[k.Name], names[k.Namespace] = true, true
	}
	for k := range snap.Secrets {
		names[k.Name], names[k.Namespace] = true, true
	}
	seen := map[string]bool{}
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) < minRedactLen || names[v] || seen[v] {
			return
		}
		seen[v] = true
		r.values = append(r.values, v)
	}
	for _, s := range snap.Secrets {
		for _, b := range s.Data {
			// The snapshot's bytes, not a copy: the values are as large as
			// the Secrets' data (a namespace's in each round of the
			// controller, every Secret's in status -A), and the snapshot,
			// which does not change (Snapshot.Object), holds them anyway.
			v := bytesString(b)
			add(v)
			// A multi-line value (a key, a certificate, a config file) may
			// be quoted line by line (substrings of v, not copies).
			for line := range strings.SplitSeq(v, "\n") {
				add(line)
			}
		}
		for _, v := range s.StringData {
			add(v)
		}
	}
	// Longest first: a value that contains another is replaced whole.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// bytesString is b as a string without a copy; b must not change while the
// string is used.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// String returns s with every known Secret value replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Strings redacts each string of a list (a new list).
func (r *Redactor) Strings(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = r.String(s)
	}
	return out
}

// Items redacts the free text of report rows (a new slice): the reason and
// the state reason. Names, paths and keys come from the pod spec and object
// metadata, never from Secret data.
func (r *Redactor) Items(items []Use) []Use {
	out := make([]Use, len(items))
	copy(out, items)
	r.Redact(out)
	return out
}

// Redact redacts the free text of report rows in place, as Items does:
// status redacts its 70,000 rows at 10,000 pods without a second copy.
func (r *Redactor) Redact(items []Use) {
	for i := range items {
		items[i].Reason = r.String(items[i].Reason)
		items[i].StateReason = r.String(items[i].StateReason)
	}
}

// secretDerived tells which environment variables of a container may hold
// a Secret's data: secretKeyRef entries, every name an envFrom secretRef may
// set (its prefix), and literal values that refer to one of those through
// $(VAR), in the order the kubelet expands them.
func secretDerived(pod *corev1.Pod, container string) func(name string) bool {
	c, ok := findContainer(pod, container)
	if pod == nil || !ok {
		// Nothing is known: treat every variable as possibly secret.
		return func(string) bool { return true }
	}
	var prefixes []string
	for _, ef := range c.envFrom {
		if ef.SecretRef != nil {
			prefixes = append(prefixes, ef.Prefix)
		}
	}
	direct := map[string]bool{}
	fromSecretPrefix := func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	tainted := func(name string) bool { return direct[name] || fromSecretPrefix(name) }
	for _, e := range c.env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			direct[e.Name] = true
		case e.ValueFrom == nil && refersTo(e.Value, tainted):
			direct[e.Name] = true
		default:
			// Set again from something else: a later entry wins.
			delete(direct, e.Name)
			if fromSecretPrefix(e.Name) {
				// env entries win over envFrom: no longer the Secret's.
				direct[e.Name] = false
			}
		}
	}
	return func(name string) bool {
		if v, ok := direct[name]; ok {
			return v
		}
		return fromSecretPrefix(name)
	}
}

// refersTo reports whether an expression refers through $(VAR) to a
// variable for which secret is true.
func refersTo(expr string, secret func(string) bool) bool {
	found := false
	expand(expr, func(name string) (string, bool) {
		if secret(name) {
			found = true
		}
		return "", true
	})
	return found
}

// subPathShown is how reasons name the subPath of a use: the expanded path,
// or, for a subPathExpr whose value may come from a Secret, the expression
// with a note (the expanded value is never printed).
func subPathShown(it Use, pod *corev1.Pod, sub string) string {
	if it.Mode == ModeSubPathExpr && it.Volume != nil && refersTo(it.Volume.SubPathExpr, secretDerived(pod, it.ContainerName())) {
		return fmt.Sprintf("from subPathExpr %q (expanded from Secret data: not shown)", it.Volume.SubPathExpr)
	}
	return fmt.Sprintf("%q", sub)
}
