package lint

import (
	"fmt"
	"unicode/utf8"
)

// yamlReadableJSON rewrites one valid JSON value so that the YAML parser
// reads it as the JSON decoder does, byte for byte on the same lines. JSON
// and YAML differ inside strings: JSON spells a character outside the
// Basic Multilingual Plane as a UTF-16 surrogate pair (`\ud83d\udd10`,
// common in Grafana dashboards), which YAML rejects; YAML spells it
// `\U0001F510`. A lone surrogate, or a byte that is not UTF-8, becomes
// U+FFFD as encoding/json makes it; `\/` becomes `/`; a raw character that
// YAML does not keep as it is (see yamlPrintable) is escaped. Outside
// strings a tab is a blank in JSON, and becomes a space.
func yamlReadableJSON(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	inString := false
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case !inString:
			if c == '"' {
				inString = true
			} else if c == '\t' {
				c = ' '
			}
			out = append(out, c)
			i++
		case c == '"':
			inString = false
			out = append(out, c)
			i++
		case c == '\\':
			n, esc := jsonEscape(raw[i:])
			out = append(out, esc...)
			i += n
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				out = append(out, `\uFFFD`...)
			} else if yamlPrintable(r) {
				out = append(out, raw[i:i+n]...)
			} else {
				out = fmt.Appendf(out, `\u%04X`, r)
			}
			i += n
		}
	}
	return out
}

// jsonEscape reads the escape at the start of s (s[0] is the backslash) and
// returns how many bytes it spans and its YAML spelling.
func jsonEscape(s []byte) (int, []byte) {
	if len(s) < 2 {
		return len(s), s
	}
	switch s[1] {
	case '/':
		return 2, []byte("/") // YAML 1.1 has no \/
	case 'u':
	default:
		return 2, s[:2]
	}
	hi, ok := hex4(s[2:])
	if !ok {
		return 2, s[:2]
	}
	if hi < 0xD800 || hi > 0xDFFF {
		return 6, s[:6]
	}
	if hi <= 0xDBFF && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if lo, ok := hex4(s[8:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			r := 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00)
			return 12, fmt.Appendf(nil, `\U%08X`, r)
		}
	}
	return 6, []byte(`\uFFFD`)
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// yamlPrintable tells whether the YAML parser keeps a character of a
// string as it is: YAML's c-printable, less the characters it takes for
// line breaks (U+0085, U+2028, U+2029), which would fold the value. The C0
// controls cannot occur raw in a JSON string.
func yamlPrintable(r rune) bool {
	switch {
	case r < 0x7F:
		return true
	case r < 0xA0, r == 0x2028, r == 0x2029:
		return false
	case r == 0xFFFE || r == 0xFFFF:
		return false
	}
	return true
}
