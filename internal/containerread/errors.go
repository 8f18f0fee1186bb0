package containerread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
)

// Reasons a verify read fails: the words of the contract's unverifiable
// state.
const (
	VerifyForbidden  = "forbidden"
	VerifyNoShell    = "no shell"
	VerifyNotRunning = "not running"
	VerifyTimeout    = "timeout"
	VerifyFailed     = "error"
)

// VerifyError says why a container could not be read, with a hint.
type VerifyError struct {
	Reason  string
	Message string
	Hint    string
	// Fix, when set, is the part of Hint that says what to do, the same
	// for every container the cause stops (Hint may quote the API
	// server's words about one pod): what a shared warning says.
	Fix string
	// redacted, when set, replaces Message for the uses of a Secret: the
	// message quotes what the container printed (a file's bytes may be a
	// Secret's).
	redacted string
}

// ReasonFor is Error for a use of a Secret (secret) or a ConfigMap: for a
// Secret, the message leaves out what the container printed.
func (e *VerifyError) ReasonFor(secret bool) string {
	if secret && e.redacted != "" {
		r := *e
		r.Message, r.redacted = e.redacted, ""
		return r.Error()
	}
	return e.Error()
}

// parseError is malformed output of the verify script. field is the
// raw text that did not parse, output of the container: it is quoted only
// a few bytes long, and left out for Secret uses (see VerifyError).
type parseError struct{ msg, field string }

// parseErrorQuote bounds how much container output an error quotes.
const parseErrorQuote = 8

func (e *parseError) Error() string {
	return fmt.Sprintf("%s %q", e.msg, truncate(e.field, parseErrorQuote))
}

func badRecord(msg, field string) error { return &parseError{msg: msg, field: field} }

// redactedError is err without the container output it quotes.
func redactedError(err error) string {
	var pe *parseError
	if errors.As(err, &pe) {
		return pe.msg
	}
	return err.Error()
}

func (e *VerifyError) Error() string {
	s := e.Reason
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// truncate keeps at most n bytes of s, never half a character.
func truncate(s string, n int) string { return text.TruncateBytes(s, n, "...") }

func stderrSuffix(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return ": " + truncate(strings.ReplaceAll(s, "\n", " "), 200)
}

// ClassifyExecError turns an exec failure into the contract's reasons.
func ClassifyExecError(ctx context.Context, err error, stderr []byte) *VerifyError {
	msg := err.Error()
	low := strings.ToLower(msg)
	var code utilexec.ExitError
	hasCode := errors.As(err, &code)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &VerifyError{Reason: VerifyTimeout, Message: "the exec did not finish in time", Hint: "raise --exec-timeout"}
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return &VerifyError{Reason: VerifyFailed, Message: "interrupted"}
	case nodeRefused(low):
		return nodeRefusedExec(msg)
	case apierrors.IsForbidden(err) || strings.Contains(low, "forbidden"):
		return forbiddenExec(msg)
	case NotFoundBinary(err, stderr):
		return &VerifyError{Reason: VerifyNoShell, Message: "the container has no sh"}
	case apierrors.IsNotFound(err) || podNotFound.MatchString(msg):
		// deleted while it was read (the upgrade answers 404)
		return &VerifyError{Reason: VerifyNotRunning, Message: "the pod was deleted: " + firstLine(msg)}
	case strings.Contains(low, "container not found") || strings.Contains(low, "not running") ||
		strings.Contains(low, "stopped state") || strings.Contains(low, "container_exited") ||
		strings.Contains(low, "is terminated") || strings.Contains(low, "not created") ||
		// containerd, when the container exits while an exec starts in it
		strings.Contains(low, "no running task found") || strings.Contains(low, "ttrpc: closed") ||
		strings.Contains(low, "cannot exec in a deleted state") || taskNotFound.MatchString(low):
		return &VerifyError{Reason: VerifyNotRunning, Message: firstLine(msg)}
	case hasCode:
		return &VerifyError{Reason: VerifyFailed, Message: fmt.Sprintf("exit code %d%s", code.ExitStatus(), stderrSuffix(stderr))}
	}
	return &VerifyError{Reason: VerifyFailed, Message: firstLine(msg)}
}

// deniedVerb finds the verb an RBAC denial names: `User "u" cannot create
// resource "pods/exec" ...`.
var deniedVerb = regexp.MustCompile(`cannot (\w+) resource "pods/exec"`)

// execRoleRule is the Role rule that allows verify's exec (both verbs:
// WebSocket exec is a GET, the SPDY fallback a POST).
const execRoleRule = `{apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}`

// forbiddenExec is the verify error of an exec RBAC denies. Its
// reason leads with the missing permission ("forbidden: create pods/exec"),
// then the API server's words and the rule that grants it.
func forbiddenExec(msg string) *VerifyError {
	verb := "create"
	if m := deniedVerb.FindStringSubmatch(msg); m != nil {
		verb = m[1]
	}
	server := firstLine(msg)
	// client-go prefixes the API server's message with its own words
	server = strings.TrimPrefix(server, "unable to upgrade connection: ")
	fix := "verify needs get and create on pods/exec: a Role with " + execRoleRule + " grants them"
	return &VerifyError{Reason: VerifyForbidden, Message: verb + " pods/exec", Hint: server + "; " + fix, Fix: fix}
}

// nodeRefused tells whether RBAC let the exec through and the way from the
// API server to the node refused it: a proxy between them (konnectivity,
// an egress proxy) answering its CONNECT with 403 (`error sending request:
// ... proxy error ... code 403`), or the kubelet not authorizing the API
// server (`Forbidden (user=..., verb=create, resource=nodes,
// subresource=proxy)`).
func nodeRefused(low string) bool {
	proxy := strings.Contains(low, "error sending request") && (strings.Contains(low, "code 403") || strings.Contains(low, "403 forbidden"))
	kubelet := strings.Contains(low, "resource=nodes") && strings.Contains(low, "subresource=proxy")
	return proxy || kubelet
}

// nodeRefusedExec is the verify error of an exec refused between the API
// server and the node. Like an RBAC denial it stays (the next exec takes
// the same way), but its fix is the cluster's, not cmsync's Role; the node
// reader execs into its reader pod the same way, so it would meet the
// same refusal.
func nodeRefusedExec(msg string) *VerifyError {
	fix := "RBAC let the exec through, and the way from the API server to the node refused it: a proxy between them (konnectivity, an egress proxy) or the node's kubelet, " +
		"which must authorize the API server's kubelet client (nodes/proxy); cmsync's Role is not the cause"
	return &VerifyError{Reason: VerifyForbidden, Message: "the node refused the exec", Hint: firstLine(msg) + "; " + fix, Fix: fix}
}

// NotFoundBinary tells whether an exec failed because argv[0] does not exist
// in the container (as containerd/runc, CRI-O and docker report it).
func NotFoundBinary(err error, stderr []byte) bool {
	if err == nil {
		return false
	}
	low := strings.ToLower(err.Error())
	if strings.Contains(low, "executable file not found") ||
		(strings.Contains(low, "no such file or directory") && (strings.Contains(low, "exec") || strings.Contains(low, "oci runtime"))) {
		return true
	}
	var code utilexec.ExitError
	if errors.As(err, &code) && (code.ExitStatus() == 126 || code.ExitStatus() == 127) {
		se := strings.ToLower(string(stderr))
		return strings.Contains(se, "executable file not found") || strings.Contains(se, "no such file or directory") ||
			strings.Contains(se, "not found") || len(bytes.TrimSpace(stderr)) == 0
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return truncate(requestURL.ReplaceAllString(s, `$1 "$2"`), 300)
}

// podNotFound matches the API server's answer for a pod that is gone.
var podNotFound = regexp.MustCompile(`\bpods "[^"]*" not found\b`)

// taskNotFound is containerd's answer to an exec created in a container
// whose task has just ended ("failed to create exec ...: task ID not found").
var taskNotFound = regexp.MustCompile(`\btask [0-9a-f]+ not found\b`)

// requestURL matches a quoted request URL with its query in an error
// message: the query of an exec request is the whole verify script,
// which would hide the cause at the end of the message.
var requestURL = regexp.MustCompile(`\b(GET|POST|Get|Post) "([^"?]*)\?[^"]*"`)
