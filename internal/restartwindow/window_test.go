package restartwindow

import (
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	const tail = `; write it as "Mon-Fri 02:00-05:00 Europe/Berlin" (days and zone optional, windows separated by ";")`
	for value, want := range map[string]string{
		"":                              `no window`,
		" ; ":                           `no window`,
		"Mon-Fri":                       `no time range after "Mon-Fri"`,
		"Mon-Fry 02:00-05:00":           `unknown day "Fry" (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or a range such as Mon-Fri)`,
		"Mon 2:00-05:00":                `time "2:00" is not HH:MM`,
		"Mon 02:00-25:00":               `time "25:00" is past 23:59 (24:00 ends a day)`,
		"Mon 24:00-02:00":               `time "24:00" is past 23:59 (24:00 ends a day)`,
		"Mon 02:60-05:00":               `time "02:60" is not HH:MM`,
		"Mon 02:00":                     `time range "02:00" is not HH:MM-HH:MM`,
		"Mon 02:00-02:00":               `time range "02:00-02:00" is empty (00:00-24:00 is the whole day)`,
		"02:00-05:00 Mars/Olympus":      `unknown time zone "Mars/Olympus" (an IANA name such as Europe/Berlin, or UTC)`,
		"02:00-05:00 Local":             `unknown time zone "Local" (an IANA name such as Europe/Berlin, or UTC)`,
		"02:00-05:00 Europe/Berlin now": `unexpected "now" after the time zone`,
	} {
		_, err := Parse(value)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", value, want)
			continue
		}
		if got, full := err.Error(), Annotation+` "`+value+`": `+want+tail; got != full {
			t.Errorf("Parse(%q):\n got %s\nwant %s", value, got, full)
		}
	}
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpen(t *testing.T) {
	// 2026-11-27 is a Friday; Berlin is UTC+1 then
	for _, c := range []struct {
		value, now string
		open       bool
		next       string
	}{
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T01:30:00Z", true, ""},                      // 02:30 in Berlin, a Friday
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T01:00:00Z", true, ""},                      // opens at 02:00 exactly
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T04:00:00Z", false, "2026-11-30T01:00:00Z"}, // closed at 05:00; Monday next
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T00:59:00Z", false, "2026-11-27T01:00:00Z"},
		{"02:00-05:00", "2026-11-28T06:00:00Z", false, "2026-11-29T02:00:00Z"}, // every day, UTC
		{"Fri 22:00-02:00", "2026-11-28T01:00:00Z", true, ""},                  // Saturday 01:00: Friday's window
		{"Fri 22:00-02:00", "2026-11-28T02:00:00Z", false, "2026-12-04T22:00:00Z"},
		{"Sat,Sun 00:00-24:00; Mon-Fri 20:00-21:00", "2026-11-27T20:30:00Z", true, ""},
		{"Sat,Sun 00:00-24:00; Mon-Fri 20:00-21:00", "2026-11-27T21:00:00Z", false, "2026-11-28T00:00:00Z"},
		{"Fri-Mon 03:00-04:00", "2026-11-30T03:30:00Z", true, ""}, // a range that wraps: Monday
		{"Fri-Mon 03:00-04:00", "2026-12-01T03:30:00Z", false, "2026-12-04T03:00:00Z"},
		// spring forward in Berlin, 2026-03-29 (a Sunday): 02:00 CET -> 03:00 CEST at 01:00Z
		{"Sun 02:30-04:00 Europe/Berlin", "2026-03-29T00:30:00Z", false, "2026-03-29T01:00:00Z"}, // opens when the gap ends
		{"Sun 02:30-04:00 Europe/Berlin", "2026-03-29T01:00:00Z", true, ""},
		{"Sun 02:30-04:00 Europe/Berlin", "2026-03-29T02:00:00Z", false, "2026-04-05T00:30:00Z"}, // 04:00 CEST closed it
		{"Sun 02:00-03:00 Europe/Berlin", "2026-03-29T00:59:00Z", false, "2026-04-05T00:00:00Z"}, // wholly inside the gap: empty that day
		// fall back in Berlin, 2026-10-25 (a Sunday): 03:00 CEST -> 02:00 CET at 01:00Z
		{"Sun 01:00-02:30 Europe/Berlin", "2026-10-25T00:29:00Z", true, ""},                      // 02:29 CEST
		{"Sun 01:00-02:30 Europe/Berlin", "2026-10-25T00:30:00Z", false, "2026-11-01T00:00:00Z"}, // the first 02:30 closes it
		{"Sun 02:30-04:00 Europe/Berlin", "2026-10-25T00:30:00Z", true, ""},                      // the first 02:30 opens it
		{"Sun 02:30-04:00 Europe/Berlin", "2026-10-25T02:59:00Z", true, ""},                      // 03:59 CET
		{"Sun 02:30-04:00 Europe/Berlin", "2026-10-25T03:00:00Z", false, "2026-11-01T01:30:00Z"},
		// a zone east of UTC on the day before: Tokyo's Monday 01:00 is Sunday 16:00Z
		{"Mon 01:00-02:00 Asia/Tokyo", "2026-11-29T16:30:00Z", true, ""},
		{"Mon 01:00-02:00 Asia/Tokyo", "2026-11-29T15:00:00Z", false, "2026-11-29T16:00:00Z"},
	} {
		s, err := Parse(c.value)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.value, err)
		}
		open, next := s.Open(at(t, c.now))
		if open != c.open {
			t.Errorf("%q at %s: open %t, want %t", c.value, c.now, open, c.open)
			continue
		}
		if !c.open && !next.Equal(at(t, c.next)) {
			t.Errorf("%q at %s: next %s, want %s", c.value, c.now, next.UTC().Format(time.RFC3339), c.next)
		}
	}
}

func TestCloses(t *testing.T) {
	// 2026-11-27 is a Friday; Berlin is UTC+1 then
	for _, c := range []struct{ value, now, closes string }{
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T01:30:00Z", "2026-11-27T04:00:00Z"},
		{"Mon-Fri 02:00-05:00 Europe/Berlin", "2026-11-27T04:00:00Z", ""},                    // closed
		{"Fri 22:00-02:00", "2026-11-28T01:00:00Z", "2026-11-28T02:00:00Z"},                  // Friday's window, on Saturday
		{"02:00-03:00; 02:30-04:00", "2026-11-28T02:10:00Z", "2026-11-28T04:00:00Z"},         // overlapping: the later end
		{"Fri 20:00-24:00; Sat 00:00-01:00", "2026-11-27T21:00:00Z", "2026-11-28T01:00:00Z"}, // one opens as the other closes
		{"00:00-24:00", "2026-11-27T21:00:00Z", "2026-12-05T00:00:00Z"},                      // always open: a week on
		{"Sun 01:00-02:30 Europe/Berlin", "2026-10-25T00:10:00Z", "2026-10-25T00:30:00Z"},    // the first 02:30 of the fall back
	} {
		s, err := Parse(c.value)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.value, err)
		}
		got := s.Closes(at(t, c.now))
		if c.closes == "" {
			if !got.IsZero() {
				t.Errorf("%q at %s: closes %s, want zero (not open)", c.value, c.now, got.UTC().Format(time.RFC3339))
			}
			continue
		}
		if !got.Equal(at(t, c.closes)) {
			t.Errorf("%q at %s: closes %s, want %s", c.value, c.now, got.UTC().Format(time.RFC3339), c.closes)
		}
	}
}
