package inspect

import (
	"testing"
	"time"
)

func TestSyncedAt(t *testing.T) {
	got, ok := SyncedAt("..2024_05_06_07_08_09.123456789")
	if !ok || !got.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) {
		t.Errorf("got %v %v", got, ok)
	}
	for _, bad := range []string{"..data", "2024_05_06_07_08_09.1", "..2024_05_06_07_08_09", "..2024_05_06_07_08_09.", "..2024_13_06_07_08_09.1", "..2024_05_06_07_08_09.1x"} {
		if _, ok := SyncedAt(bad); ok {
			t.Errorf("SyncedAt(%q) ok", bad)
		}
	}
}
