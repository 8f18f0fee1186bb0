package cmd

import (
	"strings"
	"testing"
	"time"
)

func TestShadowFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*ShadowFlags)
		dry  string
		want string
	}{
		{"ok", func(*ShadowFlags) {}, "client", ""},
		{"server dry run", func(*ShadowFlags) {}, "server", "--dry-run=server"},
		{"window shorter than max-wait", func(f *ShadowFlags) { f.Window = 10 * time.Second }, "client", "--shadow-window"},
		{"bad name", func(f *ShadowFlags) { f.Name = "Bad_Name" }, "client", "--shadow-record"},
		{"too big", func(f *ShadowFlags) { f.MaxBytes = 2 << 20 }, "client", "--shadow-record-max-bytes"},
	} {
		f := defaultShadowFlags()
		f.Shadow = true
		tc.f(&f)
		err := f.validate(tc.dry, 30*time.Second)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
