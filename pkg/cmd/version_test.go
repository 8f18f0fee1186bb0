package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"
)

// runVersion runs `kubectl cmsync version args...` against the API server at
// server (through a kubeconfig file, as a user would), returning stdout.
func runVersion(t *testing.T, server string, args ...string) (string, error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(append([]string{"version", "--kubeconfig", kubeconfig}, args...))
	err := root.Execute()
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

func versionServer(t *testing.T, delay time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"30","gitVersion":"v1.30.14","platform":"linux/amd64"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestVersionPrintsClientAndServer(t *testing.T) {
	out, err := runVersion(t, versionServer(t, 0))
	if err != nil {
		t.Fatalf("version failed: %v", err)
	}
	for _, want := range []string{"Client Version: ", "Git Commit: ", "Build Date: ", "Go Version: go", "Server Version: v1.30.14\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestVersionJSONAndYAML(t *testing.T) {
	url := versionServer(t, 0)
	for _, format := range []string{"json", "yaml"} {
		out, err := runVersion(t, url, "-o", format)
		if err != nil {
			t.Fatalf("-o %s failed: %v", format, err)
		}
		raw := []byte(out)
		if format == "yaml" {
			if raw, err = yaml.YAMLToJSON(raw); err != nil {
				t.Fatalf("-o yaml is not YAML: %v\n%s", err, out)
			}
		}
		var doc VersionDocument
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if doc.ServerVersion == nil || doc.ServerVersion.GitVersion != "v1.30.14" || doc.ServerError != "" {
			t.Errorf("-o %s: server version %+v, error %q", format, doc.ServerVersion, doc.ServerError)
		}
		if doc.ClientVersion.Version == "" || doc.ClientVersion.GoVersion == "" {
			t.Errorf("-o %s: client version incomplete: %+v", format, doc.ClientVersion)
		}
	}
}

// A cluster that is down, or one that does not answer, is reported and the
// command still succeeds.
func TestVersionNeverFailsWithoutACluster(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		out, err := runVersion(t, url)
		if err != nil {
			t.Fatalf("version failed: %v", err)
		}
		if !strings.Contains(out, "Server Version: unavailable (cannot reach the Kubernetes API server at "+url) {
			t.Errorf("output does not say the server is unreachable:\n%s", out)
		}
	})
	t.Run("server hangs past the timeout", func(t *testing.T) {
		out, err := runVersion(t, versionServer(t, time.Minute), "-o", "json")
		if err != nil {
			t.Fatalf("version failed: %v", err)
		}
		var doc VersionDocument
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if doc.ServerVersion != nil || !strings.Contains(doc.ServerError, "did not answer in time") {
			t.Errorf("want a timeout reported, got %+v", doc)
		}
	})
	t.Run("--client does not contact the server", func(t *testing.T) {
		out, err := runVersion(t, versionServer(t, time.Minute), "--client")
		if err != nil {
			t.Fatalf("version failed: %v", err)
		}
		if strings.Contains(out, "Server Version") || !strings.Contains(out, "Client Version: ") {
			t.Errorf("--client output:\n%s", out)
		}
	})
}

func TestVersionRejectsUnknownOutput(t *testing.T) {
	_, err := runVersion(t, "https://127.0.0.1:1", "-o", "wide")
	if ExitCode(err) != ExitUsage {
		t.Fatalf("-o wide: exit %d (%v), want %d", ExitCode(err), err, ExitUsage)
	}
}

// TestVersionWarnsOutsideTheTestedRange: the supported range is printed;
// a server outside it gets one warning on stderr (and serverWarning in
// JSON); one inside it none.
func TestVersionWarnsOutsideTheTestedRange(t *testing.T) {
	for _, tc := range []struct {
		server string
		warn   bool
	}{{"v1.29.15", true}, {"v1.38.0", true}, {"v1.37.2", false}, {"v1.30.14", false}} {
		for _, format := range []string{"", "json"} {
			var out, errOut bytes.Buffer
			o := &VersionOptions{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, Output: format, Timeout: time.Second,
				ServerVersion: func(ctx context.Context) (*apimachineryversion.Info, error) {
					return &apimachineryversion.Info{GitVersion: tc.server}, nil
				}}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			warnings := strings.Count(errOut.String(), "Warning: ")
			if tc.warn != (warnings == 1) || warnings > 1 {
				t.Errorf("%s -o %q: stderr %q", tc.server, format, errOut.String())
			}
			if format == "" && !strings.Contains(out.String(), "Supported Servers: v1.30 to v1.37\n") {
				t.Errorf("%s: output lacks the supported range:\n%s", tc.server, out.String())
			}
			if format == "json" && tc.warn != strings.Contains(out.String(), `"serverWarning"`) {
				t.Errorf("%s -o json: %s", tc.server, out.String())
			}
		}
	}
}

// TestStatusWarnsOnceOutsideTheTestedRange: status says once, on stderr,
// that the server is outside the tested range, and nothing inside it.
func TestStatusWarnsOnceOutsideTheTestedRange(t *testing.T) {
	for server, warn := range map[string]bool{"v1.29.15": true, "v1.37.2": false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/version":
				_, _ = w.Write([]byte(`{"major":"1","minor":"x","gitVersion":"` + server + `"}`))
			default: // every LIST is empty
				_, _ = w.Write([]byte(`{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`))
			}
		}))
		errOut, err := statusAgainst(t, srv.URL)
		if err != nil {
			t.Fatalf("%s: %v\n%s", server, err, errOut.String())
		}
		if got := strings.Count(errOut.String(), "outside the versions kubectl-cmsync is tested against"); got != map[bool]int{true: 1, false: 0}[warn] {
			t.Errorf("%s: %d warnings on stderr:\n%s", server, got, errOut.String())
		}
		srv.Close()
	}
}

// TestStatusAsksTheVersionWhileListing: status asks the API server for its
// version alongside its LISTs, not after them: every LIST is answered only
// once /version was asked (each waits up to 2 s for it).
func TestStatusAsksTheVersionWhileListing(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	var late atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			once.Do(func() { close(asked) })
			_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
			return
		}
		select {
		case <-asked:
		case <-time.After(2 * time.Second):
			late.Store(true)
		}
		_, _ = w.Write([]byte(`{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	defer srv.Close()
	if errOut, err := statusAgainst(t, srv.URL); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if late.Load() {
		t.Errorf("a LIST was sent and waited 2 s while /version was not asked: the version is read after the LISTs")
	}
}

// statusAgainst runs status with a kubeconfig whose one context points at
// server (namespace ns), and returns its stderr.
func statusAgainst(t *testing.T, server string) (*bytes.Buffer, error) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + server + "\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u, namespace: ns}}]\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs([]string{"status", "--kubeconfig", kubeconfig})
	return &errOut, root.Execute()
}
