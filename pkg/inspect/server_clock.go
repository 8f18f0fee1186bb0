package inspect

import (
	"net/http"
	"sync"
	"time"
)

// ServerClock tells the API server's time from the Date header of its
// answers, so that an age or a deadline compared with a time the cluster
// wrote (an object's managedFields, a pod annotation, the kubelet's
// ..data directory) is not off by the client's clock skew. Each answer
// bounds the offset (server minus local time): the server wrote Date,
// truncated to the second, between sending the request and receiving the
// answer. The bounds of all answers are intersected; Now is the local
// time plus the middle of the bounds (the local time before any answer).
type ServerClock struct {
	local func() time.Time

	mu     sync.Mutex
	known  bool
	lo, hi time.Duration
}

// NewServerClock is a clock that reads the local time with local
// (time.Now when nil).
func NewServerClock(local func() time.Time) *ServerClock {
	if local == nil {
		local = time.Now
	}
	return &ServerClock{local: local}
}

// Now is the server's time as far as its answers tell.
func (c *ServerClock) Now() time.Time {
	off, _ := c.Offset()
	return c.local().Add(off)
}

// Offset is the server's time minus the local time, and whether an answer
// has told it.
func (c *ServerClock) Offset() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return 0, false
	}
	return c.lo + (c.hi-c.lo)/2, true
}

// Learn records an answer's Date, the request having been sent at sent
// and the answer received at received (local times).
func (c *ServerClock) Learn(sent, received, date time.Time) {
	lo := date.Sub(received)
	hi := date.Add(time.Second).Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || lo > c.hi || hi < c.lo {
		// the first answer, or one the others contradict (a clock was
		// set): start again from it
		c.known, c.lo, c.hi = true, lo, hi
		return
	}
	c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
}

// Wrap is a rest.Config transport wrapper that observes every answer.
func (c *ServerClock) Wrap(rt http.RoundTripper) http.RoundTripper {
	return clockTransport{next: rt, clock: c}
}

type clockTransport struct {
	next  http.RoundTripper
	clock *ServerClock
}

func (t clockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := t.clock.local()
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp == nil {
		return resp, err
	}
	if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		t.clock.Learn(sent, t.clock.local(), d)
	}
	return resp, nil
}
