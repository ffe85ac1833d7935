package postgres

import "strings"

// PostgreSQL's text and jsonb cannot hold NUL (U+0000): COPY refuses the
// row ("invalid byte sequence for encoding UTF8: 0x00") and jsonb refuses
// "\u0000". Ploti may send it in any string, so a value loads with U+FFFD,
// the replacement character, in each NUL's place (docs/decisions.md): the
// column keeps its type and every other character, and verify, which loads
// the snapshot it compares with through the same COPY, reads it the same
// way. A DuckDB file keeps the NUL as Ploti sent it.

// replacement is U+FFFD in UTF-8.
const replacement = "\uFFFD"

// appendText appends s with each NUL byte replaced by U+FFFD.
func appendText(b []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			return append(b, s...)
		}
		b = append(append(b, s[:i]...), replacement...)
		s = s[i+1:]
	}
}

// appendJSONText appends the JSON text s with each escaped NUL ("\u0000")
// written as "\ufffd" and each raw NUL byte as U+FFFD; an escaped
// backslash followed by "u0000" (the text "\\u0000", a string holding
// the six characters \u0000) is left as it is.
func appendJSONText(b []byte, s string) []byte {
	if !hasNUL(s) {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0:
			b = append(b, replacement...)
		case c == '\\' && i+1 < len(s) && s[i+1] == 'u' && isNULEscape(s[i:]):
			b = append(b, `\ufffd`...)
			i += 5
		case c == '\\' && i+1 < len(s):
			b = append(b, c, s[i+1])
			i++
		default:
			b = append(b, c)
		}
	}
	return b
}

// hasNUL tells whether s has a NUL byte or an escaped one.
func hasNUL(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || strings.Contains(s, `\u0000`)
}

// isNULEscape tells whether s starts with "\u0000".
func isNULEscape(s string) bool {
	return len(s) >= 6 && s[0] == '\\' && s[1] == 'u' && s[2:6] == "0000"
}
