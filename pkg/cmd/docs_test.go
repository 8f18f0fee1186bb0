package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The help of some flags states facts the docs state too: the tools the
// node reader's image needs, the values a flag takes, the Kubernetes names
// it relies on (hostPID, SYS_PTRACE, kubectl.kubernetes.io/restartedAt,
// ...). The test below keeps the docs naming everything such a help names,
// so that a change to one fails until the other follows.

// docFlag is a flag whose help names facts that one section of the docs
// describes.
type docFlag struct {
	name string // the flag, without dashes
	// doc is the file that describes it, from the repository root, and
	// section the heading of its section there ("" for the whole file).
	doc, section string
	// values are the values the flag takes: each is named in its help, and
	// in the section as `v`, --name v or --name=v.
	values []string
	// tools: the help lists, after "needs", the tools an image must have
	// ("needs A, B and C"): each is named in the section as `tool`.
	tools bool
}

var docFlags = []docFlag{
	{name: "reader", doc: "docs/node-reader.md", values: []string{"exec", "node", "auto"}},
	{name: "reader-image", doc: "docs/node-reader.md", section: "## The reader image", tools: true},
	{name: "reader-namespace", doc: "docs/node-reader.md"},
	{name: "reader-lifetime", doc: "docs/node-reader.md"},
	{name: "reader-idle-timeout", doc: "docs/node-reader.md"},
	{name: "kubelet-root-dir", doc: "docs/node-reader.md"},
	{name: "strategy", doc: "docs/commands.md", section: "## refresh", values: []string{"auto", "annotate", "restart"}},
	{name: "restart-via", doc: "docs/commands.md", section: "## refresh", values: []string{"template", "evict"}},
	{name: "reload-hook-via", doc: "docs/commands.md", section: "## refresh", values: []string{"direct", "proxy"}},
}

// flagUse is one distinct help of a flag, with the commands that have it.
type flagUse struct {
	usage, defValue, typ string
	commands             []string
}

// flagUses walks every command of the root and returns the distinct helps
// of the flag name.
func flagUses(root *cobra.Command, name string) []*flagUse {
	var uses []*flagUse
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup(name); f != nil {
			i := slices.IndexFunc(uses, func(u *flagUse) bool { return u.usage == f.Usage && u.defValue == f.DefValue })
			if i < 0 {
				uses = append(uses, &flagUse{usage: f.Usage, defValue: f.DefValue, typ: f.Value.Type()})
				i = len(uses) - 1
			}
			uses[i].commands = append(uses[i].commands, c.Name())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return uses
}

// docSection is the text of the section of doc under heading: from the
// heading to the next heading of the same or a higher level, outside code
// blocks; the whole file for "".
func docSection(doc, heading string) (string, error) {
	if heading == "" {
		return doc, nil
	}
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	var out []string
	in, fence := false, false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(line, "#") {
			l := strings.IndexFunc(line, func(r rune) bool { return r != '#' })
			if in && l > 0 && l <= level {
				break
			}
			if line == heading || strings.HasPrefix(line, heading+":") || strings.HasPrefix(line, heading+" ") {
				in = true
			}
		}
		if in {
			out = append(out, line)
		}
	}
	if !in {
		return "", fmt.Errorf("no section %q", heading)
	}
	return strings.Join(out, "\n"), nil
}

// codeWord is a word of a help that names a thing rather than says
// something: a flag (--root-dir), a path (/var/lib/kubelet), a resource
// or a list of verbs (pods/exec, create/delete), a dotted name
// (kubectl.kubernetes.io/restartedAt), a camel-case field or kind
// (hostPID, activeDeadlineSeconds, PodDisruptionBudgets) or a constant
// (SYS_PTRACE).
var camel = regexp.MustCompile(`[a-z][A-Z]`)

func codeWords(usage string) []string {
	var out []string
	for _, w := range strings.Fields(usage) {
		w = strings.Trim(w, `()[]{},;:.'"`)
		switch {
		case len(w) < 2:
		case strings.HasPrefix(w, "--"), strings.Contains(w, "/"), strings.Contains(w, "_"),
			strings.Contains(w, "."), camel.MatchString(w):
			out = append(out, w)
		}
	}
	return out
}

// needs matches a list of tools: "needs A, B and C".
var needs = regexp.MustCompile(`\bneeds ((?:[a-z0-9]+, )*[a-z0-9]+(?:,? and [a-z0-9]+)?)`)

// toolList returns the tools every "needs ..." of usage lists.
func toolList(usage string) []string {
	var out []string
	for _, m := range needs.FindAllStringSubmatch(usage, -1) {
		for _, t := range regexp.MustCompile(`,? and |, `).Split(m[1], -1) {
			if t != "" && t != "and" && t != "or" {
				out = append(out, t)
			}
		}
	}
	return out
}

// namesValue: the section names v as a value of the flag.
func namesValue(section, flag, v string) bool {
	return strings.Contains(section, "`"+v+"`") || strings.Contains(section, "--"+flag+" "+v) ||
		strings.Contains(section, "--"+flag+"="+v)
}

// docProblems says what the help of f names that its section does not.
func docProblems(f docFlag, u *flagUse, section string) []string {
	var out []string
	if !strings.Contains(section, "--"+f.name) {
		out = append(out, fmt.Sprintf("does not name --%s", f.name))
	}
	for _, w := range codeWords(u.usage) {
		if !strings.Contains(section, w) {
			out = append(out, fmt.Sprintf("does not name %q, which the help names", w))
		}
	}
	for _, v := range f.values {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(u.usage) {
			out = append(out, fmt.Sprintf("the help does not name the value %q (a value renamed? update docFlags and the docs)", v))
		}
		if !namesValue(section, f.name, v) {
			out = append(out, fmt.Sprintf("does not name the value %q", v))
		}
	}
	if u.typ == "string" && u.defValue != "" && !namesValue(section, f.name, u.defValue) {
		out = append(out, fmt.Sprintf("does not name the default %q", u.defValue))
	}
	if f.tools {
		tools := toolList(u.usage)
		if len(tools) == 0 {
			out = append(out, `the help lists no tools: write them as "needs A, B and C"`)
		}
		for _, t := range tools {
			if !strings.Contains(section, "`"+t+"`") {
				out = append(out, fmt.Sprintf("does not name `%s`, which the help says the image needs", t))
			}
		}
	}
	return out
}

// TestDocsNameWhatFlagHelpNames: for each flag of docFlags, on every
// command that has it, its section of the docs names the flag, its values
// and string default, every code-like word of its help, and every tool its
// help lists.
func TestDocsNameWhatFlagHelpNames(t *testing.T) {
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, f := range docFlags {
		t.Run(f.name, func(t *testing.T) {
			uses := flagUses(root, f.name)
			if len(uses) == 0 {
				t.Fatalf("no command has --%s: renamed? update docFlags and %s", f.name, f.doc)
			}
			b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f.doc)))
			if err != nil {
				t.Fatal(err)
			}
			section, err := docSection(string(b), f.section)
			if err != nil {
				t.Fatalf("%s: %v", f.doc, err)
			}
			where := f.doc
			if f.section != "" {
				where += ", section " + f.section + ","
			}
			for _, u := range uses {
				for _, p := range docProblems(f, u, section) {
					t.Errorf("--%s (%s): %s %s\n  help: %s", f.name, strings.Join(u.commands, ", "), where, p, u.usage)
				}
			}
		})
	}
}

// TestDocsCheckFailsOnDrift: the check of TestDocsNameWhatFlagHelpNames
// fails when a help and its docs say different things.
func TestDocsCheckFailsOnDrift(t *testing.T) {
	image := docFlag{name: "reader-image", tools: true}
	doc := "## The reader image\n\n`--reader-image` needs `sh`, `grep` and `tar`; `readlink` without `tar`.\n\n## Next\n\n`cat`\n"
	section, err := docSection(doc, "## The reader image")
	if err != nil {
		t.Fatal(err)
	}
	use := func(usage string) *flagUse { return &flagUse{usage: usage, typ: "string"} }
	cases := []struct {
		name  string
		f     docFlag
		usage string
		want  []string // a part of each problem, in order; none when the docs agree
	}{
		{"agree", image, "Image (needs sh, grep and tar; without tar it needs readlink too).", nil},
		{"a tool the docs do not name", image, "Image (needs sh, grep, awk and tar).", []string{"`awk`"}},
		{"a tool named after the section ends", image, "Image (needs sh and cat).", []string{"`cat`"}},
		{"no list to check", image, "Image of the reader pods.", []string{"lists no tools"}},
		{"a name the docs lack", docFlag{name: "reader-image"}, "Image (hostPID and SYS_PTRACE).", []string{`"hostPID"`, `"SYS_PTRACE"`}},
		{"a value the help lacks", docFlag{name: "reader-image", values: []string{"sh"}}, "Image.", []string{"the help does not name the value"}},
		{"a value the docs lack", docFlag{name: "reader-image", values: []string{"awk"}}, "Image: awk.", []string{`the value "awk"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := docProblems(tc.f, use(tc.usage), section)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d naming %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want it to name %s", got[i], w)
				}
			}
		})
	}
	if got := toolList("Image (needs sh, cat, ls, stat, sha256sum, sort, tr and sleep)."); !slices.Equal(got, []string{"sh", "cat", "ls", "stat", "sha256sum", "sort", "tr", "sleep"}) {
		t.Errorf("toolList = %q", got)
	}
	// a flag no command has is reported, not skipped
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if uses := flagUses(root, "no-such-flag"); len(uses) != 0 {
		t.Errorf("flagUses(no-such-flag) = %v", uses)
	}
	var names []string
	for _, u := range flagUses(root, "reader") {
		names = append(names, u.commands...)
	}
	sort.Strings(names)
	if len(names) < 2 {
		t.Errorf("--reader found on %v, want every command that verifies", names)
	}
}
