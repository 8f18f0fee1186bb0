package alert

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// receiver is a webhook that answers each request with the next of its
// answers (200 once they run out), recording the bodies and times.
type receiver struct {
	mu      sync.Mutex
	answers []func(http.ResponseWriter)
	bodies  []string
	times   []time.Time
	release chan struct{} // when set, each request waits for it
	got     chan string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if rc.got != nil {
		rc.got <- string(b)
	}
	if rc.release != nil {
		<-rc.release
	}
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, string(b))
	rc.times = append(rc.times, time.Now())
	var answer func(http.ResponseWriter)
	if len(rc.answers) > 0 {
		answer, rc.answers = rc.answers[0], rc.answers[1:]
	}
	rc.mu.Unlock()
	if answer != nil {
		answer(w)
	}
}

func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bodies...)
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "said "+http.StatusText(code))
	}
}

// log collects what a Sender reports and observes.
type log struct {
	mu      sync.Mutex
	reports []string
	results map[Result]int
}

func (l *log) config(u string) SenderConfig {
	pu, _ := url.Parse(u)
	l.results = map[Result]int{}
	return SenderConfig{URL: pu, Backoff: wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 3},
		Report: func(s string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.reports = append(l.reports, s)
		},
		Observe: func(r Result) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.results[r]++
		}}
}

func (l *log) counts() (map[Result]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[Result]int{}
	for k, v := range l.results {
		out[k] = v
	}
	return out, append([]string(nil), l.reports...)
}

// token is the secret part of the test webhooks' path: never reported.
const token = "/services/T000/B000/XXXXSECRET"

func TestSenderRetriesServerErrors(t *testing.T) {
	rc := &receiver{answers: []func(http.ResponseWriter){status(500), status(503)}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var l log
	s := NewSender(l.config(srv.URL + token))
	s.Send([]byte(`{"text":"one"}`))
	s.Close(5 * time.Second)
	res, reports := l.counts()
	if got := rc.received(); len(got) != 3 || got[2] != `{"text":"one"}` {
		t.Errorf("received %q, want the message 3 times (500, 503, then 200)", got)
	}
	if res[ResultSent] != 1 || len(res) != 1 || len(reports) != 0 {
		t.Errorf("results %v, reports %q: want one sent, nothing reported", res, reports)
	}
}

func TestSenderHonoursRetryAfter(t *testing.T) {
	rc := &receiver{answers: []func(http.ResponseWriter){status(429, "Retry-After", "1")}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var l log
	s := NewSender(l.config(srv.URL + token))
	s.Send([]byte("m"))
	s.Close(5 * time.Second)
	if len(rc.times) != 2 {
		t.Fatalf("%d requests, want 2", len(rc.times))
	}
	if gap := rc.times[1].Sub(rc.times[0]); gap < 900*time.Millisecond {
		t.Errorf("retried %s after a 429 with Retry-After: 1, want about 1 s (the backoff alone is 1 ms)", gap)
	}
}

func TestSenderDoesNotRetryClientErrors(t *testing.T) {
	rc := &receiver{answers: []func(http.ResponseWriter){status(400)}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var l log
	s := NewSender(l.config(srv.URL + token))
	s.Send([]byte("m"))
	s.Close(5 * time.Second)
	res, reports := l.counts()
	if n := len(rc.received()); n != 1 {
		t.Errorf("%d requests after a 400, want 1", n)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	want := "alert to " + host + " refused: HTTP 400 Bad Request: said Bad Request; not retried: the receiver did not accept the message: check that --alert-format matches it"
	if res[ResultFailed] != 1 || len(reports) != 1 || reports[0] != want {
		t.Errorf("results %v, reports %q\nwant one failed and:\n%s", res, reports, want)
	}
}

func TestSenderNetworkErrorNamesOnlyTheHost(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + token
	srv.Close() // nothing listens there any more
	var l log
	s := NewSender(l.config(u))
	s.Send([]byte("m"))
	s.Close(5 * time.Second)
	res, reports := l.counts()
	if res[ResultFailed] != 1 || len(reports) != 1 || !strings.HasPrefix(reports[0], "alert to "+strings.TrimPrefix(srv.URL, "http://")+" failed after 3 attempts: post: dial tcp") {
		t.Fatalf("results %v, reports %q", res, reports)
	}
	if strings.Contains(reports[0], "SECRET") || strings.Contains(reports[0], "/services") {
		t.Errorf("the report names the webhook's path: %s", reports[0])
	}
}

// TestSenderUsesTheProxy: with Proxy set, the request goes to the proxy
// (a webhook host that does not resolve is reached through it).
func TestSenderUsesTheProxy(t *testing.T) {
	got := make(chan string, 1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.String() + " " + string(b)
	}))
	defer proxy.Close()
	var l log
	cfg := l.config("http://hooks.example.invalid" + token)
	cfg.Proxy, _ = url.Parse(proxy.URL)
	s := NewSender(cfg)
	s.Send([]byte("via-proxy"))
	s.Close(5 * time.Second)
	select {
	case r := <-got:
		if want := "POST http://hooks.example.invalid" + token + " via-proxy"; r != want {
			t.Errorf("the proxy got %q, want %q", r, want)
		}
	default:
		t.Fatal("the proxy got no request")
	}
	if res, _ := l.counts(); res[ResultSent] != 1 {
		t.Errorf("results %v, want one sent", res)
	}
}

// TestSenderDropsTheOldestWhenFull: while the webhook hangs, Send does not
// wait; a full queue drops its oldest message, counted each time and
// reported once.
func TestSenderDropsTheOldestWhenFull(t *testing.T) {
	rc := &receiver{release: make(chan struct{}), got: make(chan string, 10)}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var l log
	cfg := l.config(srv.URL + token)
	cfg.QueueSize = 2
	s := NewSender(cfg)
	s.Send([]byte("m1"))
	<-rc.got // m1 is in flight, the queue empty
	start := time.Now()
	for _, m := range []string{"m2", "m3", "m4", "m5"} {
		s.Send([]byte(m))
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("4 Sends to a hanging webhook took %s", d)
	}
	close(rc.release)
	s.Close(5 * time.Second)
	res, reports := l.counts()
	if got := strings.Join(rc.received(), " "); got != "m1 m4 m5" {
		t.Errorf("received %q, want m1 m4 m5 (m2 and m3 dropped)", got)
	}
	if res[ResultDropped] != 2 || res[ResultSent] != 3 || len(reports) != 1 || !strings.Contains(reports[0], "the queue is full (2 messages): the oldest is dropped") {
		t.Errorf("results %v, reports %q", res, reports)
	}
}

// TestSenderCloseIsBounded: Close waits for the queue at most its timeout,
// and says what it dropped.
func TestSenderCloseIsBounded(t *testing.T) {
	rc := &receiver{release: make(chan struct{})}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	defer close(rc.release)
	var l log
	s := NewSender(l.config(srv.URL + token))
	s.Send([]byte("m1"))
	s.Send([]byte("m2"))
	start := time.Now()
	s.Close(200 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s with a timeout of 200ms", d)
	}
	res, reports := l.counts()
	if res[ResultDropped] != 2 || len(reports) != 1 || !strings.Contains(reports[0], "1 not sent within 200ms of shutting down") {
		t.Errorf("results %v, reports %q: want m1 (in flight) and m2 dropped", res, reports)
	}
	s.Send([]byte("late"))
	if res, _ := l.counts(); res[ResultDropped] != 3 {
		t.Errorf("a Send after Close is not counted dropped: %v", res)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"7", 7 * time.Second}, {" 2 ", 2 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.v, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
