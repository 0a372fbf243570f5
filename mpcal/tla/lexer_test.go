package tla

import (
	"strings"
	"testing"
)

// lexAll renders each token as "Kind:text" (String tokens show their
// decoded value, Illegal tokens their message).
func lexAll(src string) []string {
	l := NewLexer("t.tla", []byte(src))
	var out []string
	for {
		t := l.Next()
		switch t.Kind {
		case TokEOF:
			return out
		case TokString:
			out = append(out, "String:"+t.Value)
		case TokIllegal:
			out = append(out, "Illegal:"+t.Value)
		default:
			out = append(out, t.Kind.String()+":"+t.Text)
		}
	}
}

func TestLexer(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // tokens joined by spaces
	}{
		{"names", "x Foo a_1 _x 1st TRUE", "Ident:x Ident:Foo Ident:a_1 Ident:_x Ident:1st Ident:TRUE"},
		{"keywords", "MODULE EXTENDS CONSTANT CONSTANTS VARIABLE VARIABLES ASSUME THEOREM LOCAL INSTANCE WITH",
			"Keyword:MODULE Keyword:EXTENDS Keyword:CONSTANT Keyword:CONSTANTS Keyword:VARIABLE Keyword:VARIABLES Keyword:ASSUME Keyword:THEOREM Keyword:LOCAL Keyword:INSTANCE Keyword:WITH"},
		{"more keywords", "LET IN IF THEN ELSE CASE OTHER CHOOSE EXCEPT DOMAIN SUBSET UNION ENABLED UNCHANGED RECURSIVE LAMBDA",
			"Keyword:LET Keyword:IN Keyword:IF Keyword:THEN Keyword:ELSE Keyword:CASE Keyword:OTHER Keyword:CHOOSE Keyword:EXCEPT Keyword:DOMAIN Keyword:SUBSET Keyword:UNION Keyword:ENABLED Keyword:UNCHANGED Keyword:RECURSIVE Keyword:LAMBDA"},
		{"fairness prefix", "WF_vars(A) SF_<<x>>(A) WF_ x",
			"Keyword:WF_ Ident:vars Symbol:( Ident:A Symbol:) Keyword:SF_ Symbol:<< Ident:x Symbol:>> Symbol:( Ident:A Symbol:) Keyword:WF_ Ident:x"},
		{"decimal numbers", "0 42 1.5 1..2 3...4", "Number:0 Number:42 Number:1.5 Number:1 Symbol:.. Number:2 Number:3 Symbol:... Number:4"},
		{"based numbers", `\b101 \B1 \o17 \O7 \h1F \Hff \hA0`, `Number:\b101 Number:\B1 Number:\o17 Number:\O7 Number:\h1F Number:\Hff Number:\hA0`},
		{"bad digit", `\b12`, `Illegal:invalid digit '2' in numeral`},
		{"concat is not octal", `s \o t \oplus u`, `Ident:s Symbol:\o Ident:t Symbol:\oplus Ident:u`},
		{"logic", `/\ \/ => <=> ~ \lnot \neg \land \lor \equiv`,
			`Symbol:/\ Symbol:\/ Symbol:=> Symbol:<=> Symbol:~ Symbol:\lnot Symbol:\neg Symbol:\land Symbol:\lor Symbol:\equiv`},
		{"sets", `\in \notin \subseteq \cup \cap \union \intersect \ \X \times`,
			`Symbol:\in Symbol:\notin Symbol:\subseteq Symbol:\cup Symbol:\cap Symbol:\union Symbol:\intersect Symbol:\ Symbol:\X Symbol:\times`},
		{"relations", `= # /= < > <= =< >= \leq \geq`,
			`Symbol:= Symbol:# Symbol:/= Symbol:< Symbol:> Symbol:<= Symbol:=< Symbol:>= Symbol:\leq Symbol:\geq`},
		{"arithmetic", `+ - * / \div % ^ .. ...`,
			`Symbol:+ Symbol:- Symbol:* Symbol:/ Symbol:\div Symbol:% Symbol:^ Symbol:.. Symbol:...`},
		{"standard module symbols", `@@ :> <: \o \circ (+) (-) (.) (/) (\X) \sqsubseteq`,
			`Symbol:@@ Symbol::> Symbol:<: Symbol:\o Symbol:\circ Symbol:(+) Symbol:(-) Symbol:(.) Symbol:(/) Symbol:(\X) Symbol:\sqsubseteq`},
		{"temporal", `' [] <> ~> -+-> ^+ ^* ^# \cdot`,
			`Symbol:' Symbol:[] Symbol:<> Symbol:~> Symbol:-+-> Symbol:^+ Symbol:^* Symbol:^# Symbol:\cdot`},
		{"quantifiers", `\A \E \AA \EE \forall \exists`,
			`Symbol:\A Symbol:\E Symbol:\AA Symbol:\EE Symbol:\forall Symbol:\exists`},
		{"punctuation", `[ ] { } << >> ( ) |-> -> <- : :: , . ! @ == ;`,
			`Symbol:[ Symbol:] Symbol:{ Symbol:} Symbol:<< Symbol:>> Symbol:( Symbol:) Symbol:|-> Symbol:-> Symbol:<- Symbol:: Symbol::: Symbol:, Symbol:. Symbol:! Symbol:@ Symbol:== Symbol:;`},
		{"longest match", `<<>> <=>= ||- |-> -.`, `Symbol:<< Symbol:>> Symbol:<=> Symbol:= Symbol:|| Symbol:- Symbol:|-> Symbol:-.`},
		{"action subscripts", `[A]_v <<A>>_v f[_]`,
			`Symbol:[ Ident:A Symbol:]_ Ident:v Symbol:<< Ident:A Symbol:>>_ Ident:v Ident:f Symbol:[ Symbol:_ Symbol:]`},
		{"user symbols", `!! ## $ $$ ?? %% && ** // ^^ ++ -- || | & := ::= |- |= -| =|`,
			`Symbol:!! Symbol:## Symbol:$ Symbol:$$ Symbol:?? Symbol:%% Symbol:&& Symbol:** Symbol:// Symbol:^^ Symbol:++ Symbol:-- Symbol:|| Symbol:| Symbol:& Symbol::= Symbol:::= Symbol:|- Symbol:|= Symbol:-| Symbol:=|`},
		{"line comment", "a \\* comment /\\ b\nc", "Ident:a Ident:c"},
		{"block comment", "a (* x *) b", "Ident:a Ident:b"},
		{"nested comment", "a (* x (* y *) z *) b", "Ident:a Ident:b"},
		{"comment holding stars and parens", "a (* (* ** ) *) (**) *) b", "Ident:a Ident:b"},
		{"unterminated comment", "a (* (* *) b", "Ident:a Illegal:unterminated comment"},
		{"strings", `"" "a b" "q\"q" "back\\slash" "\n\t\r\f"`, "String: String:a b String:q\"q String:back\\slash String:\n\t\r\f"},
		{"unicode string", `"π ≤ ∞"`, "String:π ≤ ∞"},
		{"unterminated string", "\"abc\nd", "Illegal:unterminated string Ident:d"},
		{"bad escape", `"a\qb"`, "Illegal:unknown escape sequence in string Ident:b Illegal:unterminated string"},
		{"separators", "---- MODULE M ----\n-------\n=====", "Separator:---- Keyword:MODULE Ident:M Separator:---- Separator:------- ModuleEnd:====="},
		{"short dashes", "--- ===", "Symbol:-- Symbol:- Symbol:== Symbol:="},
		{"proof steps", "<1>2. <*> <+> a<1 <<b<1>>", "Symbol:<1> Number:2 Symbol:. Symbol:<*> Symbol:<+> Ident:a Symbol:< Number:1 Symbol:<< Ident:b Symbol:< Number:1 Symbol:>>"},
		{"unknown backslash", `\foo`, `Illegal:unknown operator \foo`},
		{"stray character", "a ` b", "Ident:a Illegal:unexpected character '`' Ident:b"},
		{"digits only name", "__", "Illegal:malformed name \"__\" (a name needs a letter)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(lexAll(tt.src), " ")
			if got != tt.want {
				t.Errorf("lex(%q)\n got: %s\nwant: %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestLexerPositions(t *testing.T) {
	src := "a\n  bb (* x\ny *) c\n\td \"é\" e"
	l := NewLexer("t.tla", []byte(src))
	want := []struct {
		text      string
		line, col int
	}{
		{"a", 1, 1}, {"bb", 2, 3}, {"c", 3, 6}, {"d", 4, 9}, {`"é"`, 4, 11}, {"e", 4, 15},
	}
	for _, w := range want {
		tok := l.Next()
		if tok.Text != w.text || tok.Pos.Line != w.line || tok.Pos.Col != w.col {
			t.Errorf("got %q at %d:%d, want %q at %d:%d", tok.Text, tok.Pos.Line, tok.Pos.Col, w.text, w.line, w.col)
		}
		if string(src[tok.Pos.Offset:tok.End.Offset]) != tok.Text {
			t.Errorf("offsets of %q do not match its text", tok.Text)
		}
	}
	if tok := l.Next(); tok.Kind != TokEOF {
		t.Errorf("want EOF, got %v", tok)
	}
}

func TestLexerOptions(t *testing.T) {
	l := NewLexer("t", []byte("$variable $ x (* c *) \\* d"))
	l.DollarNames = true
	l.KeepComments = true
	var got []string
	for tok := l.Next(); tok.Kind != TokEOF; tok = l.Next() {
		got = append(got, tok.Kind.String()+":"+tok.Text)
	}
	want := "Ident:$variable Symbol:$ Ident:x Comment:(* c *) Comment:\\* d"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("got %s\nwant %s", s, want)
	}

	// NewLexerAt keeps file-relative positions.
	src := []byte("line one\n  (* --algorithm x *)")
	at := strings.Index(string(src), "--algorithm")
	tok := NewLexerAt("t", src, at).Next()
	if tok.Text != "--" || tok.Pos.String() != "t:2:6" || tok.Pos.Offset != at {
		t.Errorf("NewLexerAt: got %v", tok)
	}
}

func TestTokenize(t *testing.T) {
	toks, err := Tokenize("f.tla", []byte("a + \n  `"))
	if err == nil || err.Error() != "f.tla:2:3: syntax: unexpected character '`'" {
		t.Fatalf("got err %v", err)
	}
	if len(toks) != 2 {
		t.Errorf("got %d tokens before the error, want 2", len(toks))
	}
}
