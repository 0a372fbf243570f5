package tla

import "fmt"

// TokenKind classifies tokens.
type TokenKind uint8

const (
	// TokEOF ends the token stream; the lexer returns it forever after the end.
	TokEOF TokenKind = iota
	// TokIllegal is malformed input; Token.Value holds the reason. The lexer
	// does not stop at it, so a caller that never consumes the token (for
	// example because an expression ended before it) never sees an error.
	TokIllegal
	// TokIdent is a name such as x, Foo, a_1 or TRUE. With Lexer.DollarNames it
	// also covers MPCal's $variable and $value.
	TokIdent
	// TokNumber is a numeral: 42, 1.5, \b101, \o17, \h1F (and \B, \O, \H).
	TokNumber
	// TokString is a string literal; Text is the source form, Value the
	// decoded contents.
	TokString
	// TokKeyword is a reserved word such as MODULE, LET or WF_.
	TokKeyword
	// TokSymbol is an operator or punctuation symbol in its source spelling,
	// for example "/\", "\in", "|->", "(+)", "<<", "]_" or ";".
	TokSymbol
	// TokSeparator is a line of four or more dashes.
	TokSeparator
	// TokModuleEnd is a line of four or more equals signs.
	TokModuleEnd
	// TokComment is a line or block comment; only produced when
	// Lexer.KeepComments is set.
	TokComment

	// offside is never produced by the lexer: the parser substitutes it for
	// a token that lies at or left of the innermost bullet column, which
	// ends the current item of a bulleted /\ or \/ list.
	offside
)

var kindNames = [...]string{
	TokEOF: "EOF", TokIllegal: "Illegal", TokIdent: "Ident", TokNumber: "Number",
	TokString: "String", TokKeyword: "Keyword", TokSymbol: "Symbol",
	TokSeparator: "Separator", TokModuleEnd: "ModuleEnd", TokComment: "Comment",
	offside: "offside",
}

func (k TokenKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("TokenKind(%d)", int(k))
}

// Token is one lexical token with its source extent [Pos, End).
type Token struct {
	Kind  TokenKind
	Text  string // exact source text
	Value string // String: decoded value; Illegal: error message
	Pos   Pos    // first character
	End   Pos    // just after the last character
}

// Is reports whether t is the symbol or keyword s.
func (t Token) Is(s string) bool {
	return (t.Kind == TokSymbol || t.Kind == TokKeyword) && t.Text == s
}

// describe renders a token for error messages.
func (t Token) describe() string {
	switch t.Kind {
	case TokEOF:
		return "end of input"
	case offside:
		return fmt.Sprintf("%q (at or left of the enclosing /\\ or \\/ bullet)", t.Text)
	case TokIllegal:
		return t.Value
	case TokSeparator:
		return "----"
	case TokModuleEnd:
		return "===="
	}
	return fmt.Sprintf("%q", t.Text)
}

func (t Token) String() string {
	return fmt.Sprintf("%s %s %q", t.Pos, t.Kind, t.Text)
}
