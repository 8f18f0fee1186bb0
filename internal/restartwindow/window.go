// Package restartwindow reads the restart windows of workloads
// (kubectl-cmsync.io/restart-window) and tells whether a time is inside one
// and when the next opens. It is pure: no cluster, no clock of its own.
//
// A value is one or more windows separated by ";", each
//
//	[DAYS] HH:MM-HH:MM [ZONE]
//
// DAYS is a comma-separated list of days and ranges of days (Mon, Tue, Wed,
// Thu, Fri, Sat, Sun; Mon-Fri, Sat,Sun, Fri-Mon), every day when left out;
// the times are a wall clock in ZONE (an IANA name such as Europe/Berlin, UTC
// when left out), the end 24:00 at most. An end not after the start crosses
// midnight: "Fri 22:00-02:00" opens on Friday at 22:00 and closes on Saturday
// at 02:00. The days name the day a window opens.
//
// Daylight saving: a window opens the first moment its start time is reached
// on the zone's clock and closes the first moment its end time is reached. A
// time inside a gap (the clock jumps over it) is reached when the clock jumps
// past it; a time inside an overlap (the clock reads it twice) is reached the
// first time. So "02:30-04:00" on a day whose clock jumps from 02:00 to 03:00
// opens at 03:00, and "01:00-02:30" on a day whose clock goes back from 03:00
// to 02:00 closes at the first 02:30.
package restartwindow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the image holds only the binary: the zones come with it
)

// Annotation on a workload (or its pod template, or a bare pod) restricts
// its restarts to the windows of its value; remounts, which restart
// nothing, are never held.
const Annotation = "kubectl-cmsync.io/restart-window"

// Example is a valid value, quoted in errors.
const Example = "Mon-Fri 02:00-05:00 Europe/Berlin"

// Schedule is a parsed annotation: a time is inside it when it is inside
// any of its windows.
type Schedule struct {
	// Value is the annotation as written.
	Value   string
	windows []window
}

type window struct {
	days       [7]bool // by time.Weekday
	start, end int     // minutes after midnight; end may be 1440
	loc        *time.Location
}

var dayNames = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// Parse reads an annotation's value. Its errors say what is wrong and show
// a valid value.
func Parse(value string) (Schedule, error) {
	s := Schedule{Value: value}
	parts := strings.Split(value, ";")
	for _, p := range parts {
		if strings.TrimSpace(p) == "" { // a trailing ";" is harmless
			continue
		}
		w, err := parseWindow(strings.Fields(p))
		if err != nil {
			return Schedule{}, parseError(value, err)
		}
		s.windows = append(s.windows, w)
	}
	if len(s.windows) == 0 {
		return Schedule{}, parseError(value, fmt.Errorf("no window"))
	}
	return s, nil
}

func parseError(value string, err error) error {
	return fmt.Errorf("%s %q: %v; write it as %q (days and zone optional, windows separated by \";\")", Annotation, value, err, Example)
}

func parseWindow(f []string) (window, error) {
	w := window{loc: time.UTC}
	i := 0
	if !isTimeRange(f[0]) {
		days, err := parseDays(f[0])
		if err != nil {
			return w, err
		}
		w.days, i = days, 1
	} else {
		for d := range w.days {
			w.days[d] = true
		}
	}
	if i >= len(f) {
		return w, fmt.Errorf("no time range after %q", f[0])
	}
	var err error
	if w.start, w.end, err = parseRange(f[i]); err != nil {
		return w, err
	}
	switch rest := f[i+1:]; len(rest) {
	case 0:
	case 1:
		if w.loc, err = time.LoadLocation(rest[0]); err != nil || rest[0] == "" || strings.EqualFold(rest[0], "local") {
			return w, fmt.Errorf("unknown time zone %q (an IANA name such as Europe/Berlin, or UTC)", rest[0])
		}
	default:
		return w, fmt.Errorf("unexpected %q after the time zone", strings.Join(rest[1:], " "))
	}
	return w, nil
}

func isTimeRange(s string) bool { return strings.Contains(s, ":") }

func parseDays(s string) ([7]bool, error) {
	var days [7]bool
	for _, item := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(item, "-")
		a, ok := dayNames[strings.ToLower(from)]
		if !ok {
			return days, fmt.Errorf("unknown day %q (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or a range such as Mon-Fri)", from)
		}
		b := a
		if isRange {
			if b, ok = dayNames[strings.ToLower(to)]; !ok {
				return days, fmt.Errorf("unknown day %q (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or a range such as Mon-Fri)", to)
			}
		}
		for d := a; ; d = (d + 1) % 7 { // a range may wrap: Fri-Mon
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, nil
}

func parseRange(s string) (start, end int, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("time range %q is not HH:MM-HH:MM", s)
	}
	if start, err = parseClock(a, false); err != nil {
		return 0, 0, err
	}
	if end, err = parseClock(b, true); err != nil {
		return 0, 0, err
	}
	if start == end {
		return 0, 0, fmt.Errorf("time range %q is empty (00:00-24:00 is the whole day)", s)
	}
	return start, end, nil
}

// parseClock reads HH:MM as minutes after midnight; 24:00 only as an end.
func parseClock(s string, isEnd bool) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	switch {
	case !ok || len(h) != 2 || len(m) != 2 || err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59:
		return 0, fmt.Errorf("time %q is not HH:MM", s)
	case hh == 24 && mm == 0 && isEnd:
		return 24 * 60, nil
	case hh > 23:
		return 0, fmt.Errorf("time %q is past 23:59 (24:00 ends a day)", s)
	}
	return hh*60 + mm, nil
}

// Open tells whether t is inside a window of the schedule; when it is not,
// next is when the next window opens (zero if none opens within a week,
// which a parsed schedule never has).
func (s Schedule) Open(t time.Time) (open bool, next time.Time) {
	for _, w := range s.windows {
		in, n := w.open(t)
		if in {
			return true, time.Time{}
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return false, next
}

// Closes is when the window t is in closes: the latest end of those open
// at t, and on through windows that open as one closes (at most a week
// on); zero when t is in none.
func (s Schedule) Closes(t time.Time) time.Time {
	var end time.Time
	for at := t; !at.After(t.AddDate(0, 0, 7)); at = end {
		next := end
		for _, w := range s.windows {
			if in, to, _ := w.at(at); in && to.After(next) {
				next = to
			}
		}
		if !next.After(end) {
			break
		}
		end = next
	}
	return end
}

// open tells whether w is open at t; when it is not, next is when it
// opens.
func (w window) open(t time.Time) (bool, time.Time) {
	in, _, next := w.at(t)
	return in, next
}

// at looks at the windows that open from the day before t (one may still
// be open) to a week after it: whether one is open at t and when it
// closes, else when the next opens.
func (w window) at(t time.Time) (in bool, to, next time.Time) {
	local := t.In(w.loc)
	y, m, d := local.Date()
	for i := -1; i <= 7; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, time.UTC) // a date, free of the zone's transitions
		if !w.days[day.Weekday()] {
			continue
		}
		from := reached(day, w.start, w.loc)
		endDay := day
		if w.end <= w.start {
			endDay = day.AddDate(0, 0, 1)
		}
		to := reached(endDay, w.end, w.loc)
		if !from.Before(to) { // wholly inside a daylight-saving gap: no window that day
			continue
		}
		if !t.Before(from) && t.Before(to) {
			return true, to, time.Time{}
		}
		if from.After(t) {
			return false, time.Time{}, from
		}
	}
	return false, time.Time{}, time.Time{}
}

// reached is the first moment the zone's clock reaches minutes after
// midnight of the date of day: the first of two readings in an overlap, the
// end of the gap for a reading the clock jumps over.
func reached(day time.Time, minutes int, loc *time.Location) time.Time {
	y, m, d := day.Date()
	wall := time.Date(y, m, d, 0, minutes, 0, 0, time.UTC) // the reading, as if the zone were UTC
	var first time.Time
	var later time.Time // the latest candidate: where a gap ends, if the reading is in one
	for _, probe := range []time.Time{wall.Add(-36 * time.Hour), wall, wall.Add(36 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		c := wall.Add(-time.Duration(off) * time.Second)
		if reads(c, loc, wall) && (first.IsZero() || c.Before(first)) {
			first = c
		}
		if c.After(later) {
			later = c
		}
	}
	if !first.IsZero() {
		return first
	}
	start, _ := later.In(loc).ZoneBounds() // in a gap: the clock jumps past the reading when its zone starts
	return start
}

// reads tells whether the zone's clock reads wall (as UTC) at c.
func reads(c time.Time, loc *time.Location, wall time.Time) bool {
	l := c.In(loc)
	y, m, d := l.Date()
	return time.Date(y, m, d, l.Hour(), l.Minute(), l.Second(), 0, time.UTC).Equal(wall)
}

// String is the annotation as written.
func (s Schedule) String() string { return s.Value }
