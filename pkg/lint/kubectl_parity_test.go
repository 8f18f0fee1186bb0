package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// kubectlObjects reads a stream the way kubectl apply does
// (k8s.io/apimachinery's YAML-or-JSON decoder), Lists flattened, each
// object as compact JSON; an error where kubectl would refuse the stream.
func kubectlObjects(in string) ([]string, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(in), 4096)
	var out []string
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		objs := []any{obj}
		if items, ok := obj["items"].([]any); ok && strings.HasSuffix(obj["kind"].(string), "List") {
			objs = items
		}
		for _, o := range objs {
			b, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			out = append(out, string(b))
		}
	}
}

// lintObjects reads the same stream with Read, each object as compact JSON.
func lintObjects(in string) ([]string, error) {
	docs, err := Read("in", []byte(in))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range docs {
		var v any
		if err := d.Node.Decode(&v); err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

// TestReadAcceptsWhatKubectlAccepts: for each stream, lint reads exactly
// the objects kubectl apply reads, with the same values, and refuses what
// kubectl refuses.
func TestReadAcceptsWhatKubectlAccepts(t *testing.T) {
	cm := func(value string) string {
		return `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "` + value + `"}}`
	}
	cases := []struct {
		name, in string
		refused  bool
	}{
		{"JSON surrogate pair (an emoji, as Grafana writes it)", cm(`lock \ud83d\udd10 and \uD83D\uDE00`), false},
		{"JSON lone high surrogate", cm(`\ud83d alone`), false},
		{"JSON lone low surrogate", cm(`\udd10 alone`), false},
		{"JSON high surrogate then a non-surrogate escape", cm(`\ud83d\u0041`), false},
		{"JSON escaped backslash before u", cm(`\\ud83d not an escape`), false},
		{"JSON simple escapes", cm(`\/ \b \f \n \r \t \" \\ \u00e9 \u0000 \u2028`), false},
		{"JSON raw non-ASCII, C1 and line-break characters", cm("caf\u00e9 \U0001F510 \u0080 \u009f \u0085 \u00a0 \u2028 \u2029"), false},
		{"JSON tab between tokens", "{\"apiVersion\":\t\"v1\",\t\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}}", false},
		{"JSON stream of two objects", cm("a") + "\n" + cm(`\ud83d\udd10`), false},
		{"JSON List", `{"apiVersion": "v1", "kind": "List", "items": [` + cm(`x\ud83d\udd10`) + `, ` + cm("y") + `]}`, false},
		{"YAML escapes", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: \"\\U0001F510 \\x41 \\e \\t \\u00e9\"\n", false},
		{"YAML \\/ escape (kubectl refuses it too)", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: \"\\/\"\n", true},
		{"YAML stream with a List", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n", false},
		{"YAML surrogate escape (kubectl refuses it too)", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: \"\\ud83d\\udd10\"\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, kerr := kubectlObjects(tc.in)
			if (kerr != nil) != tc.refused {
				t.Fatalf("the case is wrong: kubectl's decoder error = %v, refused = %v", kerr, tc.refused)
			}
			got, err := lintObjects(tc.in)
			if tc.refused {
				if err == nil {
					t.Fatalf("kubectl refuses this stream (%v) but lint read %v", kerr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("kubectl reads this stream but lint refused it: %v", err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("lint read\n  %s\nkubectl reads\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// TestYAMLReadableJSONKeepsLines: the rewrite never adds or removes a line,
// so the positions of findings stay the lines of the file.
func TestYAMLReadableJSONKeepsLines(t *testing.T) {
	in := []byte("{\"a\":\n\t\"\\ud83d\\udd10\",\n \"b\": \"\\ud83d\"\n}")
	out := yamlReadableJSON(in)
	if bytes.Count(out, []byte("\n")) != bytes.Count(in, []byte("\n")) {
		t.Errorf("lines changed: %q", out)
	}
	if want := "{\"a\":\n \"\\U0001F510\",\n \"b\": \"\\uFFFD\"\n}"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
