package inspect

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// envValue returns what an env valueFrom reference reads: a ConfigMap's
// data (never binaryData), a Secret's data.
func envValue(obj Object, key string) (string, bool) {
	if !obj.Exists {
		return "", false
	}
	v, ok := obj.Data[key]
	if !ok || (obj.Kind == KindConfigMap && obj.BinaryKeys[key]) {
		return "", false
	}
	return string(v), true
}

func envRefers(e corev1.EnvVar, kind, name, key string) bool {
	if e.ValueFrom == nil {
		return false
	}
	switch kind {
	case KindConfigMap:
		r := e.ValueFrom.ConfigMapKeyRef
		return r != nil && r.Name == name && r.Key == key
	case KindSecret:
		r := e.ValueFrom.SecretKeyRef
		return r != nil && r.Name == name && r.Key == key
	}
	return false
}

// envSources is what else sets the variables of a container besides one
// envFrom use: its env entries (they win over every envFrom source) and its
// other envFrom sources (a later one wins a name over an earlier one).
type envSources struct {
	names  map[string]bool
	others []envFromSource
}

type envFromSource struct {
	prefix string
	obj    Object
	later  bool // after the use's own source: it wins a name both set
}

func (s envFromSource) what() string { return fmt.Sprintf("%s %q", s.obj.Kind, s.obj.Name) }

// sets reports whether the source sets the variable name: known for an
// object that was read, maybe for one that was not (any key could be).
func (s envFromSource) sets(name string) (known, maybe bool) {
	key, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		return false, false
	}
	if s.obj.Unread {
		return false, true
	}
	_, known = envValue(s.obj, key)
	return known, false
}

func otherEnvSources(it Use, pod *corev1.Pod, lookup func(ObjectKey) Object) envSources {
	es := envSources{names: map[string]bool{}}
	c, ok := findContainer(pod, it.ContainerName())
	if !ok {
		return es
	}
	for _, e := range c.env {
		es.names[e.Name] = true
	}
	self := false
	for _, ef := range c.envFrom {
		if !self && envFromRefers(ef, it.Object.Kind, it.Object.Name) && ef.Prefix == it.EnvPrefix {
			self = true
			continue
		}
		var k ObjectKey
		switch {
		case ef.ConfigMapRef != nil:
			k = ObjectKey{KindConfigMap, it.Object.Namespace, ef.ConfigMapRef.Name}
		case ef.SecretRef != nil:
			k = ObjectKey{KindSecret, it.Object.Namespace, ef.SecretRef.Name}
		default:
			continue
		}
		es.others = append(es.others, envFromSource{prefix: ef.Prefix, obj: lookup(k), later: self})
	}
	return es
}

// overrides reports whether an env entry or a later envFrom source sets
// name, so that the container shows its value, not this use's: known, or
// maybe (naming the unread sources that could).
func (es envSources) overrides(name string) (known bool, maybe []string) {
	return es.setBy(name, true)
}

// setsElsewhere is overrides for any other source, earlier ones included.
func (es envSources) setsElsewhere(name string) (known bool, maybe []string) {
	return es.setBy(name, false)
}

func (es envSources) setBy(name string, laterOnly bool) (known bool, maybe []string) {
	if es.names[name] {
		return true, nil
	}
	for _, s := range es.others {
		if laterOnly && !s.later {
			continue
		}
		k, m := s.sets(name)
		if k {
			return true, nil
		}
		if m {
			maybe = append(maybe, s.what())
		}
	}
	return false, maybe
}

func envFromRefers(ef corev1.EnvFromSource, kind, name string) bool {
	switch kind {
	case KindConfigMap:
		return ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == name
	case KindSecret:
		return ef.SecretRef != nil && ef.SecretRef.Name == name
	}
	return false
}
