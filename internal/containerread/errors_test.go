package containerread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	utilexec "k8s.io/client-go/util/exec"
)

func TestClassifyExecError(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), VerifyTimeout},
		{errors.New(`pods "p" is forbidden: User "u" cannot create resource "pods/exec"`), VerifyForbidden},
		{errors.New(`OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in $PATH: unknown`), VerifyNoShell},
		{utilexec.CodeExitError{Err: errors.New("command terminated with exit code 127"), Code: 127}, VerifyNoShell},
		{errors.New(`unable to upgrade connection: container not found ("c")`), VerifyNotRunning},
		{utilexec.CodeExitError{Err: errors.New("command terminated with exit code 2"), Code: 2}, VerifyFailed},
		// seen on the e2e cluster: a pod deleted and a container that exited while they were observed
		{errors.New(`unable to upgrade connection: pods "deleted" not found`), VerifyNotRunning},
		{errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to create exec "36960a": ttrpc: closed: unknown`), VerifyNotRunning},
		{errors.New(`Internal error occurred: error executing command in container: failed to exec in container: failed to load task: no running task found: task bf2b not found: not found`), VerifyNotRunning},
		// containerd 1.6 (v1.30.14 cluster), the container's task gone as the exec is created
		{errors.New(`Internal error occurred: Internal error occurred: error executing command in container: failed to exec in container: failed to create exec "2065b9": task 9e2e00 not found: not found`), VerifyNotRunning},
		// containerd 2.4 (v1.37.2 cluster), the same race: the task already deleted
		{errors.New(`Internal error occurred: Internal error occurred: error executing command in container: failed to exec in container: failed to create exec "8a51b8": cannot exec in a deleted state`), VerifyNotRunning},
	}
	for _, c := range cases {
		if got := ClassifyExecError(ctx, c.err, nil); got.Reason != c.want {
			t.Errorf("%v: %s, want %s", c.err, got.Reason, c.want)
		}
	}
}

func TestFirstLineDropsRequestQuery(t *testing.T) {
	msg := `Internal error occurred: error sending request: Post "https://192.0.2.2:10250/exec/ns/p/c?command=sh&command=-c&command=m%3D%241": dial unix /run/tunnel.sock: connect: resource temporarily unavailable`
	want := `Internal error occurred: error sending request: Post "https://192.0.2.2:10250/exec/ns/p/c": dial unix /run/tunnel.sock: connect: resource temporarily unavailable`
	if got := firstLine(msg); got != want {
		t.Fatalf("firstLine =\n%s\nwant\n%s", got, want)
	}
}

// TestForbiddenExecReason: an exec RBAC denies is reported with the missing
// permission first ("forbidden: create pods/exec"), the API server's words
// (without client-go's prefix) and the rule that grants it.
func TestForbiddenExecReason(t *testing.T) {
	const server = `pods "web-1" is forbidden: User "system:serviceaccount:shop:reader" cannot create resource "pods/exec" in API group "" in the namespace "shop"`
	cases := []struct{ name, msg, want string }{
		{"SPDY fallback (create)", "unable to upgrade connection: " + server,
			`forbidden: create pods/exec (` + server + `; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
		{"WebSocket only (get)", strings.ReplaceAll(server, "cannot create", "cannot get"),
			`forbidden: get pods/exec (` + strings.ReplaceAll(server, "cannot create", "cannot get") + `; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
		{"unknown wording", "Forbidden",
			`forbidden: create pods/exec (Forbidden; verify needs get and create on pods/exec: a Role with {apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]} grants them)`},
	}
	for _, c := range cases {
		got := ClassifyExecError(context.Background(), errors.New(c.msg), nil)
		if got.Reason != VerifyForbidden || got.Error() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got.Error(), c.want)
		}
	}
}

// TestNodeRefusedExecIsNotRBAC: an exec that RBAC let through and the way
// to the node refused (a proxy answering the API server's CONNECT with
// 403, a kubelet that does not authorize the API server) is said as the
// node's refusal, not as a missing pods/exec permission.
func TestNodeRefusedExecIsNotRBAC(t *testing.T) {
	for _, msg := range []string{
		`Internal error occurred: error sending request: Post "https://10.63.0.1:10250/exec/ns/web-1/app?command=sh": proxy error from /run/kubelet-tunnel.sock while dialing 10.63.0.1:10250, code 403: 403 Forbidden`,
		`unable to upgrade connection: Forbidden (user=kube-apiserver-kubelet-client, verb=create, resource=nodes, subresource=proxy)`,
	} {
		got := ClassifyExecError(context.Background(), errors.New(msg), nil)
		if got.Reason != VerifyForbidden || got.Message != "the node refused the exec" || strings.Contains(got.Error(), "pods/exec: a Role") ||
			!strings.Contains(got.Hint, firstLine(msg)) || !strings.Contains(got.Fix, "nodes/proxy") {
			t.Errorf("%s:\ngot %s (fix %q): want the node's refusal, its words and the cluster's fix", msg, got.Error(), got.Fix)
		}
	}
	// a pod named with 403 whose node cannot be reached is not refused
	other := `Internal error occurred: error sending request: Post "https://10.63.0.1:10250/exec/ns/web-403/app": dial tcp 10.63.0.1:10250: i/o timeout`
	if got := ClassifyExecError(context.Background(), errors.New(other), nil); got.Reason == VerifyForbidden {
		t.Errorf("%s: %s, want no refusal", other, got.Error())
	}
}

// TestForbiddenExecFixIsTheSameForEveryPod: the API server's words name
// the pod (Hint), what to do does not (Fix), so that one warning can stand
// for every container the missing permission stops.
func TestForbiddenExecFixIsTheSameForEveryPod(t *testing.T) {
	msg := func(pod string) string {
		return `pods "` + pod + `" is forbidden: User "dev" cannot create resource "pods/exec" in API group "" in the namespace "shop"`
	}
	a, b := forbiddenExec(msg("web-1")), forbiddenExec(msg("web-2"))
	if a.Fix == "" || a.Fix != b.Fix || a.Hint == b.Hint || !strings.HasSuffix(a.Hint, "; "+a.Fix) {
		t.Errorf("fixes %q and %q, hints %q and %q: want one fix for both, each hint its pod's words then the fix", a.Fix, b.Fix, a.Hint, b.Hint)
	}
}
