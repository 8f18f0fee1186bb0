package inspect

import (
	"errors"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func i32(v int32) *int32 { return &v }

func cmObject(data map[string]string, binary map[string][]byte) Object {
	o := Object{Kind: KindConfigMap, Namespace: "ns", Name: "cm", Exists: true, Data: map[string][]byte{}, BinaryKeys: map[string]bool{}}
	for k, v := range data {
		o.Data[k] = []byte(v)
	}
	for k, v := range binary {
		o.Data[k] = v
		o.BinaryKeys[k] = true
	}
	return o
}

func TestExpectedFiles(t *testing.T) {
	cm := cmObject(map[string]string{"a": "1", "b": "2"}, map[string][]byte{"bin": {0, 1}})
	type file struct {
		Path, Key string
		Mode      int32
		Data      string
	}
	cases := []struct {
		name        string
		obj         Object
		items       []KeyPath
		defaultMode *int32
		optional    bool
		want        []file
		skipped     []string
		err         string
	}{
		{name: "whole volume, data and binaryData, default mode", obj: cm,
			want: []file{{"a", "a", 0o644, "1"}, {"b", "b", 0o644, "2"}, {"bin", "bin", 0o644, "\x00\x01"}}},
		{name: "whole volume, defaultMode", obj: cm, defaultMode: i32(0o400),
			want: []file{{"a", "a", 0o400, "1"}, {"b", "b", 0o400, "2"}, {"bin", "bin", 0o400, "\x00\x01"}}},
		{name: "items: nested paths, item mode over defaultMode", obj: cm, defaultMode: i32(0o440),
			items: []KeyPath{{Key: "a", Path: "conf/dir/a.txt", Mode: i32(0o600)}, {Key: "bin", Path: "b.bin"}},
			want:  []file{{"b.bin", "bin", 0o440, "\x00\x01"}, {"conf/dir/a.txt", "a", 0o600, "1"}}},
		{name: "items: same key twice", obj: cm,
			items: []KeyPath{{Key: "a", Path: "x"}, {Key: "a", Path: "y"}},
			want:  []file{{"x", "a", 0o644, "1"}, {"y", "a", 0o644, "1"}}},
		{name: "items: later item with the same path wins", obj: cm,
			items: []KeyPath{{Key: "a", Path: "x"}, {Key: "b", Path: "x"}},
			want:  []file{{"x", "b", 0o644, "2"}}},
		{name: "items: path cleaned", obj: cm,
			items: []KeyPath{{Key: "a", Path: "d//./a"}},
			want:  []file{{"d/a", "a", 0o644, "1"}}},
		{name: "items: missing key, optional: skipped", obj: cm, optional: true,
			items: []KeyPath{{Key: "a", Path: "a"}, {Key: "zz", Path: "z"}},
			want:  []file{{"a", "a", 0o644, "1"}}, skipped: []string{"zz"}},
		{name: "items: missing key, required: error", obj: cm,
			items: []KeyPath{{Key: "a", Path: "a"}, {Key: "zz", Path: "z"}},
			err:   `key "zz" is not in ConfigMap "cm"`},
		{name: "missing object, optional: empty", obj: Object{Kind: KindConfigMap, Name: "cm"}, optional: true},
		{name: "missing object, required: error", obj: Object{Kind: KindConfigMap, Name: "cm"},
			err: `ConfigMap "cm" does not exist`},
		{name: "empty object", obj: cmObject(nil, nil)},
		{name: "invalid items path", obj: cm, items: []KeyPath{{Key: "a", Path: "../a"}}, err: "invalid items path"},
		{name: "items path starting with ..", obj: cm, items: []KeyPath{{Key: "a", Path: "..data/a"}}, err: "invalid items path"},
		{name: "hostile but valid items path", obj: cm, items: []KeyPath{{Key: "a", Path: "a$(touch /tmp/pwned2)"}},
			want: []file{{"a$(touch /tmp/pwned2)", "a", 0o644, "1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ExpectedFiles(c.obj, c.items, c.defaultMode, c.optional)
			if c.err != "" {
				var pe *PayloadError
				if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []file
			for _, f := range p.Files {
				got = append(got, file{f.Path, f.Key, f.Mode, string(f.Data)})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("files = %+v\nwant %+v", got, c.want)
			}
			if !reflect.DeepEqual(p.Skipped, c.skipped) {
				t.Errorf("skipped = %v, want %v", p.Skipped, c.skipped)
			}
			for _, f := range c.want {
				if _, ok := p.File(f.Path); !ok {
					t.Errorf("File(%q) not found", f.Path)
				}
			}
			if _, ok := p.File("nope"); ok {
				t.Error("File(nope) found")
			}
		})
	}
}

func TestFSGroupMode(t *testing.T) {
	if FSGroupMode(0o600, true) != 0o640 || FSGroupMode(0o600, false) != 0o600 || FSGroupMode(0o400, true) != 0o440 {
		t.Error("FSGroupMode")
	}
}

// FuzzExpectedFiles: any object and items give a sorted, unique, valid
// payload or a *PayloadError, never a panic.
func FuzzExpectedFiles(f *testing.F) {
	f.Add("a", "1", "b", "2", "a", "x/y", "b", "x", int32(0o644), false)
	f.Add("k", "", "k", "v", "zz", "../a", "k", "..data", int32(-1), true)
	f.Add("a.b", "\x00", "c-d", "", "a.b", "d//./e", "c-d", "d/e", int32(0o7777), false)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, ik1, ip1, ik2, ip2 string, mode int32, optional bool) {
		obj := cmObject(map[string]string{k1: v1}, map[string][]byte{k2: []byte(v2)})
		var items []KeyPath
		if ik1 != "" || ip1 != "" {
			items = append(items, KeyPath{Key: ik1, Path: ip1})
		}
		if ik2 != "" || ip2 != "" {
			items = append(items, KeyPath{Key: ik2, Path: ip2, Mode: &mode})
		}
		var dm *int32
		if mode >= 0 {
			dm = &mode
		}
		p, err := ExpectedFiles(obj, items, dm, optional)
		if err != nil {
			var pe *PayloadError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T: %v", err, err)
			}
			_ = pe.Error()
			return
		}
		if !sort.SliceIsSorted(p.Files, func(i, j int) bool { return p.Files[i].Path < p.Files[j].Path }) {
			t.Fatal("files not sorted")
		}
		for i, f := range p.Files {
			if i > 0 && p.Files[i-1].Path == f.Path {
				t.Fatalf("duplicate path %q", f.Path)
			}
			if f.Path != path.Clean(f.Path) || strings.HasPrefix(f.Path, "/") || f.Path == "." || strings.HasPrefix(f.Path, "../") {
				t.Fatalf("bad path %q", f.Path)
			}
			if _, ok := obj.Data[f.Key]; !ok {
				t.Fatalf("file %q from unknown key %q", f.Path, f.Key)
			}
			if got, ok := p.File(f.Path); !ok || got.Key != f.Key {
				t.Fatalf("File(%q) lookup failed", f.Path)
			}
		}
		if len(items) == 0 && !strings.Contains(k1+k2, "/") && len(p.Files) != len(obj.Data) {
			t.Fatalf("whole volume: %d files for %d keys", len(p.Files), len(obj.Data))
		}
	})
}
