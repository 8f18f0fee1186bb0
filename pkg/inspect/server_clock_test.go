package inspect

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A client whose clock is 2 minutes behind the API server's: the clock
// follows the server's Date headers, to within their one-second
// resolution.
func TestServerClockFollowsTheServer(t *testing.T) {
	skew := 2 * time.Minute
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http would set Date from the local clock: the server's is ahead
		w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
	}))
	defer srv.Close()
	clock := NewServerClock(time.Now)
	if _, known := clock.Offset(); known {
		t.Fatal("offset known before any answer")
	}
	client := &http.Client{Transport: clock.Wrap(http.DefaultTransport)}
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	off, known := clock.Offset()
	if !known || off < skew-1500*time.Millisecond || off > skew+1500*time.Millisecond {
		t.Errorf("offset %v (known %v), want %v within the Date header's second", off, known, skew)
	}
	if d := clock.Now().Sub(time.Now().Add(skew)); d < -1500*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("Now is %v off the server's time", d)
	}
}

// Answers narrow the bounds; one that contradicts them (the server's
// clock was set) starts again from it.
func TestServerClockBounds(t *testing.T) {
	local := time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)
	c := NewServerClock(func() time.Time { return local })
	c.Learn(local, local.Add(200*time.Millisecond), local.Add(10*time.Second))
	if off, _ := c.Offset(); off != 10*time.Second+400*time.Millisecond {
		t.Errorf("offset %v, want the middle of [9.8s, 11s]", off)
	}
	c.Learn(local, local.Add(100*time.Millisecond), local.Add(10*time.Second))
	if off, _ := c.Offset(); off != 10*time.Second+450*time.Millisecond {
		t.Errorf("offset %v, want the middle of [9.9s, 11s]", off)
	}
	c.Learn(local, local, local.Add(-time.Hour))
	if off, _ := c.Offset(); off != -time.Hour+500*time.Millisecond {
		t.Errorf("offset %v after a contradicting answer, want about -1h", off)
	}
}
