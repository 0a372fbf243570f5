// Package tla lexes, parses and prints TLA+ modules. It is the first layer
// of Strata's Modular PlusCal (MPCal) compiler: the PlusCal and MPCal
// parsers reuse its Lexer and expression parser, and the compiler's TLA+
// output is produced with its printer and checked by SANY and TLC.
//
// # What is supported
//
// The TLA+ version 1 language and the parts of TLA+ 2 that TLC handles:
//
//   - Modules: ---- MODULE Name ---- ... ==== (four or more dashes or
//     equals signs), text before the header and after the end ignored,
//     EXTENDS, CONSTANT(S) (including operator constants F(_, _), _ + _,
//     -. _, _ ^+), VARIABLE(S), ASSUME/ASSUMPTION/AXIOM [Name ==],
//     operator definitions with ordinary, higher-order (F(_)) and symbol
//     parameters, infix/prefix/postfix definitions (a ++ b ==, -. a ==,
//     a ^* ==), function definitions f[x \in S] ==, LOCAL, RECURSIVE,
//     INSTANCE ... WITH (substituting names or operator symbols), named
//     instances I(x) == INSTANCE M WITH ..., THEOREM/LEMMA/PROPOSITION/
//     COROLLARY [Name ==] e, ---- separators and nested modules.
//   - Expressions: every operator of the standard precedence table
//     (prefix, infix and postfix, with all ASCII synonyms such as \land,
//     #, =<, \circ, (+)), the indentation rule for bulleted /\ and \/
//     lists, LET/IN, IF/THEN/ELSE, CASE with [] and OTHER, \A and \E
//     (bounded with names, lists or tuples, and unbounded), \AA and \EE,
//     CHOOSE (bounded, unbounded, tuple), set enumeration, {x \in S : P},
//     {e : x \in S}, [x \in S |-> e], [S -> T], records and record sets,
//     EXCEPT with !.a, ![e] and @, tuples, \X products, f[a, b], Op(a, b),
//     r.a, M!Op(x) and I(y)!Op, LAMBDA, bare operator symbols as arguments
//     (F(+, x)), [A]_v, <<A>>_v, WF_v(A) and SF_v(A).
//   - Lexing: names (including ones starting with digits or _, like 1st),
//     all keywords, numerals 42, 1.5, \b101, \o17, \h1F (and \B, \O, \H),
//     strings with the escapes \" \\ \n \t \r \f, \* line comments, nested
//     (* block comments *). Every token carries its line, column and byte
//     offset; columns count characters, with tabs advancing to the next
//     multiple of 8 (as SANY does), which matters for the indentation rule.
//
// Operators defined by the standard modules (Naturals, Integers, Reals,
// Sequences, FiniteSets, TLC, Bags) are ordinary names or user-definable
// symbols here (\o, :>, @@, (+), (-), \sqsubseteq, ...); the parser knows
// only their syntax and precedence, not their meaning. TRUE, FALSE,
// BOOLEAN and STRING are parsed as identifiers. No name resolution, arity
// or level checking is done: that is SANY's job, and later the compiler's.
//
// # Precedence
//
// The precedence ranges and associativity come from the table "Precedence
// Ranges of Operators" in Lamport's Summary of TLA+ (Specifying Systems,
// section 15.2.1), as implemented by SANY: two operators whose ranges
// overlap need parentheses (a /\ b \/ c and a = b = c are errors) unless
// it is the same left-associative operator repeated. Where SANY differs
// from the Summary we follow SANY, since printed specifications are fed to
// it: SUBSET, UNION and DOMAIN have the range 10-13, and a 15-level postfix
// operator directly after ENABLED, UNCHANGED, [] or <> is a conflict. See
// ops.go and LookupOp.
//
// # What is not supported
//
//   - Proofs. A proof after a theorem (starting with PROOF, BY, OBVIOUS,
//     OMITTED or a step label such as <1>) is skipped, not parsed, and kept
//     verbatim in Theorem.Proof; it ends at the next token in column 1
//     that can start a module unit. ASSUME ... PROVE statements and
//     module-level USE, HIDE and DEFINE are errors.
//   - TLA+ 2 subexpression names (Op!1, Op!<<, labels lab::) and
//     qualified operator symbols (M!+, a M!+ b).
//   - The Unicode spellings of operators.
//
// # Printing
//
// Format, FormatUnit and FormatExpr print trees as TLA+ that parses back
// to the same tree. Parentheses are not kept in the tree; the printer adds
// them where precedence requires (and conservatively where an open-ended
// construct such as IF, LET or \A would otherwise swallow what follows).
// Comments and layout are not kept. Expressions are printed on one line
// except bulleted lists, LET, and long IF and CASE expressions.
//
// # Errors
//
// Malformed input gives an *Error ("file:line:col: syntax: message") and
// never a panic; nesting deeper than 1000 levels is an error rather than
// a stack overflow.
//
// # Building PlusCal and MPCal parsers on this package
//
// A PlusCal/MPCal parser lexes the algorithm (which sits inside a comment)
// with NewLexerAt, so positions stay relative to the whole file, setting
// Lexer.DollarNames for MPCal's $variable and $value. It wraps the lexer
// in a Parser with Options.DisabledInfix set to "||" and ":=" (PlusCal
// uses them as statement syntax, while TLA+ has them as user-definable
// operators), reads statement keywords, labels and punctuation itself with
// Peek, PeekAt and Next (";" is a Symbol token, and lowercase words such
// as "await" or "then" are ordinary identifiers), and calls ParseExpr
// wherever an expression is expected: it stops at the first token that
// cannot continue the expression and leaves it as the current token.
// ParseUnit parses the definitions of a define block. Errors reported
// through Parser.Errorf look the same as the TLA+ parser's. ParseExprAt and
// ParseExprTokens are shortcuts for parsing one expression from a byte
// offset or from a token slice.
package tla
