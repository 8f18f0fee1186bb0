package reconcile

import (
	"reflect"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

func object(data map[string]string, binary ...string) inspect.Object {
	o := inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg", Exists: true,
		Data: map[string][]byte{}, BinaryKeys: map[string]bool{}}
	for k, v := range data {
		o.Data[k] = []byte(v)
	}
	for _, k := range binary {
		o.BinaryKeys[k] = true
	}
	return o
}

func TestDiff(t *testing.T) {
	absent := inspect.Object{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	base := object(map[string]string{"a": "1", "b": "2", "c": "3"})
	for _, tc := range []struct {
		name     string
		old, cur inspect.Object
		want     Change
	}{
		{"nothing", base, base, Change{}},
		{"one value", base, object(map[string]string{"a": "1", "b": "20", "c": "3"}), Change{Keys: []string{"b"}}},
		{"added and removed", base, object(map[string]string{"a": "1", "b": "2", "d": "4"}), Change{Keys: []string{"c", "d"}}},
		{"moved to binaryData", base, object(map[string]string{"a": "1", "b": "2", "c": "3"}, "c"), Change{Keys: []string{"c"}}},
		{"created", absent, base, Change{Keys: []string{"a", "b", "c"}, Created: true}},
		{"deleted", base, absent, Change{Keys: []string{"a", "b", "c"}, Deleted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.old, tc.cur)
			tc.want.Object = inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Diff = %+v, want %+v", got, tc.want)
			}
			if got.Empty() != (tc.name == "nothing") {
				t.Fatalf("Empty() = %v", got.Empty())
			}
		})
	}
}

func TestConcerns(t *testing.T) {
	key := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}
	whole := inspect.Use{Object: key, Mode: inspect.ModeVolume}
	items := inspect.Use{Object: key, Mode: inspect.ModeVolume, Keys: []string{"a", "b"}}
	env := inspect.Use{Object: key, Mode: inspect.ModeEnv, Keys: []string{"c"}}
	other := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindSecret, Namespace: "ns", Name: "cfg"}}
	changeB := Change{Object: whole.Key(), Keys: []string{"b"}}
	deleted := Change{Object: whole.Key(), Keys: []string{"a"}, Deleted: true}
	for _, tc := range []struct {
		name  string
		it    inspect.Use
		c     Change
		read  []string
		moved bool
	}{
		{"whole volume, any key", whole, changeB, []string{"b"}, true},
		{"items that list the key", items, changeB, []string{"b"}, true},
		{"env of another key", env, changeB, nil, false},
		{"same name, other kind", other, changeB, nil, false},
		{"env, object deleted", env, deleted, nil, true},
		{"whole volume, labels only", whole, Change{Object: whole.Key()}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read, moved := Concerns(tc.it, tc.c)
			if moved != tc.moved || !reflect.DeepEqual(read, tc.read) {
				t.Fatalf("Concerns = %v %v, want %v %v", read, moved, tc.read, tc.moved)
			}
		})
	}
}
