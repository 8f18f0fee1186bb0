package lint

import (
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func TestHelmChecksum(t *testing.T) {
	cm := func(n string) inspect.ObjectKey { return inspect.ObjectKey{Kind: inspect.KindConfigMap, Name: n} }
	sec := func(n string) inspect.ObjectKey { return inspect.ObjectKey{Kind: inspect.KindSecret, Name: n} }
	cases := []struct {
		ann  map[string]string
		key  inspect.ObjectKey
		want string
	}{
		{map[string]string{"checksum/config": "abc"}, cm("anything"), "checksum/config"},
		{map[string]string{"checksum/configmap": "abc"}, cm("x"), "checksum/configmap"},
		{map[string]string{"checksum/config": "abc"}, sec("rel-shop"), ""}, // a generic word for the other kind
		{map[string]string{"checksum/secret": "abc"}, sec("rel-shop"), "checksum/secret"},
		{map[string]string{"checksum/config": "abc"}, sec("app-config"), "checksum/config"}, // a word of its name
		{map[string]string{"checksum/app-config": "abc"}, cm("app-config"), "checksum/app-config"},
		{map[string]string{"checksum/templates/app-config.yaml": "abc"}, cm("app-config"), "checksum/templates/app-config.yaml"},
		{map[string]string{"checksum/db": "abc"}, cm("app-config"), ""},
		{map[string]string{"checksum/config": ""}, cm("x"), ""}, // no value, no hash
		{map[string]string{"config-checksum": "abc"}, cm("x"), ""},
		{nil, cm("x"), ""},
	}
	for _, c := range cases {
		if got := helmChecksum(c.ann, c.key); got != c.want {
			t.Errorf("helmChecksum(%v, %v) = %q, want %q", c.ann, c.key, got, c.want)
		}
	}
}

func TestKustomizeSuffix(t *testing.T) {
	for name, want := range map[string]bool{
		"app-config-5h8m2kbt6g": true,
		"app-config-g9d6c4bhkt": true,
		"app-config":            false,
		"app-config-5h8m2kbt6":  false, // 9 characters
		"app-config-5h8m2kbt6a": false, // 'a' is written 'm'
		"app-config-0h8m2kbt6g": false, // '0' is written 'g'
		"5h8m2kbt6g":            false, // no base name
	} {
		if got := kustomizeSuffix.MatchString(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestReloader(t *testing.T) {
	cm := inspect.ObjectKey{Kind: inspect.KindConfigMap, Name: "app"}
	sec := inspect.ObjectKey{Kind: inspect.KindSecret, Name: "app"}
	cases := []struct {
		ann, objAnn map[string]string
		key         inspect.ObjectKey
		want        string
	}{
		{map[string]string{"reloader.stakater.com/auto": "true"}, nil, sec, "reloader.stakater.com/auto"},
		{map[string]string{"reloader.stakater.com/auto": "false"}, nil, cm, ""},
		{map[string]string{"configmap.reloader.stakater.com/auto": "true"}, nil, cm, "configmap.reloader.stakater.com/auto"},
		{map[string]string{"configmap.reloader.stakater.com/auto": "true"}, nil, sec, ""},
		{map[string]string{"secret.reloader.stakater.com/auto": "true"}, nil, sec, "secret.reloader.stakater.com/auto"},
		{map[string]string{"configmap.reloader.stakater.com/reload": "other, app"}, nil, cm, "configmap.reloader.stakater.com/reload"},
		{map[string]string{"configmap.reloader.stakater.com/reload": "other"}, nil, cm, ""},
		{map[string]string{"secret.reloader.stakater.com/reload": "app"}, nil, sec, "secret.reloader.stakater.com/reload"},
		{map[string]string{"reloader.stakater.com/search": "true"}, map[string]string{"reloader.stakater.com/match": "true"}, cm, "reloader.stakater.com/search"},
		{map[string]string{"reloader.stakater.com/search": "true"}, nil, cm, ""},
		{map[string]string{"reloader.stakater.com/auto": "true"}, map[string]string{"reloader.stakater.com/ignore": "true"}, cm, ""},
	}
	for _, c := range cases {
		if got := reloader(c.ann, c.objAnn, c.key); got != c.want {
			t.Errorf("reloader(%v, %v, %v) = %q, want %q", c.ann, c.objAnn, c.key, got, c.want)
		}
	}
}
