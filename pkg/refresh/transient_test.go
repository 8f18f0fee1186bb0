package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestTransient: only a failure known to be permanent is not tried again.
// The connection errors are built as client-go's transport returns them
// (a *url.Error around the dial or write error), so that a classification
// by a hand-made list of messages would fail here.
func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	urlErr := func(err error) error {
		return &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis/apps/v1", Err: err}
	}
	opErr := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: &os.SyscallError{Syscall: op, Err: errno}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"http2 connection found dead by the health check", urlErr(errors.New("http2: client connection lost")), true},
		{"TCP write cut mid-way", urlErr(opErr("write", syscall.EPIPE)), true},
		{"connection reset", urlErr(opErr("read", syscall.ECONNRESET)), true},
		{"connection refused", urlErr(opErr("dial", syscall.ECONNREFUSED)), true},
		{"EOF", urlErr(io.EOF), true},
		{"GOAWAY", urlErr(errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1")), true},
		{"wrapped by the loop", fmt.Errorf("reading namespace a: %w", urlErr(opErr("write", syscall.EPIPE))), true},
		{"deadline", context.DeadlineExceeded, true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"500", apierrors.NewInternalError(errors.New("etcd")), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"504 timeout", apierrors.NewTimeoutError("slow", 1), true},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("modified")), true},
		{"unclassified", errors.New("something nobody named"), true},
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "web"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil), false},
		{"bad request", apierrors.NewBadRequest("no"), false},
		{"unauthorized", apierrors.NewUnauthorized("no"), false},
		{"wrapped forbidden", fmt.Errorf("listing: %w", apierrors.NewForbidden(gr, "web", errors.New("no"))), false},
		{"too many restarts", &TooManyRestartsError{Restarts: 3, Max: 1}, false},
		{"permissions", &PermissionError{}, false},
		{"beyond -l", fmt.Errorf("plan: %w", &BeyondSelectorError{Selector: "a=b"}), false},
		{"invalid -l", &PermanentError{errors.New("invalid -l")}, false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
