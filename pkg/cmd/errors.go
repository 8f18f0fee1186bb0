package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// explainAPIError turns an error from the API server into one actionable
// line: what failed, why, and what to do next. server names the API server.
func explainAPIError(err error, server, namespace string) error {
	if err == nil {
		return nil
	}
	var le *inspect.ListError
	// a failed call on one object (a workload read of the refresh engine,
	// a get of lint --cluster): its Forbidden answer names the Role rule
	var ce *refresh.CallError
	verb, resource := "", ""
	switch {
	case errors.As(err, &le):
		verb, resource, namespace = "list", le.Resource, le.Namespace
		err = le.Err
	case errors.As(err, &ce):
		verb, resource, namespace = ce.Verb, ce.Resource, ce.Namespace
		err = ce.Err
	}
	where := fmt.Sprintf("in namespace %q", namespace)
	kind := "Role"
	if namespace == "" {
		where, kind = "in all namespaces", "ClusterRole"
	}
	switch {
	case apierrors.IsForbidden(err):
		if resource == "" {
			return fmt.Errorf("forbidden: %v", err)
		}
		return fmt.Errorf("cannot %s %s %s: forbidden (%s)\nA %s with this rule grants it: %s",
			verb, resource, where, apiMessage(err), kind, rbac.RoleRule(verb, resource))
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("the API server at %s is throttling this client (429 Too Many Requests, API Priority and Fairness: %s) and still was after retries spaced by its Retry-After: retry later, raise --request-timeout to keep retrying longer, lower --concurrency, or ask the cluster's admins about the FlowSchema that matches your user", server, apiMessage(err))
	case apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("the API server at %s is unavailable (503 Service Unavailable: %s) and still was after retries: retry in a moment, raise --request-timeout to keep retrying longer; if it lasts, check its health with kubectl get --raw='/readyz?verbose'", server, apiMessage(err))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the credentials (Unauthorized): check your kubeconfig user, or log in again", server)
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		// Before the connection case: a client-side timeout comes wrapped
		// in a *url.Error too.
		return fmt.Errorf("the API server at %s did not answer in time; retry, or raise --request-timeout", server)
	case isConnectionError(err):
		return fmt.Errorf("cannot reach the Kubernetes API server at %s (%s): check that the cluster is running and that --context/--kubeconfig point at it", server, connectionCause(err))
	}
	if resource != "" {
		return fmt.Errorf("cannot %s %s %s: %v", verb, resource, where, err)
	}
	return err
}

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}

func isConnectionError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var ue *url.Error
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return true
	}
	if errors.As(err, &ue) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") || strings.Contains(msg, "i/o timeout")
}

// connectionCause names the failed dial ("dial tcp 127.0.0.1:6443: connect:
// connection refused") rather than the whole URL chain.
func connectionCause(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	return rootCause(err)
}

// rootCause returns the innermost error message of a chain.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// deniedNotes says, one line per kind, what RBAC kept Load from reading and
// what the output does without it: Secrets skipped, owners unresolved,
// default delays. Printed to stderr as "note: ..." lines.
func deniedNotes(snap *inspect.Snapshot) []string {
	var out []string
	for _, le := range snap.Denied {
		where, kind := fmt.Sprintf(" in namespace %q", le.Namespace), "Role"
		if le.Namespace == "" || rbac.ClusterScoped[le.Resource] {
			where, kind = " in all namespaces", "ClusterRole"
		}
		if rbac.ClusterScoped[le.Resource] {
			where = ""
		}
		what := rbac.Without(le.Resource)
		out = append(out, fmt.Sprintf("note: %s: cannot list %s%s (forbidden); a %s with this rule grants it: %s",
			what, le.Resource, where, kind, rbac.RoleRule("list", le.Resource)))
	}
	return out
}

// deniedResource returns the Forbidden LIST of resource in snap, or nil.
func deniedResource(snap *inspect.Snapshot, resource string) *inspect.ListError {
	for _, le := range snap.Denied {
		if le.Resource == resource {
			return le
		}
	}
	return nil
}

// explainNotFound adds what to do next to a named object that neither
// exists nor has consumers.
func explainNotFound(err error) error {
	var nf *inspect.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	return fmt.Errorf("%v, and no pod consumes it: check the name and the namespace (-n), or list the objects with 'kubectl cmsync status --unused'", err)
}
