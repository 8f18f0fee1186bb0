package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
)

// Result is how one message ended, for metrics.
type Result string

const (
	ResultSent Result = "sent"
	// ResultFailed: refused (a 4xx other than 429), or still failing after
	// the last attempt.
	ResultFailed Result = "failed"
	// ResultDropped: pushed out of a full queue, or still queued when the
	// sender closed.
	ResultDropped Result = "dropped"
)

// Defaults of a SenderConfig.
const (
	DefaultQueueSize     = 100
	DefaultMaxRetryAfter = time.Minute
	DefaultTimeout       = 10 * time.Second
)

// DefaultBackoff is the wait between attempts: 1, 2, 4 and 8 s, each with
// up to 20% jitter, 5 attempts in all (Cap bounds a longer Steps).
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 5, Cap: 30 * time.Second}

// SenderConfig is where and how messages are posted.
type SenderConfig struct {
	// URL is the webhook. It is a credential (Slack's and Teams' carry
	// their token): nothing the Sender reports names more than its host.
	URL *url.URL
	// Proxy, when set, is the HTTP proxy of the webhook's requests;
	// otherwise the environment's (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
	Proxy *url.URL
	// QueueSize bounds the messages waiting: a message sent to a full
	// queue pushes the oldest out.
	QueueSize int
	// Backoff times the attempts of one message; Steps is how many.
	Backoff wait.Backoff
	// MaxRetryAfter bounds how long a Retry-After header makes it wait.
	MaxRetryAfter time.Duration
	// Timeout bounds one POST.
	Timeout time.Duration
	// Report is told, in one line, what went wrong and what to fix.
	Report func(string)
	// Observe is told how each message ended.
	Observe func(Result)
}

// Sender posts messages to one webhook, oldest first, from a bounded
// queue on a goroutine of its own: Send never waits.
type Sender struct {
	cfg    SenderConfig
	client *http.Client

	mu          sync.Mutex
	queue       [][]byte
	closed      bool
	overflowing bool // a drop was reported; reset when the queue drains
	wake        chan struct{}
	done        chan struct{}
	ctx         context.Context
	cancel      context.CancelFunc
}

// NewSender starts a Sender; Close stops it.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Backoff.Steps <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Report == nil {
		cfg.Report = func(string) {}
	}
	if cfg.Observe == nil {
		cfg.Observe = func(Result) {}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Proxy != nil {
		tr.Proxy = http.ProxyURL(cfg.Proxy)
	}
	s := &Sender{cfg: cfg, client: &http.Client{Transport: tr, Timeout: cfg.Timeout},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s
}

// Send queues one message body; it never blocks. On a full queue the
// oldest message is dropped (counted, and reported once until the queue
// drains).
func (s *Sender) Send(body []byte) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.cfg.Observe(ResultDropped)
		return
	}
	dropped := len(s.queue) >= s.cfg.QueueSize
	if dropped {
		s.queue = s.queue[1:]
	}
	s.queue = append(s.queue, body)
	tell := dropped && !s.overflowing
	s.overflowing = s.overflowing || dropped
	s.mu.Unlock()
	if dropped {
		s.cfg.Observe(ResultDropped)
	}
	if tell {
		s.cfg.Report(fmt.Sprintf("alerts to %s: the queue is full (%d messages): the oldest is dropped; further drops are counted, not reported, until it drains",
			s.host(), s.cfg.QueueSize))
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops taking messages and delivers those queued, for at most
// timeout; what is left then is dropped, and said.
func (s *Sender) Close(timeout time.Duration) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.done:
		return
	case <-t.C:
	}
	s.cancel()
	<-s.done
	s.mu.Lock()
	left := len(s.queue)
	s.queue = nil
	s.mu.Unlock()
	for range left {
		s.cfg.Observe(ResultDropped)
	}
	if left > 0 {
		s.cfg.Report(fmt.Sprintf("alerts to %s: %d not sent within %s of shutting down: dropped", s.host(), left, timeout))
	}
}

// run posts the queued messages one at a time until closed and drained,
// or cancelled.
func (s *Sender) run() {
	defer close(s.done)
	for {
		body, ok, closed := s.next()
		if !ok && closed {
			return
		}
		if !ok {
			select {
			case <-s.wake:
			case <-s.ctx.Done():
				return
			}
			continue
		}
		s.cfg.Observe(s.deliver(body))
		if s.ctx.Err() != nil {
			return
		}
	}
}

// next takes the oldest message (ok false: none).
func (s *Sender) next() (body []byte, ok, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		s.overflowing = false
		return nil, false, s.closed
	}
	body = s.queue[0]
	s.queue = s.queue[1:]
	return body, true, s.closed
}

// deliver posts one message, again after a backoff while the failure may
// pass (a network error, 429, 5xx), honouring Retry-After.
func (s *Sender) deliver(body []byte) Result {
	b := s.cfg.Backoff
	attempts := b.Steps
	var last error
	for attempt := 1; attempt <= attempts; attempt++ {
		retryAfter, err := s.post(body)
		if err == nil {
			return ResultSent
		}
		last = err
		var refused *refusedError
		if errors.As(err, &refused) {
			s.cfg.Report(fmt.Sprintf("alert to %s refused: %v; not retried: %s", s.host(), err, refused.hint()))
			return ResultFailed
		}
		if attempt == attempts {
			break
		}
		delay := b.Step()
		if retryAfter > delay {
			delay = min(retryAfter, s.cfg.MaxRetryAfter)
		}
		if !s.sleep(delay) {
			return ResultDropped
		}
	}
	s.cfg.Report(fmt.Sprintf("alert to %s failed after %d attempts: %v; dropped", s.host(), attempts, last))
	return ResultFailed
}

// sleep waits d; false when the sender was cancelled meanwhile.
func (s *Sender) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// post sends one request. An error is a refusedError for a 4xx other than
// 429 (not worth retrying), anything else may pass; retryAfter is what the
// answer asked for (0: nothing).
func (s *Sender) post(body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.cfg.URL.String(), bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, withoutURL(err)
	}
	defer resp.Body.Close()
	said, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return 0, nil
	case code == http.StatusTooManyRequests || code >= 500:
		return parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), &statusError{code: code, said: said}
	}
	return 0, &refusedError{statusError{code: code, said: said}}
}

// withoutURL is a request's error without the URL net/http puts in it.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// statusError is an answer other than 2xx: its status and the first bytes
// of its body (receivers say there what is wrong: Slack's "invalid_payload").
type statusError struct {
	code int
	said []byte
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
	if said := strings.TrimSpace(string(e.said)); said != "" {
		s += ": " + text.Printable(text.TruncateBytes(said, 160, "..."))
	}
	return s
}

// refusedError is a 4xx other than 429: the same request would fail again.
type refusedError struct{ statusError }

// hint is what to fix for a refusal.
func (e *refusedError) hint() string {
	switch e.code {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
		return "the receiver did not accept the message: check that --alert-format matches it"
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return "the webhook URL is wrong, revoked or expired: check --alert-webhook (or $" + EnvWebhook + ")"
	case http.StatusRequestEntityTooLarge:
		return "the message is too large for the receiver"
	}
	return "check --alert-webhook and --alert-format"
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date
// (0: absent or unreadable).
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// host names the webhook in reports: its host only, never its path or
// query, which carry the token.
func (s *Sender) host() string { return s.cfg.URL.Host }
