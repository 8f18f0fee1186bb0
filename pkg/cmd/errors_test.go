package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

func forbiddenList(resource, group, ns string) error {
	msg := fmt.Sprintf(`User "dev" cannot list resource %q in API group %q`, resource, group)
	if ns != "" {
		msg += fmt.Sprintf(" in the namespace %q", ns)
	} else {
		msg += " at the cluster scope"
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "", errors.New(msg))
}

func refused(host string) error {
	return &url.Error{Op: "Get", URL: "https://" + host + "/api/v1/namespaces/shop/pods?limit=500",
		Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443},
			Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
}

// TestExplainAPIError: one actionable message per kind of failure.
func TestExplainAPIError(t *testing.T) {
	const server = "https://127.0.0.1:6443"
	cases := []struct {
		name string
		err  error
		ns   string
		want string
	}{
		{"forbidden: list pods in a namespace",
			&inspect.ListError{Resource: "pods", Namespace: "shop", Err: forbiddenList("pods", "", "shop")}, "shop",
			`cannot list pods in namespace "shop": forbidden (pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "shop")` + "\n" +
				`A Role with this rule grants it: {apiGroups: [""], resources: ["pods"], verbs: ["list"]}`},
		{"forbidden: list pods in all namespaces",
			&inspect.ListError{Resource: "pods", Err: forbiddenList("pods", "", "")}, "",
			`cannot list pods in all namespaces: forbidden (pods is forbidden: User "dev" cannot list resource "pods" in API group "" at the cluster scope)` + "\n" +
				`A ClusterRole with this rule grants it: {apiGroups: [""], resources: ["pods"], verbs: ["list"]}`},
		{"forbidden: list replicasets (group apps)",
			&inspect.ListError{Resource: "replicasets", Namespace: "shop", Err: forbiddenList("replicasets", "apps", "shop")}, "shop",
			`cannot list replicasets in namespace "shop": forbidden (replicasets.apps is forbidden: User "dev" cannot list resource "replicasets" in API group "apps" in the namespace "shop")` + "\n" +
				`A Role with this rule grants it: {apiGroups: ["apps"], resources: ["replicasets"], verbs: ["list"]}`},
		{"forbidden: list jobs (group batch), wrapped",
			fmt.Errorf("loading: %w", &inspect.ListError{Resource: "jobs", Namespace: "shop", Err: forbiddenList("jobs", "batch", "shop")}), "shop",
			`cannot list jobs in namespace "shop": forbidden (jobs.batch is forbidden: User "dev" cannot list resource "jobs" in API group "batch" in the namespace "shop")` + "\n" +
				`A Role with this rule grants it: {apiGroups: ["batch"], resources: ["jobs"], verbs: ["list"]}`},
		{"forbidden outside a LIST", forbiddenList("pods", "", "shop"), "shop",
			`forbidden: pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "shop"`},
		{"unauthorized", &inspect.ListError{Resource: "pods", Namespace: "shop", Err: apierrors.NewUnauthorized("Unauthorized")}, "shop",
			"the API server at https://127.0.0.1:6443 rejected the credentials (Unauthorized): check your kubeconfig user, or log in again"},
		{"connection refused: one line naming the server", &inspect.ListError{Resource: "pods", Namespace: "shop", Err: refused("127.0.0.1:6443")}, "shop",
			"cannot reach the Kubernetes API server at https://127.0.0.1:6443 (dial tcp 127.0.0.1:6443: connect: connection refused): check that the cluster is running and that --context/--kubeconfig point at it"},
		{"no such host", &inspect.ListError{Resource: "pods", Namespace: "shop", Err: &url.Error{Op: "Get", URL: "https://k8s.invalid/api",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "k8s.invalid", IsNotFound: true}}}}, "shop",
			"cannot reach the Kubernetes API server at https://127.0.0.1:6443 (dial tcp: lookup k8s.invalid: no such host): check that the cluster is running and that --context/--kubeconfig point at it"},
		{"client timeout (a *url.Error)", &inspect.ListError{Resource: "pods", Namespace: "shop", Err: &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: context.DeadlineExceeded}}, "shop",
			"the API server at https://127.0.0.1:6443 did not answer in time; retry, or raise --request-timeout"},
		{"server timeout", &inspect.ListError{Resource: "pods", Namespace: "shop", Err: apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "list", 1)}, "shop",
			"the API server at https://127.0.0.1:6443 did not answer in time; retry, or raise --request-timeout"},
		{"another LIST error", &inspect.ListError{Resource: "configmaps", Namespace: "shop", Err: errors.New("boom")}, "shop",
			`cannot list configmaps in namespace "shop": boom`},
		{"another error", errors.New("boom"), "shop", "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := explainAPIError(tc.err, server, tc.ns)
			if got == nil || got.Error() != tc.want {
				t.Errorf("explainAPIError =\n%v\nwant\n%s", got, tc.want)
			}
		})
	}
	if explainAPIError(nil, server, "shop") != nil {
		t.Errorf("explainAPIError(nil) is not nil")
	}
}

func TestRoleRule(t *testing.T) {
	for _, c := range []struct{ verb, resource, want string }{
		{"list", "pods", `{apiGroups: [""], resources: ["pods"], verbs: ["list"]}`},
		{"get", "deployments", `{apiGroups: ["apps"], resources: ["deployments"], verbs: ["get"]}`},
		{"create", "pods/exec", `{apiGroups: [""], resources: ["pods/exec"], verbs: ["create"]}`},
		{"list", "cronjobs", `{apiGroups: ["batch"], resources: ["cronjobs"], verbs: ["list"]}`},
	} {
		if got := rbac.RoleRule(c.verb, c.resource); got != c.want {
			t.Errorf("RoleRule(%s, %s) = %s, want %s", c.verb, c.resource, got, c.want)
		}
	}
}

// TestStatusAPIErrors runs `kubectl cmsync status` against API servers that
// refuse: the message names the server or the Role rule, exit code 1.
func TestStatusAPIErrors(t *testing.T) {
	status := func(code int, reason, message string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"reason": reason, "code": code, "message": message,
				"details": map[string]any{"kind": "pods"}})
		})
	}
	t.Run("forbidden", func(t *testing.T) {
		srv := httptest.NewServer(status(http.StatusForbidden, "Forbidden",
			`pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "shop"`))
		defer srv.Close()
		writeStatusKubeconfig(t, srv.URL, "shop")
		_, _, err := runStatusRoot(t, "status")
		want := `cannot list pods in namespace "shop": forbidden (pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "shop")` + "\n" +
			`A Role with this rule grants it: {apiGroups: [""], resources: ["pods"], verbs: ["list"]}`
		if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
			t.Errorf("error = %v (exit %d)\nwant %s (exit 1)", err, ExitCode(err), want)
		}
	})
	t.Run("unauthorized", func(t *testing.T) {
		srv := httptest.NewServer(status(http.StatusUnauthorized, "Unauthorized", "Unauthorized"))
		defer srv.Close()
		writeStatusKubeconfig(t, srv.URL, "shop")
		_, _, err := runStatusRoot(t, "status", "-A")
		want := "the API server at " + srv.URL + " rejected the credentials (Unauthorized): check your kubeconfig user, or log in again"
		if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
			t.Errorf("error = %v (exit %d)\nwant %s (exit 1)", err, ExitCode(err), want)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.Listener.Addr().String()
		srv.Close()
		writeStatusKubeconfig(t, "http://"+addr, "shop")
		_, _, err := runStatusRoot(t, "status")
		want := "cannot reach the Kubernetes API server at http://" + addr + " (dial tcp " + addr + ": connect: connection refused): check that the cluster is running and that --context/--kubeconfig point at it"
		if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
			t.Errorf("error = %v (exit %d)\nwant %s (exit 1)", err, ExitCode(err), want)
		}
		if strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("not one line: %q", err)
		}
	})
}
