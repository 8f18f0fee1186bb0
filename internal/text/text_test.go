package text

import "testing"

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		tail  string
		want  string
	}{
		{"short", 10, "...", "short"},
		{"exactly10!", 10, "...", "exactly10!"},
		{"a longer value", 8, "...", "a longer..."},
		{"a longer value", 8, "", "a longer"},
		{"ünïcödé", 3, "...", "ünï..."},                          // runes, never half a character
		{"日本語テキスト", 4, "", "日本"},                                 // wide characters are two cells
		{"\x1b[1mbold text\x1b[0m", 4, "", "\x1b[1mbold\x1b[0m"}, // styles kept, not counted
		{"x", 0, "", ""},
	} {
		if got := Truncate(c.in, c.width, c.tail); got != c.want {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", c.in, c.width, c.tail, got, c.want)
		}
	}
}

func TestTruncateBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		tail string
		want string
	}{
		{"short", 10, "...", "short"},
		{"exactly10!", 10, "...", "exactly10!"},
		{"a longer value", 8, "...", "a longer..."},
		{"aé", 2, "", "a"},      // é is two bytes: not cut in two
		{"a日本", 3, "…", "a…"},   // 日 is three bytes
		{"日本", 0, "...", "..."}, // nothing of s fits
		{"\xff\xfe\xfd", 2, "", "\xff\xfe"},
	} {
		if got := TruncateBytes(c.in, c.n, c.tail); got != c.want {
			t.Errorf("TruncateBytes(%q, %d, %q) = %q, want %q", c.in, c.n, c.tail, got, c.want)
		}
	}
}
