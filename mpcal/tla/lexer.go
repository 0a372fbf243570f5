package tla

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// keywords are the reserved words of TLA+ version 2 (SANY reserves the
// proof-language words too, so they cannot be used as identifiers).
var keywords = map[string]bool{
	"ASSUME": true, "ASSUMPTION": true, "AXIOM": true, "CASE": true,
	"CHOOSE": true, "CONSTANT": true, "CONSTANTS": true, "DOMAIN": true,
	"ELSE": true, "ENABLED": true, "EXCEPT": true, "EXTENDS": true,
	"IF": true, "IN": true, "INSTANCE": true, "LET": true, "LOCAL": true,
	"MODULE": true, "OTHER": true, "SUBSET": true, "THEN": true,
	"THEOREM": true, "UNCHANGED": true, "UNION": true, "VARIABLE": true,
	"VARIABLES": true, "WITH": true, "LAMBDA": true, "RECURSIVE": true,
	"LEMMA": true, "PROPOSITION": true, "COROLLARY": true,
	// Proof language (TLA+ 2); reserved but only skipped by this parser.
	"ACTION": true, "BY": true, "DEF": true, "DEFINE": true, "DEFS": true,
	"HAVE": true, "HIDE": true, "NEW": true, "OBVIOUS": true,
	"OMITTED": true, "ONLY": true, "PICK": true, "PROOF": true,
	"PROVE": true, "QED": true, "STATE": true, "SUFFICES": true,
	"TAKE": true, "TEMPORAL": true, "USE": true, "WITNESS": true,
}

// IsKeyword reports whether s is a reserved word (and so not an identifier).
func IsKeyword(s string) bool { return keywords[s] || s == "WF_" || s == "SF_" }

// backslashWords are the operators spelled \word.
var backslashWords = map[string]bool{
	"A": true, "E": true, "AA": true, "EE": true, "forall": true, "exists": true,
	"X": true, "times": true, "in": true, "notin": true, "cup": true,
	"cap": true, "union": true, "intersect": true, "subseteq": true,
	"subset": true, "supseteq": true, "supset": true, "land": true,
	"lor": true, "lnot": true, "neg": true, "equiv": true, "leq": true,
	"geq": true, "ll": true, "gg": true, "prec": true, "preceq": true,
	"succ": true, "succeq": true, "sim": true, "simeq": true,
	"approx": true, "asymp": true, "cong": true, "doteq": true,
	"propto": true, "sqsubset": true, "sqsubseteq": true, "sqsupset": true,
	"sqsupseteq": true, "o": true, "circ": true, "div": true, "cdot": true,
	"oplus": true, "ominus": true, "odot": true, "oslash": true,
	"otimes": true, "bigcirc": true, "bullet": true, "star": true,
	"uplus": true, "sqcap": true, "sqcup": true, "wr": true,
}

// symbols lists the non-backslash symbols, longest first, so that the
// lexer takes the longest match ("<=>" before "<=" before "<").
var symbols = func() []string {
	s := []string{
		"-+->", "(\\X)",
		"<=>", "|->", "...", "::=", "(+)", "(-)", "(.)", "(/)", ">>_",
		"=>", "==", "=<", "=|", "<=", ">=", "/=", "/\\", "..", "::", ":=",
		":>", "<:", "<-", "->", "-|", "|-", "|=", "||", "@@", "++", "--",
		"**", "//", "^^", "&&", "%%", "$$", "??", "!!", "##", "~>", "<>",
		"[]", "<<", ">>", "^+", "^*", "^#", "-.", "]_",
		"=", "<", ">", "+", "-", "*", "/", "^", "%", "|", "&", "$", "?",
		"!", "#", "~", "'", "@", ".", ",", ":", ";", "(", ")", "[", "]",
		"{", "}",
	}
	return s
}()

// symbolsByFirst indexes symbols by their first byte, keeping the
// longest-first order.
var symbolsByFirst = func() (m [256][]string) {
	for _, s := range symbols {
		m[s[0]] = append(m[s[0]], s)
	}
	return m
}()

// Lexer splits TLA+ source into tokens. It works lazily, one token per
// call to Next, so a caller can lex only a region of a file (for example
// the PlusCal algorithm inside a comment) and stop where it likes.
type Lexer struct {
	// DollarNames makes "$name" one identifier, as MPCal mapping macros
	// need for $variable and $value. In plain TLA+ "$" is an infix operator.
	DollarNames bool
	// KeepComments makes Next return Comment tokens instead of skipping them.
	KeepComments bool

	src []byte
	off int
	pos Pos
}

// NewLexer returns a lexer for the whole of src. file names the source in
// token positions.
func NewLexer(file string, src []byte) *Lexer {
	return &Lexer{src: src, pos: Pos{File: file, Line: 1, Col: 1}}
}

// NewLexerAt returns a lexer that starts at byte offset off of src. Token
// positions are still relative to the start of src, so errors point into
// the whole file.
func NewLexerAt(file string, src []byte, off int) *Lexer {
	l := NewLexer(file, src)
	if off < 0 {
		off = 0
	}
	if off > len(src) {
		off = len(src)
	}
	l.advance(off)
	return l
}

// Offset returns the byte offset of the next unread character.
func (l *Lexer) Offset() int { return l.off }

// advance moves n bytes forward, keeping line and column up to date.
func (l *Lexer) advance(n int) {
	end := l.off + n
	for l.off < end {
		r, size := utf8.DecodeRune(l.src[l.off:])
		l.off += size
		l.pos.Offset = l.off
		switch r {
		case '\n':
			l.pos.Line++
			l.pos.Col = 1
		case '\t':
			l.pos.Col = (l.pos.Col-1)/8*8 + 9
		case '\r':
			// Zero width, so CRLF files get the same columns as LF files.
		default:
			l.pos.Col++
		}
	}
}

func (l *Lexer) peekByte(k int) byte {
	if l.off+k < len(l.src) {
		return l.src[l.off+k]
	}
	return 0
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isWordChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_'
}

// token finishes a token that started at start and is n bytes long.
func (l *Lexer) token(kind TokenKind, start Pos, n int) Token {
	text := string(l.src[start.Offset : start.Offset+n])
	l.advance(start.Offset + n - l.off)
	return Token{Kind: kind, Text: text, Pos: start, End: l.pos}
}

func (l *Lexer) illegal(start Pos, n int, format string, args ...any) Token {
	t := l.token(TokIllegal, start, n)
	t.Value = fmt.Sprintf(format, args...)
	return t
}

// Next returns the next token. At the end of input it returns EOF tokens.
func (l *Lexer) Next() Token {
	for {
		// Skip white space.
		for l.off < len(l.src) {
			c := l.src[l.off]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				l.advance(1)
				continue
			}
			break
		}
		if l.off >= len(l.src) {
			return Token{Kind: TokEOF, Pos: l.pos, End: l.pos}
		}
		start := l.pos
		c := l.src[l.off]
		switch {
		case c == '\\' && l.peekByte(1) == '*':
			n := 2
			for l.off+n < len(l.src) && l.src[l.off+n] != '\n' {
				n++
			}
			t := l.token(TokComment, start, n)
			if l.KeepComments {
				return t
			}
			continue
		case c == '(' && l.peekByte(1) == '*':
			n, ok := l.blockComment()
			if !ok {
				return l.illegal(start, n, "unterminated comment")
			}
			t := l.token(TokComment, start, n)
			if l.KeepComments {
				return t
			}
			continue
		}
		return l.lexToken(start, c)
	}
}

// blockComment measures the (* ... *) comment at the current offset.
// Block comments nest, so "(* a (* b *) c *)" is one comment.
func (l *Lexer) blockComment() (n int, ok bool) {
	depth := 0
	i := l.off
	for i < len(l.src) {
		switch {
		case l.src[i] == '(' && i+1 < len(l.src) && l.src[i+1] == '*':
			depth++
			i += 2
		case l.src[i] == '*' && i+1 < len(l.src) && l.src[i+1] == ')':
			depth--
			i += 2
			if depth == 0 {
				return i - l.off, true
			}
		default:
			i++
		}
	}
	return len(l.src) - l.off, false
}

func (l *Lexer) lexToken(start Pos, c byte) Token {
	switch {
	case isWordChar(c):
		return l.word(start)
	case c == '"':
		return l.str(start)
	case c == '\\':
		return l.backslash(start)
	case c == '-' && l.run('-') >= 4:
		return l.token(TokSeparator, start, l.run('-'))
	case c == '=' && l.run('=') >= 4:
		return l.token(TokModuleEnd, start, l.run('='))
	case c == '$' && l.DollarNames && isWordChar(l.peekByte(1)):
		n := 1
		for isWordChar(l.peekByte(n)) {
			n++
		}
		return l.token(TokIdent, start, n)
	}
	if n := l.proofStep(); n > 0 {
		return l.token(TokSymbol, start, n)
	}
	rest := l.src[l.off:]
	for _, s := range symbolsByFirst[c] {
		if len(rest) >= len(s) && string(rest[:len(s)]) == s {
			return l.token(TokSymbol, start, len(s))
		}
	}
	r, size := utf8.DecodeRune(rest)
	if r == utf8.RuneError && size == 1 {
		return l.illegal(start, 1, "invalid byte 0x%02x", rest[0])
	}
	return l.illegal(start, size, "unexpected character %q", r)
}

// proofStep measures a TLAPS proof step label such as <1>, <*> or <+> at
// the current offset (0 if there is none). Treating it as one token lets a
// theorem's statement end before its proof. It cannot break an ordinary
// expression: a < 1 > b is a precedence conflict anyway, and we insist
// that the > is not the start of >> so that <<a, b<1>> still lexes as a
// tuple.
func (l *Lexer) proofStep() int {
	if l.peekByte(0) != '<' {
		return 0
	}
	n := 1
	switch c := l.peekByte(1); {
	case c == '*' || c == '+':
		n = 2
	case isDigit(c):
		for isDigit(l.peekByte(n)) {
			n++
		}
	default:
		return 0
	}
	if l.peekByte(n) != '>' || l.peekByte(n+1) == '>' {
		return 0
	}
	return n + 1
}

// run counts how many times c repeats from the current offset.
func (l *Lexer) run(c byte) int {
	n := 0
	for l.peekByte(n) == c {
		n++
	}
	return n
}

// word lexes names, keywords and decimal numerals. TLA+ names may start
// with digits or underscores as long as they contain a letter.
func (l *Lexer) word(start Pos) Token {
	n := 0
	letter := false
	for isWordChar(l.peekByte(n)) {
		letter = letter || isLetter(l.peekByte(n))
		n++
	}
	w := string(l.src[l.off : l.off+n])
	switch {
	case letter:
		// WF_ and SF_ are reserved prefixes: WF_vars is WF_ followed by
		// the subscript vars.
		if strings.HasPrefix(w, "WF_") || strings.HasPrefix(w, "SF_") {
			return l.token(TokKeyword, start, 3)
		}
		if keywords[w] {
			return l.token(TokKeyword, start, n)
		}
		return l.token(TokIdent, start, n)
	case w == "_":
		return l.token(TokSymbol, start, 1)
	case strings.Trim(w, "0123456789") == "":
		// A decimal like 1.5, but not the 1 of 1..2.
		if l.peekByte(n) == '.' && isDigit(l.peekByte(n+1)) {
			n++
			for isDigit(l.peekByte(n)) {
				n++
			}
		}
		return l.token(TokNumber, start, n)
	}
	return l.illegal(start, n, "malformed name %q (a name needs a letter)", w)
}

func (l *Lexer) str(start Pos) Token {
	var b strings.Builder
	n := 1
	for {
		if l.off+n >= len(l.src) || l.src[l.off+n] == '\n' {
			return l.illegal(start, n, "unterminated string")
		}
		c := l.src[l.off+n]
		switch {
		case c == '"':
			t := l.token(TokString, start, n+1)
			t.Value = b.String()
			return t
		case c == '\\':
			var d byte
			switch l.peekByte(n + 1) {
			case '"':
				d = '"'
			case '\\':
				d = '\\'
			case 'n':
				d = '\n'
			case 't':
				d = '\t'
			case 'r':
				d = '\r'
			case 'f':
				d = '\f'
			default:
				return l.illegal(start, min(n+2, len(l.src)-l.off), "unknown escape sequence in string")
			}
			b.WriteByte(d)
			n += 2
		case c < ' ' && c != '\t':
			return l.illegal(start, n+1, "control character 0x%02x in string", c)
		default:
			b.WriteByte(c)
			n++
		}
	}
}

// backslash lexes everything that starts with "\": \/, the set difference
// \, operator words like \in, and numerals \b101, \o17, \h1F.
func (l *Lexer) backslash(start Pos) Token {
	c1, c2 := l.peekByte(1), l.peekByte(2)
	if c1 == '/' {
		return l.token(TokSymbol, start, 2)
	}
	if digits := numeralDigits(c1); digits != "" && strings.IndexByte(digits, c2) >= 0 {
		n := 2
		for isWordChar(l.peekByte(n)) {
			if strings.IndexByte(digits, l.peekByte(n)) < 0 {
				return l.illegal(start, n+1, "invalid digit %q in numeral", l.peekByte(n))
			}
			n++
		}
		return l.token(TokNumber, start, n)
	}
	if isLetter(c1) {
		n := 1
		for isLetter(l.peekByte(n)) {
			n++
		}
		w := string(l.src[l.off+1 : l.off+n])
		if !backslashWords[w] {
			return l.illegal(start, n, "unknown operator \\%s", w)
		}
		return l.token(TokSymbol, start, n)
	}
	return l.token(TokSymbol, start, 1) // set difference
}

// numeralDigits returns the digits allowed after \b, \o or \h.
func numeralDigits(c byte) string {
	switch c {
	case 'b', 'B':
		return "01"
	case 'o', 'O':
		return "01234567"
	case 'h', 'H':
		return "0123456789abcdefABCDEF"
	}
	return ""
}

// Tokenize lexes all of src. It stops at the first malformed token and
// reports it as an *Error. The result does not include the final EOF.
func Tokenize(file string, src []byte) ([]Token, error) {
	l := NewLexer(file, src)
	var toks []Token
	for {
		t := l.Next()
		switch t.Kind {
		case TokEOF:
			return toks, nil
		case TokIllegal:
			return toks, &Error{File: file, Pos: t.Pos, Msg: t.Value}
		}
		toks = append(toks, t)
	}
}
