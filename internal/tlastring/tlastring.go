// Package tlastring writes TLA+ string literals, as SANY reads them and
// TLC prints them: the MPCal compiler's printer and the runtime's values
// (which print as TLC does) share it, so the two never disagree on an
// escape.
package tlastring

import "strings"

// Write writes s as a TLA+ string literal: the escapes TLA+ has (\" \\
// \n \t \r \f) for those bytes, every other byte as it is.
func Write(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Quote returns s as a TLA+ string literal.
func Quote(s string) string {
	var b strings.Builder
	Write(&b, s)
	return b.String()
}
