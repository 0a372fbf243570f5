package tlastring

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":           `""`,
		"plain":      `"plain"`,
		"a\"b\\c":    `"a\"b\\c"`,
		"l1\nl2\tx":  `"l1\nl2\tx"`,
		"\r\f":       `"\r\f"`,
		"unicode: é": `"unicode: é"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
