package version

import (
	"strings"
	"testing"
)

func TestServerWarning(t *testing.T) {
	for _, tc := range []struct {
		v    string
		warn bool
	}{
		{"v1.30.14", false}, {"v1.37.2", false}, {"v1.33.1-gke.1200", false}, {"1.35.0", false},
		{"v1.29.15", true}, {"v1.38.0", true}, {"v2.0.0", true}, {"v1.37.0-alpha.1+abc", false},
		{"", false}, {"nonsense", false},
	} {
		got := ServerWarning(tc.v)
		if (got != "") != tc.warn {
			t.Errorf("ServerWarning(%q) = %q, want a warning: %v", tc.v, got, tc.warn)
		}
		if got != "" && !strings.Contains(got, tc.v) || got != "" && !strings.Contains(got, "v1.30 to v1.37") {
			t.Errorf("ServerWarning(%q) = %q: must name the server's version and the range", tc.v, got)
		}
	}
}
