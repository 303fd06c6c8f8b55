package crdt

import "unicode/utf8"

// appendEscaped writes s escaped as the SDK's escapeString does: quote, backslash and the
// named control characters, U+2028 and U+2029; everything else (other control characters
// included) as it is.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\f':
				b = append(b, '\\', 'f')
			case '\b':
				b = append(b, '\\', 'b')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\u2028':
			b = append(b, `\u2028`...)
		case '\u2029':
			b = append(b, `\u2029`...)
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return b
}

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
