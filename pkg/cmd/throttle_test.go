package cmd

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// throttlingServer is an API server that answers the first `failures`
// requests with code (and Retry-After when retryAfter is set), then lists
// of nothing; it records when each request came.
type throttlingServer struct {
	mu    sync.Mutex
	times []time.Time
	paths []string
	srv   *httptest.Server
}

func newThrottlingServer(t *testing.T, code int, retryAfter string, failures int) *throttlingServer {
	t.Helper()
	s := &throttlingServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		s.paths = append(s.paths, r.URL.Path)
		n := len(s.times)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n > failures {
			// an empty list of what was asked: /api/v1/namespaces/x/pods -> v1 PodList
			gv, kind := "v1", "List"
			if p := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); len(p) >= 3 {
				if p[0] == "apis" {
					gv = p[1] + "/" + p[2]
				}
				res := strings.TrimSuffix(path.Base(r.URL.Path), "s")
				kind = map[string]string{"pod": "Pod", "configmap": "ConfigMap", "secret": "Secret", "replicaset": "ReplicaSet",
					"deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet", "job": "Job", "cronjob": "CronJob", "node": "Node"}[res] + "List"
			}
			fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{},"items":[]}`, kind, gv)
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		reason := map[int]string{429: "TooManyRequests", 503: "ServiceUnavailable"}[code]
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","reason":%q,"code":%d}`, reason, code)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// byPath: the times of the requests to each path (status LISTs its kinds in
// parallel: the retries of one request are those to its path).
func (s *throttlingServer) byPath() map[string][]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]time.Time{}
	for i, p := range s.paths {
		out[p] = append(out[p], s.times[i])
	}
	return out
}

func (s *throttlingServer) requests() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// runAgainst runs `kubectl cmsync ARGS` against server and returns what it
// printed on stderr (with the error main would print) and the exit code.
func runAgainst(server string, args ...string) (string, int) {
	var out, errOut bytes.Buffer
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(append(args, "--server", server))
	err := root.Execute()
	msg := errOut.String()
	if err != nil {
		msg += "error: " + err.Error()
	}
	return msg, ExitCode(err)
}

// TestThrottledRequestsAreSpacedAndBounded: an API server that throttles
// (429, with a Retry-After of 0 or none) or is unavailable (503 without
// Retry-After) is retried at least 1 s apart, never in a tight loop, until
// --request-timeout has passed; then the command exits 1 with a message that
// says what happened and what to do. Without the throttle transport
// client-go sent 11 requests in 4 ms for "Retry-After: 0", did not retry a
// 429 or 503 without Retry-After at all, and ignored --request-timeout
// across its retries (11 requests in 10 s with --request-timeout 3s).
func TestThrottledRequestsAreSpacedAndBounded(t *testing.T) {
	for _, c := range []struct {
		code       int
		retryAfter string
		want       string
	}{
		{429, "0", "429 Too Many Requests"},
		{429, "", "429 Too Many Requests"},
		{503, "", "503 Service Unavailable"},
	} {
		t.Run(fmt.Sprintf("%d-retry-after-%q", c.code, c.retryAfter), func(t *testing.T) {
			s := newThrottlingServer(t, c.code, c.retryAfter, 1<<30)
			msg, code := runAgainst(s.srv.URL, "status", "-n", "x", "--request-timeout", "2s")
			ts := s.requests()
			t.Logf("%d requests, exit %d: %s", len(ts), code, msg)
			if code != ExitFailure || !strings.Contains(msg, c.want) || !strings.Contains(msg, "--request-timeout") ||
				!strings.Contains(msg, s.srv.URL) || strings.Count(msg, "\n") > 1 {
				t.Errorf("exit %d, message %q: want exit 1 and one line naming the server, %q and --request-timeout", code, msg, c.want)
			}
			// per request (path): 2 s of retries 1 s apart: the first request
			// and 2 retries (3 at most with scheduling slack)
			retried := false
			for p, ts := range s.byPath() {
				if len(ts) > 4 {
					t.Errorf("%s: %d requests within --request-timeout 2s, want at most 4 (retries 1 s apart)", p, len(ts))
				}
				retried = retried || len(ts) >= 2
				for i := 1; i < len(ts); i++ {
					if gap := ts[i].Sub(ts[i-1]); gap < 900*time.Millisecond {
						t.Errorf("%s: request %d came %v after the previous one: a tight retry loop", p, i+1, gap)
					}
				}
			}
			if !retried {
				t.Errorf("no request was retried (%d requests): want retries 1 s apart", len(ts))
			}
		})
	}
}

// A 503 that passes is retried through: the command works.
func TestUnavailableThenRecovered(t *testing.T) {
	s := newThrottlingServer(t, 503, "", 2)
	msg, code := runAgainst(s.srv.URL, "status", "-n", "x", "--request-timeout", "10s")
	if code != ExitOK {
		t.Errorf("exit %d (%s), want 0 once the API server answers", code, msg)
	}
	if n := len(s.requests()); n < 3 {
		t.Errorf("%d requests, want the 2 failed ones retried", n)
	}
}
