package cmd

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// throttleTransport keeps client-go's retries of a throttled request (429
// Too Many Requests from API Priority and Fairness, or 503 Service
// Unavailable) spaced and bounded. client-go's REST client retries a 429 or
// 5xx up to 10 times, waiting the Retry-After seconds of the answer, and not
// at all without one; it does not count the waits against --request-timeout,
// which bounds one attempt. So:
//   - a Retry-After under 1 s (or none: a 429, or a 503 to a GET) becomes
//     1 s: never a tight loop, and a 503 is retried too;
//   - once the same request has been throttled for longer than
//     --request-timeout (when set), or the wait asked for would pass it,
//     the answer goes back without Retry-After, so client-go stops and the
//     command says what happened (explainAPIError).
//
// Requests are told apart by method and URL: client-go's retries repeat both.
type throttleTransport struct {
	next    http.RoundTripper
	timeout time.Duration // --request-timeout; 0: client-go's 10 retries bound it
	now     func() time.Time

	mu    sync.Mutex
	first map[string]time.Time // when each throttled request was first throttled
}

func newThrottleTransport(next http.RoundTripper, timeout time.Duration) *throttleTransport {
	return &throttleTransport{next: next, timeout: timeout, now: time.Now, first: map[string]time.Time{}}
}

func (t *throttleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	key := req.Method + " " + req.URL.String()
	throttled := resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusServiceUnavailable && (req.Method == http.MethodGet || resp.Header.Get("Retry-After") != ""))
	t.mu.Lock()
	defer t.mu.Unlock()
	if !throttled {
		delete(t.first, key)
		return resp, nil
	}
	now := t.now()
	first, seen := t.first[key]
	if !seen {
		first = now
		t.first[key] = now
	}
	wait := 1
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > wait {
		wait = s
	}
	if t.timeout > 0 && now.Add(time.Duration(wait)*time.Second).Sub(first) > t.timeout {
		// out of time: let client-go give up with this answer
		delete(t.first, key)
		resp.Header.Del("Retry-After")
		return resp, nil
	}
	resp.Header.Set("Retry-After", strconv.Itoa(wait))
	return resp, nil
}
