// Package text holds the two rules every line cmsync prints follows: text
// from the cluster is escaped (Printable) and a line is cut to a width
// (Truncate). It imports nothing of cmsync, so that every package, the core
// included, can use it.
package text

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Printable escapes the control characters of text that comes from the
// cluster (mount paths, file names, reasons quoting them) before it reaches a
// table or a header line: a newline or tab would break the table, and an
// escape sequence could rewrite the user's terminal. Control characters
// become Go escapes (\n, \t, \x1b); everything else, non-ASCII included, is
// kept; a byte that is not UTF-8 becomes U+FFFD (a lone 0x9b is the 8-bit
// CSI on terminals that are not UTF-8). (printers.EscapeTerminal of
// cli-runtime escapes only ESC and \r.)
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !isControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\n', '\x1b', '\u0085'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// isControl reports the C0 and C1 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// Truncate keeps at most width terminal cells of s and, when it cut, adds
// tail ("..." in messages, nothing on a screen whose edge is the mark). It
// counts cells, not bytes: a wide character is two, an ANSI style sequence
// none (styles are kept), and it never cuts a character in two.
func Truncate(s string, width int, tail string) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, max(width, 0), "") + tail
}

// TruncateBytes keeps at most n bytes of s and, when it cut, adds tail. It
// cuts at a character boundary, never inside a UTF-8 sequence: for limits
// counted in bytes (an API field's length, a quote of container output),
// where Truncate counts terminal cells.
func TruncateBytes(s string, n int, tail string) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for back := 0; n > 0 && back < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); back++ {
		n--
	}
	return s[:n] + tail
}
