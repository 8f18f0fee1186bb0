package inspect

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// FileStatus is how one file of a use compares.
type FileStatus string

const (
	FileEqual       FileStatus = "equal"
	FileDiffers     FileStatus = "differs"
	FileMissing     FileStatus = "missing"      // in the API, not in the container
	FileExtra       FileStatus = "extra"        // in the container, no longer in the API
	FileNotCompared FileStatus = "not-compared" // too large without sha256sum, or unreadable
)

// FileComparison compares one file of a volume or subPath use.
type FileComparison struct {
	// Path is relative to the use's mount (the volume root, or the
	// directory a subPath binds; "" for a subPath onto a file).
	Path     string
	Key      string
	Status   FileStatus
	Expected *ExpectedFile
	Verified *containerread.VerifiedFile
	// ExpectedMode is the mode the kubelet leaves (fsGroup included);
	// ModeDiffers is informational: modes come from the pod spec, never
	// from the object, so they do not make a use stale.
	ExpectedMode int32
	ModeDiffers  bool
	// ShadowedBy names the Secret sources of the projected volume, after
	// the use's own and not read, that may write this file. Set only on a
	// file that differs: the container may show their file there, so what
	// it holds is not kept (Verified has no content).
	ShadowedBy []string
}

// ShadowReason says what a file that differs may be when an unread Secret
// may shadow it; "" for any other file.
func (f FileComparison) ShadowReason() string {
	if len(f.ShadowedBy) == 0 {
		return ""
	}
	return shadowReason(f.ShadowedBy)
}

func shadowReason(by []string) string {
	return fmt.Sprintf("stale, or shadowed by %s (not read; --secrets reads %s)", strings.Join(by, " or "), pluralVerb(len(by), "it", "them"))
}

// shadowable marks a compared file that the unread Secret sources by,
// later in the projected volume, may write. Equal content is current
// whichever source wrote it; a difference may be the kubelet not having
// written the change yet, or the Secret's file: the content is dropped, as
// it may be Secret data.
func shadowable(fc FileComparison, by []string) FileComparison {
	if fc.Status != FileDiffers || len(by) == 0 {
		return fc
	}
	fc.ShadowedBy = by
	if of := fc.Verified; of != nil {
		fc.Verified = &containerread.VerifiedFile{Path: of.Path, Mode: of.Mode, Size: of.Size, Unread: "may be a Secret's file"}
	}
	return fc
}

// EnvComparison compares one environment variable of an env or envFrom use.
type EnvComparison struct {
	Name, Key                string
	Expected, Verified       string
	ExpectedSet, VerifiedSet bool
	Equal                    bool
}

// Comparison is the verdict of --verify for one use, with what it is based on.
type Comparison struct {
	State  State
	Reason string
	// Cause classifies an unverifiable state (see StateCause); Fix is
	// what fixes it, when known (the read's hint).
	Cause    StateCause
	Fix      string
	SyncedAt *time.Time
	Files    []FileComparison
	Env      []EnvComparison
	// Verified tells whether the container was read.
	Verified bool
}

// Differs reports whether the comparison found content that differs.
func (c Comparison) Differs() bool {
	for _, f := range c.Files {
		if f.Status == FileDiffers || f.Status == FileMissing || f.Status == FileExtra {
			return true
		}
	}
	for _, e := range c.Env {
		if !e.Equal {
			return true
		}
	}
	return false
}

func unionStrings(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// CompareOptions are the inputs of CompareUse besides the use itself.
type CompareOptions struct {
	Now time.Time
	// Object looks up other objects (other sources of a projected volume,
	// other envFrom sources); nil means none are known.
	Object func(ObjectKey) Object
}

// CompareUse decides the state of one use from what its container showed.
// pod is the consuming pod (its spec says which other sources share a
// projected volume and which env entries override others); obj the object
// as the API has it now.
func CompareUse(it Use, pod *corev1.Pod, obj Object, obs *containerread.Verified, o CompareOptions) Comparison {
	return compareUse(it, pod, inputsFor(it, obj), obs, o)
}

func compareUse(it Use, pod *corev1.Pod, in useInputs, obs *containerread.Verified, o CompareOptions) Comparison {
	obj := in.obj
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Object == nil {
		// Nothing is known of the other objects.
		o.Object = func(k ObjectKey) Object {
			return Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Unread: true}
		}
	}
	if obs == nil {
		return Comparison{State: StateUnverifiable, Reason: "the container was not observed"}
	}
	if obs.Err != nil {
		return Comparison{State: StateUnverifiable, Reason: obs.Err.ReasonFor(it.Object.Kind == KindSecret), Cause: causeOfVerifyError(obs.Err.Reason), Fix: cmp.Or(obs.Err.Fix, obs.Err.Hint)}
	}
	if obj.Unread {
		return Comparison{State: StateUnverifiable, Reason: fmt.Sprintf("%s %q was not read (add --secrets)", it.Object.Kind, it.Object.Name), Cause: CauseSecretsNotRead}
	}
	var c Comparison
	switch it.Mode {
	case ModeVolume, ModeItems, ModeProjected:
		c = compareVolume(it, pod, in, obs, o)
	case ModeSubPath, ModeSubPathExpr:
		c = compareSubPath(it, pod, in, obs, o)
	case ModeEnv:
		c = compareEnv(it, pod, obj, obs)
	case ModeEnvFrom:
		c = compareEnvFrom(it, pod, obj, obs, o)
	default:
		c = Comparison{State: StateNA, Reason: "nothing to check"}
	}
	if (it.Mode == ModeEnv || it.Mode == ModeEnvFrom) && c.State == StateStale && obs.EnvNote != "" {
		c.Reason += "; " + obs.EnvNote
	}
	c.Verified = true
	return c
}

func hasFSGroup(pod *corev1.Pod) bool {
	return pod != nil && pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil
}

func noShellNote(obs *containerread.Verified) string {
	if obs.NoShell {
		return " (no shell in the container: read file by file)"
	}
	return ""
}

// compareFile compares one expected file with what the container has.
func compareFile(e *ExpectedFile, of *containerread.VerifiedFile, fsGroup bool) FileComparison {
	fc := FileComparison{Expected: e, Verified: of, ExpectedMode: -1}
	if e != nil {
		fc.Path, fc.Key = e.Path, e.Key
		fc.ExpectedMode = FSGroupMode(e.Mode, fsGroup)
	}
	switch {
	case e == nil:
		fc.Path, fc.Status = of.Path, FileExtra
		return fc
	case of == nil:
		fc.Status = FileMissing
		return fc
	}
	fc.ModeDiffers = of.Mode >= 0 && of.Mode&0o7777 != fc.ExpectedMode&0o7777
	switch {
	case of.HasData:
		fc.Status = FileDiffers
		if bytes.Equal(of.Data, e.Data) {
			fc.Status = FileEqual
		}
	case of.SHA256 != "":
		fc.Status = FileDiffers
		if (of.Size < 0 || of.Size == int64(len(e.Data))) && of.SHA256 == containerread.SHA256Hex(e.Data) {
			fc.Status = FileEqual
		}
	case of.Size >= 0 && of.Size != int64(len(e.Data)):
		fc.Status = FileDiffers
	default:
		fc.Status = FileNotCompared
	}
	return fc
}

// tally summarises file comparisons. names are the files that differ,
// but for those an unread Secret may shadow (FileComparison.ShadowedBy):
// shadowNames, and shadowBy the Secrets.
type tally struct {
	equal, differ, notCompared int
	names                      []string
	unread                     []string
	shadowNames, shadowBy      []string
}

func tallyFiles(fcs []FileComparison) tally {
	var t tally
	for _, f := range fcs {
		switch f.Status {
		case FileEqual:
			t.equal++
		case FileNotCompared:
			t.notCompared++
			t.unread = append(t.unread, displayPath(f.Path))
		default:
			t.differ++
			n := displayPath(f.Path)
			switch f.Status {
			case FileMissing:
				n += " (not in the container yet)"
			case FileExtra:
				n += " (removed from the API, still in the container)"
			}
			if len(f.ShadowedBy) > 0 {
				t.shadowNames = append(t.shadowNames, n)
				t.shadowBy = unionStrings(t.shadowBy, f.ShadowedBy)
				continue
			}
			t.names = append(t.names, n)
		}
	}
	return t
}

// differences names the files that differ; those an unread Secret may
// shadow apart, with both things they may be.
func (t tally) differences() string {
	if len(t.shadowNames) == 0 {
		return fmt.Sprintf("differs from the API (%s)", listNames(t.names, 3))
	}
	shadow := fmt.Sprintf("%s %s from the API: %s", listNames(t.shadowNames, 3),
		pluralVerb(len(t.shadowNames), "differs", "differ"), shadowReason(t.shadowBy))
	if len(t.names) == 0 {
		return shadow
	}
	return fmt.Sprintf("differs from the API (%s); %s", listNames(t.names, 3), shadow)
}

func displayPath(p string) string {
	if p == "" {
		return "the file"
	}
	return fmt.Sprintf("%q", p)
}

func listNames(names []string, n int) string {
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// unreadNote explains files or variables left out because unread Secrets
// may provide them.
func unreadNote(what string, by []string) string {
	verb := "was"
	if len(by) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("%s may come from %s, which %s not read (add --secrets)", what, strings.Join(by, " or "), verb)
}

func pluralVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sortByPath sorts file comparisons by path, keeping the order of equal
// paths.
func sortByPath(fcs []FileComparison) {
	slices.SortStableFunc(fcs, func(a, b FileComparison) int { return strings.Compare(a.Path, b.Path) })
}
