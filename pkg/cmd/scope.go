package cmd

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// ScopeFlags are the flags of watch and controller that narrow what the
// loop handles at all: namespaces by labels and by name, ConfigMaps and
// Secrets by labels, workloads by kind (reconcile.Scope).
type ScopeFlags struct {
	NamespaceSelector   string
	IgnoreNamespaces    []string
	ResourceSelector    string
	IgnoreWorkloadKinds []string
}

func (f *ScopeFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.NamespaceSelector, "namespace-selector", "", "Only namespaces whose labels match this selector (e.g. team=a,env!=prod); namespaces are watched, so one labelled later comes into scope and one unlabelled goes out of it.")
	fs.StringSliceVar(&f.IgnoreNamespaces, "ignore-namespaces", nil, "Never handle these namespaces (comma-separated names), whatever their labels.")
	fs.StringVar(&f.ResourceSelector, "resource-label-selector", "", "Only ConfigMaps and Secrets whose labels match this selector are watched (and cached); a change of another one is reported out of scope.")
	fs.StringSliceVar(&f.IgnoreWorkloadKinds, "ignore-workload-kinds", nil, "Neither restart nor annotate the consumers of these kinds of workload (comma-separated, e.g. cronjobs,jobs; one of "+
		strings.Join(reconcile.WorkloadKindNames(), ", ")+", singular or plural).")
}

// scope parses the flags into the loop's Scope; an error names the flag.
func (f *ScopeFlags) scope() (reconcile.Scope, error) {
	var s reconcile.Scope
	var err error
	if s.Namespaces, err = parseSelector("--namespace-selector", f.NamespaceSelector); err != nil {
		return s, err
	}
	if s.Objects, err = parseSelector("--resource-label-selector", f.ResourceSelector); err != nil {
		return s, err
	}
	for _, ns := range f.IgnoreNamespaces {
		if ns = strings.TrimSpace(ns); ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return s, usageError("invalid --ignore-namespaces %q: %s", ns, strings.Join(errs, "; "))
		}
		s.IgnoreNamespaces = append(s.IgnoreNamespaces, ns)
	}
	if s.IgnoreKinds, err = reconcile.WorkloadKinds(f.IgnoreWorkloadKinds); err != nil {
		return s, usageError("invalid --ignore-workload-kinds: %v", err)
	}
	return s, nil
}

// validate checks the flags, and that -n does not name a namespace
// --ignore-namespaces ignores (nothing would ever be handled).
func (f *ScopeFlags) validate(namespace string, all bool) error {
	s, err := f.scope()
	if err != nil {
		return err
	}
	if !all && namespace != "" && slices.Contains(s.IgnoreNamespaces, namespace) {
		return usageError("namespace %q is both watched (-n) and ignored (--ignore-namespaces): nothing would be handled; drop it from --ignore-namespaces or use -A", namespace)
	}
	return nil
}

// parseSelector parses a label selector flag; "" selects everything (nil).
func parseSelector(flag, value string) (labels.Selector, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	sel, err := labels.Parse(value)
	if err != nil {
		return nil, usageError("invalid %s %q: %v", flag, value, err)
	}
	return sel, nil
}
