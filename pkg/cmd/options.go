package cmd

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Selection holds the flags that pick the objects and pods status, refresh,
// watch and the dashboard look at.
type Selection struct {
	AllNamespaces bool
	Selector      string
	Secrets       bool
	IncludeSystem bool
}

// addSelectionFlags registers the selection flags.
func addSelectionFlags(fs *pflag.FlagSet, s *Selection) {
	fs.BoolVarP(&s.AllNamespaces, "all-namespaces", "A", false, "Look in all namespaces.")
	fs.StringVarP(&s.Selector, "selector", "l", "", "Only pods matching this label selector (e.g. -l app=web).")
	fs.BoolVar(&s.Secrets, "secrets", false, "Include Secrets (their values are never printed).")
	fs.BoolVar(&s.IncludeSystem, "include-system", false, "Show system ConfigMaps projected into every pod (kube-root-ca.crt).")
}

// validateSelector rejects a -l that does not parse before anything is
// read: a usage error, not the API server's.
func (s *Selection) validateSelector() error {
	if _, err := labels.Parse(s.Selector); err != nil {
		return usageError("invalid -l %q: %v", s.Selector, err)
	}
	return nil
}

// validateNames rejects objects named with -A: a name means one namespace.
func (s *Selection) validateNames(names []inspect.ObjectKey) error {
	if s.AllNamespaces && len(names) > 0 {
		return usageError("a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE")
	}
	return nil
}
