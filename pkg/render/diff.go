package render

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Diff renders comparisons (diff, and the dashboard's diff screen) as
// unified diffs; a Secret's values as fingerprints unless
// ShowSecretValues. It is not a Table: what a comparison shows is a diff of
// many lines, or a file for an external diff program, and its errors go to
// ErrOut, not a row of cells.
type Diff struct {
	Out, ErrOut      io.Writer
	Color            bool
	HMACKey          []byte
	ShowSecretValues bool
	// Redact is the output edge of the reasons (never of the values
	// --show-secret-values asks for).
	Redact *inspect.Redactor
	// External, when set, receives the ConfigMap files and environments
	// that differ instead of Out (an external diff program shows them).
	External DiffFiles
}

// DiffFiles collects the two sides of what differs for an external diff
// program.
type DiffFiles interface {
	AddFile(it inspect.Use, f inspect.FileComparison, old []byte, oldOK bool, new []byte, newOK bool)
	AddEnv(it inspect.Use, old, new string)
}

// DiffSummary counts the consumers that differ, could not be checked, and
// were compared.
type DiffSummary struct {
	Differ, Unverifiable, Compared int
}

const (
	ansiReset = "\033[0m"
	ansiBold  = "\033[1m"
	ansiRed   = "\033[31m"
	ansiGreen = "\033[32m"
	ansiCyan  = "\033[36m"
)

// consumerLabel names a use: pod, container and where it reads.
func consumerLabel(it inspect.Use) string {
	s := fmt.Sprintf("pod/%s container %s", it.Pod.Name, it.ContainerName())
	switch it.Mode {
	case inspect.ModeEnv:
		return s + " env " + it.EnvName
	case inspect.ModeEnvFrom:
		if it.EnvPrefix != "" {
			return s + " envFrom (prefix " + it.EnvPrefix + ")"
		}
		return s + " envFrom"
	}
	if it.Volume != nil {
		return s + " " + string(it.Mode) + " " + it.Volume.MountPath
	}
	return s
}

func (r *Diff) paint(color, s string) string {
	if !r.Color || s == "" {
		return s
	}
	return color + s + ansiReset
}

// colorize paints a unified diff.
func (r *Diff) colorize(d string) string {
	if !r.Color {
		return d
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(d, "\n") {
		body := strings.TrimSuffix(line, "\n")
		nl := line[len(body):]
		switch {
		case strings.HasPrefix(body, "---") || strings.HasPrefix(body, "+++"):
			b.WriteString(r.paint(ansiBold, body))
		case strings.HasPrefix(body, "@@"):
			b.WriteString(r.paint(ansiCyan, body))
		case strings.HasPrefix(body, "-"):
			b.WriteString(r.paint(ansiRed, body))
		case strings.HasPrefix(body, "+"):
			b.WriteString(r.paint(ansiGreen, body))
		default:
			b.WriteString(body)
		}
		b.WriteString(nl)
	}
	return b.String()
}

// fingerprint is a short HMAC-SHA256 of a secret value under the run's key:
// it tells whether two sides are equal without revealing a short value to a
// dictionary attack.
func (r *Diff) fingerprint(kind string, b []byte) string {
	m := hmac.New(sha256.New, r.HMACKey)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(b)
	return "hmac:" + hex.EncodeToString(m.Sum(nil))[:12]
}

func isText(b []byte) bool {
	return utf8.Valid(b) && !bytes.ContainsRune(b, 0)
}

// Render prints every result; with External, the ConfigMap files and
// environments that differ go there.
func (r *Diff) Render(results []inspect.VerifiedUse) DiffSummary {
	var sum DiffSummary
	for _, res := range results {
		it, c := res.Use, res.Comparison
		label := text.Printable(consumerLabel(it))
		switch c.State {
		case inspect.StateUnverifiable:
			sum.Unverifiable++
			if it.Warning > 0 { // its cause and fix are said once
				fmt.Fprintf(r.ErrOut, "%s: unverifiable: see warning %d\n", label, it.Warning)
				continue
			}
			fmt.Fprintf(r.ErrOut, "%s: unverifiable: %s\n", label, text.Printable(r.Redact.String(c.Reason)))
			continue
		case inspect.StateNA:
			continue
		case inspect.StateMissing:
			sum.Differ++
			fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s/%s: missing", label, strings.ToLower(it.Object.Kind), it.Object.Name)))
			fmt.Fprintf(r.ErrOut, "%s: missing: %s\n", label, text.Printable(r.Redact.String(c.Reason)))
			continue
		}
		sum.Compared++
		if !c.Differs() {
			switch c.State {
			case inspect.StateStale, inspect.StatePending, inspect.StateBroken:
				// Judged without content to show (an init container that
				// finished, judged by time): a difference all the same.
				sum.Differ++
				fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s/%s (%s)", label, strings.ToLower(it.Object.Kind), it.Object.Name, c.State)))
				fmt.Fprintf(r.Out, "%s\n", text.Printable(r.Redact.String(c.Reason)))
			}
			continue
		}
		sum.Differ++
		secret := it.Object.Kind == inspect.KindSecret
		// What the container shows may be a Secret's even for a ConfigMap
		// use (a secretRef that overrides a variable, a secret source of
		// the same projected volume): fingerprint those values too.
		exposure := inspect.SecretExposureOf(it, res.Pod)
		obj := fmt.Sprintf("%s/%s", strings.ToLower(it.Object.Kind), it.Object.Name)
		fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s (%s)", label, obj, c.State)))
		if len(c.Env) > 0 {
			r.renderEnv(it, c, obj, secret, exposure)
		}
		for _, f := range c.Files {
			switch {
			case f.Status == inspect.FileEqual || f.Status == inspect.FileNotCompared:
				continue
			case f.ShadowReason() != "":
				// an unread Secret's file may be there: no content to show
				fmt.Fprintf(r.Out, "%s: differs: %s\n", text.Printable(cmp.Or(f.Key, f.Path)), text.Printable(f.ShadowReason()))
				continue
			}
			r.renderFile(it, f, obj, secret || (f.Verified != nil && exposure.File(f.Path)))
		}
	}
	return sum
}

// containerPath is where the container sees a file of the use.
func containerPath(it inspect.Use, rel string) string {
	if it.Volume == nil {
		return rel
	}
	if rel == "" {
		return it.Volume.MountPath
	}
	return path.Join(it.Volume.MountPath, rel)
}

func (r *Diff) renderFile(it inspect.Use, f inspect.FileComparison, obj string, secret bool) {
	key := f.Key
	if key == "" {
		key = f.Path
	}
	from := text.Printable(fmt.Sprintf("pod/%s/%s:%s", it.Pod.Name, it.ContainerName(), containerPath(it, f.Path)))
	to := text.Printable(fmt.Sprintf("%s key %s", obj, key))
	var old, new []byte
	oldOK, newOK := false, false
	if f.Verified != nil && f.Verified.HasData {
		old, oldOK = f.Verified.Data, true
	}
	if f.Expected != nil {
		new, newOK = f.Expected.Data, true
	}
	switch f.Status {
	case inspect.FileMissing:
		from = "(not in the container)"
	case inspect.FileExtra:
		to = "(not in the " + strings.ToLower(it.Object.Kind) + ")"
	}
	if secret && !r.ShowSecretValues {
		r.renderSecretFile(it, f, key)
		return
	}
	// Only one side's hash is known (a large file): say so.
	if (f.Verified != nil && !f.Verified.HasData && f.Status != inspect.FileMissing) || (oldOK && newOK && (!isText(old) || !isText(new))) ||
		(oldOK && !newOK && !isText(old)) || (newOK && !oldOK && !isText(new)) {
		fmt.Fprintf(r.Out, "Files %s and %s differ (%s)\n", from, to, sizeNote(f))
		return
	}
	if r.External != nil && !secret {
		r.External.AddFile(it, f, old, oldOK, new, newOK)
		return
	}
	if f.Status == inspect.FileMissing {
		from = "/dev/null"
	}
	if f.Status == inspect.FileExtra {
		to = "/dev/null"
	}
	d := udiff.Unified(from, to, string(old), string(new))
	if d == "" {
		fmt.Fprintf(r.Out, "Files %s and %s differ (%s)\n", from, to, sizeNote(f))
		return
	}
	fmt.Fprint(r.Out, r.colorize(d))
}

func sizeNote(f inspect.FileComparison) string {
	var parts []string
	if f.Verified != nil {
		if f.Verified.Size >= 0 {
			parts = append(parts, fmt.Sprintf("container %d bytes", f.Verified.Size))
		}
	} else {
		parts = append(parts, "not in the container")
	}
	if f.Expected != nil {
		parts = append(parts, fmt.Sprintf("API %d bytes", len(f.Expected.Data)))
	} else {
		parts = append(parts, "not in the API")
	}
	return strings.Join(parts, ", ")
}

// renderSecretFile prints "key: differs" and the fingerprints of both sides.
func (r *Diff) renderSecretFile(it inspect.Use, f inspect.FileComparison, key string) {
	side := func(of *containerread.VerifiedFile) string {
		switch {
		case of == nil:
			return "absent"
		case of.HasData:
			return r.fingerprint("content", of.Data)
		case of.SHA256 != "":
			raw, _ := hex.DecodeString(of.SHA256)
			return r.fingerprint("sha256", raw)
		}
		return "unread"
	}
	container := side(f.Verified)
	api := "absent"
	if f.Expected != nil {
		if f.Verified != nil && !f.Verified.HasData && f.Verified.SHA256 != "" {
			s := sha256.Sum256(f.Expected.Data)
			api = r.fingerprint("sha256", s[:])
		} else {
			api = r.fingerprint("content", f.Expected.Data)
		}
	}
	fmt.Fprintf(r.Out, "%s: differs (container %s, API %s)\n", key, r.paint(ansiRed, container), r.paint(ansiGreen, api))
}

func envLines(env []inspect.EnvComparison, observed bool) string {
	var b strings.Builder
	for _, e := range env {
		v, set := e.Expected, e.ExpectedSet
		if observed {
			v, set = e.Verified, e.VerifiedSet
		}
		if set {
			fmt.Fprintf(&b, "%s=%s\n", e.Name, envDisplay(v))
		}
	}
	return b.String()
}

// envDisplay keeps a value on one line: quoted when it holds a newline or
// another control character.
func envDisplay(v string) string {
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return strconv.Quote(v)
		}
	}
	return v
}

func (r *Diff) renderEnv(it inspect.Use, c inspect.Comparison, obj string, secret bool, exposure inspect.SecretExposure) {
	env := append([]inspect.EnvComparison{}, c.Env...)
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	// A ConfigMap's variable whose value in the container may be a
	// Secret's: only its fingerprint, in the text and in the files of the
	// external diff; with --show-secret-values, its value, but never on
	// disk.
	exposed := false
	for i, e := range env {
		if secret || !e.VerifiedSet || !exposure.Env(e.Name) {
			continue
		}
		exposed = true
		if !r.ShowSecretValues {
			env[i].Verified = r.fingerprint("content", []byte(e.Verified))
			if e.ExpectedSet {
				env[i].Expected = r.fingerprint("content", []byte(e.Expected))
			}
		}
	}
	if secret && !r.ShowSecretValues {
		for _, e := range env {
			if e.Equal {
				continue
			}
			side := func(v string, set bool) string {
				if !set {
					return "unset"
				}
				return r.fingerprint("content", []byte(v))
			}
			fmt.Fprintf(r.Out, "%s (key %s): differs (container %s, API %s)\n", e.Name, e.Key,
				r.paint(ansiRed, side(e.Verified, e.VerifiedSet)), r.paint(ansiGreen, side(e.Expected, e.ExpectedSet)))
		}
		return
	}
	// Only the variables that differ, plus their neighbours as context.
	old, new := envLines(env, true), envLines(env, false)
	if r.External != nil && !secret && !(exposed && r.ShowSecretValues) {
		r.External.AddEnv(it, old, new)
		return
	}
	from := fmt.Sprintf("pod/%s/%s environment", it.Pod.Name, it.ContainerName())
	d := udiff.Unified(from, obj, old, new)
	fmt.Fprint(r.Out, r.colorize(d))
}
