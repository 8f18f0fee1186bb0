package containerread

import (
	"regexp"
	"time"
)

// dataDirRe matches the name of an atomic writer's timestamped directory.
var dataDirRe = regexp.MustCompile(`^\.\.(\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2})\.\d+$`)

// SyncedAt returns the UTC time encoded in a ..data target name
// ("..2024_01_02_15_04_05.123456789").
func SyncedAt(target string) (time.Time, bool) {
	m := dataDirRe.FindStringSubmatch(target)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006_01_02_15_04_05", m[1], time.UTC)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
