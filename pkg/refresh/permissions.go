package refresh

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

// Permission is one RBAC permission a plan needs: verb on a resource of an
// API group in a namespace, for the objects named in Targets.
type Permission struct {
	Verb, Group, Resource, Namespace string
	// Targets are the objects of the plan that need it ("pod/web-1").
	Targets []string
}

func (p Permission) String() string {
	return fmt.Sprintf("%s %s in namespace %q", p.Verb, p.Resource, p.Namespace)
}

// resourceOf is the resource a patch of kind goes to; its API group comes
// from the permission table (pkg/rbac).
var resourceOf = map[string]string{
	"Pod":         "pods",
	"Deployment":  "deployments",
	"StatefulSet": "statefulsets",
	"DaemonSet":   "daemonsets",
	RolloutKind:   "rollouts",
}

// evictionResource is the Eviction API: create on the pods' eviction
// subresource.
const evictionResource = "pods/eviction"

// Permissions lists what applying plan needs, one per verb, resource and
// namespace, in a stable order: patch on the pods it annotates and on the
// workloads it restarts, create on pods/eviction for the workloads whose
// pods it evicts. A server dry run needs the same (the API server
// authorizes a dryRun patch like a real one); a client dry run sends
// nothing and needs nothing.
func Permissions(plan []Action, dry DryRun) []Permission {
	if dry == DryRunClient {
		return nil
	}
	var set permissionSet
	for _, a := range plan {
		verb, resource := "patch", ""
		switch a.Action {
		case ActionAnnotate, ActionRestart:
			var ok bool
			if resource, ok = resourceOf[a.Target.Kind]; !ok {
				continue
			}
		case ActionEvict:
			verb, resource = "create", evictionResource
		default:
			continue
		}
		set.add(verb, resource, a.Target.Namespace, a.Target.String())
	}
	out := set.list
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Resource < b.Resource
	})
	return out
}

// permissionSet gathers permissions, one per verb, resource and namespace,
// in the order first asked, each with the targets that need it.
type permissionSet struct {
	index map[[3]string]int
	list  []Permission
}

// add asks verb on resource (its group from pkg/rbac) in namespace for
// target.
func (s *permissionSet) add(verb, resource, namespace, target string) {
	k := [3]string{verb, resource, namespace}
	i, ok := s.index[k]
	if !ok {
		if s.index == nil {
			s.index = map[[3]string]int{}
		}
		i = len(s.list)
		s.index[k] = i
		s.list = append(s.list, Permission{Verb: verb, Group: rbac.Group(resource), Resource: resource, Namespace: namespace})
	}
	if !slices.Contains(s.list[i].Targets, target) {
		s.list[i].Targets = append(s.list[i].Targets, target)
	}
}

// AccessReviewer is the I/O edge of the permission check: may the current
// user do p?
type AccessReviewer interface {
	Allowed(ctx context.Context, p Permission) (bool, error)
}

// Missing returns the permissions of perms the reviewer denies. A review
// that fails (an old or unusual API server) counts as allowed: the patch
// itself will then say what is wrong.
func Missing(ctx context.Context, r AccessReviewer, perms []Permission) []Permission {
	var out []Permission
	for _, p := range perms {
		if ok, err := r.Allowed(ctx, p); err == nil && !ok {
			out = append(out, p)
		}
	}
	return out
}

// targetsText names at most three targets and counts the rest.
func targetsText(ts []string) string {
	if len(ts) > 3 {
		return strings.Join(ts[:3], ", ") + fmt.Sprintf(" and %d more", len(ts)-3)
	}
	return strings.Join(ts, ", ")
}

// Describe is one line for a missing permission: what, for which targets.
func (p Permission) Describe() string {
	return fmt.Sprintf("%s (for %s)", p, targetsText(p.Targets))
}
