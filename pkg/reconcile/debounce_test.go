package reconcile

import (
	"reflect"
	"testing"
	"time"
)

func TestDebouncerCoalescesABurst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Debouncer[string]{Quiet: 2 * time.Second, MaxWait: 30 * time.Second}
	// ten edits in five seconds
	for i := range 10 {
		d.Add("ns/web", t0.Add(time.Duration(i)*500*time.Millisecond))
	}
	last := t0.Add(4500 * time.Millisecond)
	due, next := d.Due(last.Add(1999 * time.Millisecond))
	if len(due) != 0 || !next.Equal(last.Add(2*time.Second)) {
		t.Fatalf("before the quiet period: due %v, next %v", due, next)
	}
	due, next = d.Due(last.Add(2 * time.Second))
	if !reflect.DeepEqual(due, map[string]int{"ns/web": 10}) || !next.IsZero() || d.Pending() != 0 {
		t.Fatalf("after it: due %v, next %v, pending %d; want one action of 10 events", due, next, d.Pending())
	}
}

func TestDebouncerMaxWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Debouncer[string]{Quiet: 2 * time.Second, MaxWait: 5 * time.Second}
	var fired []time.Duration
	// an edit every second for 12 s: never quiet
	for s := range 13 {
		now := t0.Add(time.Duration(s) * time.Second)
		if due, _ := d.Due(now); len(due) > 0 {
			fired = append(fired, now.Sub(t0))
		}
		d.Add("k", now)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second}
	if !reflect.DeepEqual(fired, want) {
		t.Fatalf("fired at %v, want %v", fired, want)
	}
}

func TestDebouncerKeysAreIndependent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := Debouncer[string]{Quiet: 2 * time.Second}
	d.Add("a", t0)
	d.Add("b", t0.Add(time.Second))
	due, next := d.Due(t0.Add(2 * time.Second))
	if !reflect.DeepEqual(due, map[string]int{"a": 1}) || !next.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("due %v next %v", due, next)
	}
}
