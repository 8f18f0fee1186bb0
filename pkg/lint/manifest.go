// Package lint reads Kubernetes manifests (what `kubectl apply -f` would
// send) and says, for every ConfigMap and Secret use of every pod template,
// what the kubelet will do with a change and what to fix before it reaches a
// cluster. The uses and verdicts are pkg/inspect's, the same as `status`;
// this package adds the manifest reading (with file and line positions) and
// the findings.
package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
)

// StdinName is the file name of manifests read from standard input, as
// kubectl calls it.
const StdinName = "STDIN"

// Location is where an item comes from: a file (or STDIN) and a 1-based line.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

func (s Location) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// Document is one Kubernetes object of a manifest stream (an item of a
// List is a document of its own).
type Document struct {
	Source     Location
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	// Node is the object's mapping node; every node under it carries its
	// line in the file.
	Node *yaml.Node
}

// ParseError is a manifest that cannot be read: the file, the line (0 when
// the parser does not say) and what is wrong.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// maxDocuments bounds what one stream may hold; a manifest set is far
// smaller, and a hostile input must not exhaust memory.
const maxDocuments = 100000

// Read splits a manifest stream into its objects the way kubectl does
// (YAML documents separated by `---` lines, JSON objects, one after the
// other, `List` kinds flattened) and keeps each object's position. Every
// document that cannot be read is reported (errors.Join of *ParseError),
// with the documents that could be.
func Read(file string, data []byte) ([]Document, error) {
	var docs []Document
	var errs []error
	for _, c := range splitDocuments(data) {
		nodes, err := parseChunk(file, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, n := range nodes {
			d, err := documentsOf(file, n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			docs = append(docs, d...)
			if len(docs) > maxDocuments {
				return nil, &ParseError{File: file, Line: n.Line, Msg: fmt.Sprintf("more than %d objects in one stream", maxDocuments)}
			}
		}
	}
	return docs, errors.Join(errs...)
}

// chunk is one YAML document of the stream and the line it starts on.
type chunk struct {
	data  []byte
	start int // 1-based line of data's first byte
}

// splitDocuments cuts the stream at separator lines as kubectl's YAML
// reader does (k8s.io/apimachinery/pkg/util/yaml): a line that begins with
// "---" followed by nothing but blanks or a comment.
func splitDocuments(data []byte) []chunk {
	var out []chunk
	from, fromLine := 0, 1 // the current chunk
	pos, line := 0, 1
	for pos < len(data) {
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		if l := data[pos:next]; bytes.HasPrefix(l, []byte("---")) {
			rest := strings.TrimSpace(string(l[3:]))
			if rest == "" || strings.HasPrefix(rest, "#") {
				out = append(out, chunk{data: data[from:pos], start: fromLine})
				from, fromLine = next, line+1
			}
		}
		pos, line = next, line+1
	}
	return append(out, chunk{data: data[from:], start: fromLine})
}

var yamlLine = regexp.MustCompile(`yaml: line (\d+): (.*)$`)

// parseChunk parses one document of the stream: JSON objects one after the
// other, or one YAML document. The nodes' lines are lines of the file.
func parseChunk(file string, c chunk) ([]*yaml.Node, error) {
	trimmed := bytes.TrimLeft(c.data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if nodes, ok := parseJSONStream(file, c); ok {
			return nodes, nil
		}
		// not JSON: a YAML flow mapping, or broken; YAML says which
	}
	return parseYAML(file, c.data, c.start)
}

// parseYAML parses YAML documents (a chunk holds one, unless it uses the
// `...` end marker) and shifts their lines to file lines.
func parseYAML(file string, data []byte, start int) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, yamlError(file, data, err, start)
		}
		if len(n.Content) == 0 {
			continue // only comments
		}
		root := n.Content[0]
		shiftLines(root, start-1, map[*yaml.Node]bool{})
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue // an empty document
		}
		out = append(out, root)
	}
}

// yamlError turns a parser error into a ParseError at a file line. The
// line is the one kubectl would report: yaml.v3 names the line where the
// enclosing block starts, the YAML-to-JSON converter of kubectl
// (sigs.k8s.io/yaml) the line of the problem, so that one is asked first.
func yamlError(file string, data []byte, err error, start int) error {
	msg := err.Error()
	if _, e := sigsyaml.YAMLToJSON(data); e != nil && yamlLine.MatchString(e.Error()) {
		msg = e.Error()
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &ParseError{File: file, Line: start - 1 + n, Msg: "invalid YAML: " + m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return &ParseError{File: file, Line: start, Msg: "invalid YAML in the document that starts here: " + msg}
}

// parseJSONStream reads JSON values one after the other (kubectl accepts a
// stream of objects); false when the chunk is not JSON.
func parseJSONStream(file string, c chunk) ([]*yaml.Node, bool) {
	dec := json.NewDecoder(bytes.NewReader(c.data))
	var out []*yaml.Node
	for {
		var raw json.RawMessage
		before := dec.InputOffset()
		err := dec.Decode(&raw)
		if err == io.EOF {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		// the value starts after the blanks that follow the previous one
		off := int(before) + (len(c.data[before:dec.InputOffset()]) - len(bytes.TrimLeft(c.data[before:dec.InputOffset()], " \t\r\n")))
		line := c.start + bytes.Count(c.data[:off], []byte("\n"))
		// YAML reads JSON once its strings are spelled the YAML way
		nodes, err := parseYAML(file, yamlReadableJSON(raw), line)
		if err != nil {
			return nil, false
		}
		out = append(out, nodes...)
	}
}

// shiftLines adds delta to the line of every node (once each: aliases share
// nodes).
func shiftLines(n *yaml.Node, delta int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line += delta
	for _, c := range n.Content {
		shiftLines(c, delta, seen)
	}
	if n.Alias != nil {
		shiftLines(n.Alias, delta, seen)
	}
}

// documentsOf checks that the node is an object and flattens a List.
func documentsOf(file string, n *yaml.Node) ([]Document, error) {
	d, err := documentOf(file, n)
	if err != nil {
		return nil, err
	}
	items := mapValue(n, "items")
	if !strings.HasSuffix(d.Kind, "List") || items == nil {
		return []Document{d}, nil
	}
	if items.Kind != yaml.SequenceNode {
		return nil, &ParseError{File: file, Line: items.Line, Msg: fmt.Sprintf("%s: items must be a list of objects", d.Kind)}
	}
	var out []Document
	for _, it := range items.Content {
		it = resolve(it)
		if it.Kind == yaml.ScalarNode && it.Tag == "!!null" {
			continue
		}
		item, err := documentOf(file, it)
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

func documentOf(file string, n *yaml.Node) (Document, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return Document{}, &ParseError{File: file, Line: n.Line, Msg: "expected a Kubernetes object (a mapping with apiVersion and kind), found " + nodeKind(n)}
	}
	d := Document{Source: Location{File: file, Line: n.Line}, Node: n,
		APIVersion: scalar(mapValue(n, "apiVersion")), Kind: scalar(mapValue(n, "kind"))}
	switch {
	case d.APIVersion == "":
		return Document{}, &ParseError{File: file, Line: n.Line, Msg: "object has no apiVersion: every Kubernetes object needs apiVersion and kind"}
	case d.Kind == "":
		return Document{}, &ParseError{File: file, Line: n.Line, Msg: "object has no kind: every Kubernetes object needs apiVersion and kind"}
	}
	meta := mapValue(n, "metadata")
	d.Name = scalar(mapValue(meta, "name"))
	d.Namespace = scalar(mapValue(meta, "namespace"))
	return d, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", text.Truncate(n.Value, 40, "..."))
	}
	return "something else"
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

// mapKey returns the key node of key in a mapping node (its line is the
// line of `key:`), or nil.
func mapKey(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// scalar returns a scalar node's value, or "".
func scalar(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// path follows keys through nested mappings.
func path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = mapValue(n, k)
		if n == nil {
			return nil
		}
	}
	return n
}
