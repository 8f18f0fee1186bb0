package lint

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// parseErrs returns the ParseErrors of err as "file:line: msg" lines.
func parseErrs(t *testing.T, err error) []*ParseError {
	t.Helper()
	var out []*ParseError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var pe *ParseError
		if !errors.As(e, &pe) {
			t.Fatalf("not a *ParseError: %T %v", e, e)
		}
		out = append(out, pe)
	}
	if err != nil {
		walk(err)
	}
	return out
}

func TestReadErrorsHaveFileAndLine(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"mapping in a scalar's place, second document", "apiVersion: v1\nkind: A\n---\nkind: ConfigMap\napiVersion: v1\n  metadata: {}\n", 6, "mapping values are not allowed"},
		{"flow sequence not closed", "apiVersion: v1\nkind: A\nmetadata:\n  labels: [1, 2\n  name: x\n", 4, "did not find expected ',' or ']'"},
		{"tab indentation", "apiVersion: v1\nkind: ConfigMap\n\tmetadata: {}\n", 3, "invalid YAML"},
		{"unclosed flow after a separator with a comment", "apiVersion: v1\nkind: A\n--- # next\n\napiVersion: v1\nkind: B\nx: [\n", 7, "invalid YAML"},
		{"unknown alias: the document's first line", "apiVersion: v1\nkind: A\n---\napiVersion: v1\nkind: ConfigMap\ndata: *nope\n", 4, "unknown anchor"},
		{"no kind", "apiVersion: v1\nkind: A\n---\n\napiVersion: v1\nmetadata: {name: x}\n", 5, "no kind"},
		{"no apiVersion", "kind: ConfigMap\n", 1, "no apiVersion"},
		{"a list at the top", "- a\n- b\n", 1, "found a list"},
		{"a scalar", "hello\n", 1, "found the value \"hello\""},
		{"List items not a list", "apiVersion: v1\nkind: List\nitems: 3\n", 3, "items must be a list"},
		{"List item without kind", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata: {}\n", 4, "no kind"},
		{"broken JSON is read as YAML", "{\"apiVersion\": \"v1\",\n \"kind\": \"ConfigMap\",\n \"data\": {\"a\": }\n", 3, "invalid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("m.yaml", []byte(c.in))
			errs := parseErrs(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), err)
			}
			if errs[0].File != "m.yaml" || errs[0].Line != c.line || !strings.Contains(errs[0].Msg, c.msg) {
				t.Errorf("got %v, want m.yaml:%d: ...%s...", errs[0], c.line, c.msg)
			}
		})
	}
}

func TestReadReportsEveryBadDocumentAndKeepsTheGoodOnes(t *testing.T) {
	in := "apiVersion: v1\nkind: A\n---\nx: [\n---\napiVersion: v1\nkind: B\n---\n- 1\n"
	docs, err := Read("f", []byte(in))
	errs := parseErrs(t, err)
	if len(errs) != 2 || errs[0].Line != 4 || errs[1].Line != 9 {
		t.Fatalf("errors %v, want lines 4 and 9", err)
	}
	if len(docs) != 2 || docs[0].Kind != "A" || docs[1].Kind != "B" || docs[1].Source.Line != 6 {
		t.Errorf("docs %+v", docs)
	}
}

func TestReadStreams(t *testing.T) {
	in := "# comment only\n---\n---\n" + // empty documents
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n" + // line 4
		"---   \n" +
		"{\"apiVersion\": \"v1\",\n\t\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\"}}\n" + // line 8, tab
		"\n{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n" + // line 11
		"  {\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"c\"}},\n" + // line 12
		"  {\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"d\"}}]}\n" + // line 13
		"---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: e}}\n" // line 15: a YAML flow mapping
	docs, err := Read(StdinName, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Source.String()+" "+d.Kind+"/"+d.Name+"@"+d.Namespace)
	}
	want := []string{"STDIN:4 ConfigMap/a@ns", "STDIN:8 ConfigMap/b@", "STDIN:12 Secret/c@", "STDIN:13 Secret/d@", "STDIN:15 ConfigMap/e@"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestAddDecodeErrorsHaveLines(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: [1, 2]\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: 7\n"
	docs, err := Read("d.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	errs := parseErrs(t, NewSet().Add(docs, "default"))
	if len(errs) != 2 {
		t.Fatalf("got %v", errs)
	}
	if errs[0].Line != 1 || !strings.Contains(errs[0].Msg, `configmap "x" is not a valid ConfigMap`) {
		t.Errorf("first: %v", errs[0])
	}
	// the template's first line
	if errs[1].Line != 11 || !strings.Contains(errs[1].Msg, `deployment "web" is not a valid Deployment`) {
		t.Errorf("second: %v", errs[1])
	}
}

// TestSetSemantics: a Secret's stringData counts as data (as the API server
// merges it), objects without a namespace take the given one, and a
// workload reads only objects of its own namespace.
func TestSetSemantics(t *testing.T) {
	in := `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {token: abc}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: here}
spec:
  template:
    spec:
      containers:
      - name: a
        env:
        - name: T
          valueFrom: {secretKeyRef: {name: s, key: token}}
        envFrom:
        - configMapRef: {name: c}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: there, namespace: other}
spec:
  template:
    spec:
      containers:
      - name: a
        envFrom:
        - configMapRef: {name: c}
`
	docs, err := Read("s.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSet()
	if err := s.Add(docs, "team"); err != nil {
		t.Fatal(err)
	}
	got := rows(Lint(s, Options{}))
	want := []string{
		"s.yaml:20 deployment/here a secret/s env warning no-hash",
		"s.yaml:23 deployment/here a configmap/c envFrom warning no-hash",
		"s.yaml:34 deployment/there a configmap/c envFrom warning missing-reference",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if m := s.Missing(); len(m) != 1 || m[0] != (inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "other", Name: "c"}) {
		t.Errorf("Missing() = %v", m)
	}
}
