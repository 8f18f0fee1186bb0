package migrate

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Options are what Build reads.
type Options struct {
	// Deployment names Reloader's Deployment, NAMESPACE/NAME; "" finds it.
	Deployment string
	// Namespace narrows the workloads explained to one ("": all those the
	// Reloader watches).
	Namespace string
}

// Report is a Reloader, what it maps to, and the workloads its annotations
// opt in.
type Report struct {
	Reloader string `json:"reloader"`
	Image    string `json:"image"`
	Helm     string `json:"helm,omitempty"`
	Mapping
	Flags    []string  `json:"flags"`
	FlagEnv  []string  `json:"flagEnv,omitempty"`
	Carriers []Carrier `json:"carriers,omitempty"`
	Rows     []Row     `json:"workloads"`
}

// Carrier is a custom annotation name and the workloads that carry it,
// whose manifests must change.
type Carrier struct {
	Annotation string   `json:"annotation"`
	Standard   string   `json:"standard"`
	Workloads  []string `json:"workloads"`
}

// NeedsPerson tells whether a person must act before cmsync replaces the
// Reloader: an unsupported setting, a custom annotation in use.
func (r Report) NeedsPerson() bool { return r.Mapping.NeedsPerson() }

// Build reads the Reloader and the workloads in its scope.
func Build(ctx context.Context, c Cluster, o Options) (Report, error) {
	d, err := reloaderDeployment(ctx, c, o.Deployment)
	if err != nil {
		return Report{}, err
	}
	rl, image := FromDeployment(d)
	m := Map(rl)
	ns := o.Namespace
	if ns == "" && !m.Values.WatchGlobally && len(m.Values.Namespaces) > 0 {
		ns = m.Values.Namespaces[0]
	}
	ws, err := c.Workloads(ctx, ns)
	if err != nil {
		return Report{}, err
	}
	rows := Rows(InScope(ws, m.Values), m)
	m.RolloutsLeftAlone(rows)
	r := Report{Reloader: d.Namespace + "/" + d.Name, Image: image, Helm: HelmRelease(d), Mapping: m,
		Flags: m.Values.Flags(), FlagEnv: m.Values.FlagEnv(), Rows: rows}
	r.Carriers = carriers(r.Rows, m.Custom)
	return r, nil
}

// reloaderDeployment is the Deployment named NAMESPACE/NAME, else the one
// Reloader found in the cluster.
func reloaderDeployment(ctx context.Context, c Cluster, name string) (appsv1.Deployment, error) {
	if name == "" {
		deps, err := c.Deployments(ctx, "")
		if err != nil {
			return appsv1.Deployment{}, err
		}
		return Find(deps, "in the cluster")
	}
	ns, n, ok := strings.Cut(name, "/")
	if !ok || ns == "" || n == "" {
		return appsv1.Deployment{}, fmt.Errorf("invalid --deployment %q: use NAMESPACE/NAME", name)
	}
	d, err := c.Deployment(ctx, ns, n)
	if err != nil {
		return appsv1.Deployment{}, &refresh.CallError{Verb: "get", Resource: "deployments", Namespace: ns, Name: n, Err: err}
	}
	return *d, nil
}

// carriers are, per custom annotation name, the workloads that carry it.
func carriers(rows []Row, custom []CustomAnnotation) []Carrier {
	var out []Carrier
	for _, c := range custom {
		ca := Carrier{Annotation: c.Name, Standard: c.Standard}
		for _, r := range rows {
			for _, a := range r.Annotations {
				if strings.HasPrefix(a, c.Name+"=") {
					ca.Workloads = append(ca.Workloads, r.Namespace+"/"+r.Workload)
				}
			}
		}
		out = append(out, ca)
	}
	return out
}
