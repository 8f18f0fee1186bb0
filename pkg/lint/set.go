package lint

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Workload is one pod template of the manifest set: a Pod, the template of
// a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, or of any
// other kind with spec.template.spec or spec.jobTemplate.spec.template.spec
// (custom workloads such as Argo Rollouts).
type Workload struct {
	Source     Location
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	// Annotations are the workload's own (Reloader reads them there).
	Annotations map[string]string
	Template    corev1.PodTemplateSpec
	// spec is the pod spec node: the positions of containers and volumes.
	spec *yaml.Node
}

// Set is what a manifest set would create: its pod templates and its
// ConfigMaps and Secrets (the later of two objects with one name wins, as
// with kubectl apply).
type Set struct {
	Workloads  []Workload
	ConfigMaps map[inspect.ObjectKey]*corev1.ConfigMap
	Secrets    map[inspect.ObjectKey]*corev1.Secret
	// Sources says where each ConfigMap and Secret is declared.
	Sources map[inspect.ObjectKey]Location
}

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{}, Secrets: map[inspect.ObjectKey]*corev1.Secret{},
		Sources: map[inspect.ObjectKey]Location{}}
}

// Add decodes documents into the set. namespace is the namespace of
// objects that name none (kubectl apply's -n or the kubeconfig context).
// Every document that cannot be decoded is reported (errors.Join of
// *ParseError); the others are added.
func (s *Set) Add(docs []Document, namespace string) error {
	var errs []error
	for _, d := range docs {
		ns := d.Namespace
		if ns == "" {
			ns = namespace
		}
		if err := s.add(d, ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Set) add(d Document, ns string) error {
	core := d.APIVersion == "v1"
	switch {
	case core && d.Kind == "ConfigMap":
		var cm corev1.ConfigMap
		if err := decode(d, d.Node, &cm); err != nil {
			return err
		}
		cm.Namespace = ns
		k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: ns, Name: cm.Name}
		s.ConfigMaps[k], s.Sources[k] = &cm, d.Source
		return nil
	case core && d.Kind == "Secret":
		var sec corev1.Secret
		if err := decode(d, d.Node, &sec); err != nil {
			return err
		}
		sec.Namespace = ns
		// the API server merges stringData into data
		if len(sec.StringData) > 0 && sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		for k, v := range sec.StringData {
			sec.Data[k] = []byte(v)
		}
		sec.StringData = nil
		k := inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: ns, Name: sec.Name}
		s.Secrets[k], s.Sources[k] = &sec, d.Source
		return nil
	}
	tmpl, spec := templateOf(d)
	if spec == nil {
		return nil // not a workload
	}
	w := Workload{Source: d.Source, APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Namespace: ns, spec: spec}
	if w.Name == "" {
		w.Name = scalar(path(d.Node, "metadata", "generateName"))
	}
	var meta struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := decode(d, d.Node, &meta); err != nil {
		return err
	}
	w.Annotations = meta.Metadata.Annotations
	if err := decode(d, tmpl, &w.Template); err != nil {
		return err
	}
	if d.Kind == "Pod" && core {
		// a Pod is its own template: its metadata and spec
		w.Template.Annotations = w.Annotations
	}
	s.Workloads = append(s.Workloads, w)
	return nil
}

// templateOf returns the node that decodes as a PodTemplateSpec (metadata
// and spec) and its spec node, or nil when the object has no pod template.
func templateOf(d Document) (tmpl, spec *yaml.Node) {
	if d.Kind == "Pod" && d.APIVersion == "v1" {
		return d.Node, mapValue(d.Node, "spec")
	}
	for _, p := range [][]string{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}, {"template"}} {
		t := path(d.Node, p...)
		if s := mapValue(t, "spec"); s != nil && s.Kind == yaml.MappingNode {
			return t, s
		}
	}
	return nil, nil
}

// decode reads a node into a typed object the way kubectl does (YAML to
// JSON, then the JSON decoder), so that YAML 1.1 scalars mean what they
// mean to kubectl.
func decode(d Document, n *yaml.Node, into any) error {
	b, err := yaml.Marshal(n)
	if err == nil {
		err = sigsyaml.Unmarshal(b, into)
	}
	if err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
		return &ParseError{File: d.Source.File, Line: n.Line, Msg: fmt.Sprintf("%s %q is not a valid %s: %s", strings.ToLower(d.Kind), d.Name, d.Kind, msg)}
	}
	return nil
}
