package restartwindow

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse: any kubectl-cmsync.io/restart-window value (a namespace's user
// writes it) parses or fails without a panic, the error quoting the
// annotation; a parsed schedule, asked at any moment from 1970 to 2200,
// is open, or names when it next opens: after that moment, within a week
// and a day, and open then.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{Example, "Mon-Fri 09:00-17:00", "Sat,Sun 22:00-06:00 Europe/Berlin", "00:00-24:00", "Fri-Mon 23:30-00:30 America/New_York;",
		"Sun 02:00-03:00 Europe/Berlin", "Sun 01:30-02:30 America/Sao_Paulo", "Mon 09:00-09:00", "Mon 24:00-01:00", "Mon 9:00-10:00", ";;", "Mon",
		"Mon 09:00-10:00 Local", "Mon 09:00-10:00 ../../etc/passwd", "Mon 09:00-10:00 UTC extra", "Tue-Tue 00:00-00:01 Australia/Lord_Howe", ""} {
		f.Add(seed, int64(1_767_323_045))
	}
	f.Add("Sun 02:30-03:00 Europe/Berlin", int64(1_774_746_000)) // the day the clocks skip 02:00-03:00
	f.Fuzz(func(t *testing.T, value string, at int64) {
		s, err := Parse(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), Annotation) {
				t.Fatalf("Parse(%q): %v, want the annotation named", value, err)
			}
			return
		}
		if s.String() != value {
			t.Fatalf("Parse(%q).String() = %q", value, s.String())
		}
		now := time.Unix(0, 0).Add(time.Duration(uint64(at)%(230*365*24*3600)) * time.Second).UTC()
		open, next := s.Open(now)
		if open {
			return
		}
		if !next.After(now) || next.Sub(now) > 8*24*time.Hour {
			t.Fatalf("Parse(%q).Open(%s): closed, next %s", value, now, next)
		}
		if o, _ := s.Open(next); !o {
			t.Fatalf("Parse(%q).Open(%s): next %s, which is not open", value, now, next)
		}
	})
}
