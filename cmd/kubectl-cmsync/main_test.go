package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// client-go's logs (through klog) do not reach stderr: e.g. "Copying stderr
// failed", which remotecommand logs when an exec is cancelled (a verify
// timeout, ctrl-c), while the command reports that exec itself. What the
// user needs from client-go, the API server's warnings, still does, as
// kubectl prints them.
func TestQuietLogs(t *testing.T) {
	stderr := captureStderr(t)
	var warnings bytes.Buffer
	quietLogs(&warnings)

	utilruntime.HandleErrorWithLogger(klog.Background(), errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"), "Copying stderr failed")
	utilruntime.HandleError(errors.New("an unhandled error"))
	klog.Errorf("an error through klog")
	klog.Warning("a warning through klog")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Warning", `299 - "v1 ComponentStatus is deprecated in v1.19+"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"30","gitVersion":"v1.30.14"}`)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(context.Background()).Error(); err != nil {
		t.Fatal(err)
	}

	if got := stderr(); got != "" {
		t.Errorf("client-go logged on stderr:\n%s", got)
	}
	if got, want := warnings.String(), "Warning: v1 ComponentStatus is deprecated in v1.19+\n"; got != want {
		t.Errorf("the API server's warning = %q, want %q", got, want)
	}
}

// captureStderr sends os.Stderr to a pipe until the returned function,
// which gives what was written.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	done := false
	stop := func() string {
		if done {
			return ""
		}
		done = true
		klog.Flush()
		os.Stderr = old
		_ = w.Close()
		return strings.TrimSpace(<-got)
	}
	t.Cleanup(func() { stop() })
	return stop
}
