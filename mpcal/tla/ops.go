package tla

// The precedence ranges below are those of the "Precedence Ranges of
// Operators" table in Lamport's "Summary of TLA+" (Specifying Systems,
// section 15.2.1), as implemented by SANY (see the note on SUBSET). An
// operator has a range lo..hi rather than a single level. In
// "a op1 b op2 c", op1 binds tighter if op1.lo > op2.hi, op2 binds tighter
// if op2.lo > op1.hi, and otherwise the ranges overlap and the expression
// is illegal without parentheses, except that a left-associative operator
// may follow itself ("a + b + c"). A prefix operator is treated the same
// way, as an infix operator with no left operand.

// OpFix says where an operator symbol goes relative to its operands.
type OpFix uint8

const (
	PrefixOp OpFix = iota
	InfixOp
	PostfixOp
)

// OpInfo describes one operator symbol.
type OpInfo struct {
	Name string // canonical spelling, e.g. "/\" for both /\ and \land
	Fix  OpFix
	Lo   int  // precedence range, 1 (loosest) to 15
	Hi   int  //
	Left bool // left-associative
}

// opRow is one row of the table: a canonical spelling, its synonyms, and
// its precedence.
type opRow struct {
	names  []string // canonical spelling first
	lo, hi int
	left   bool
}

var infixRows = []opRow{
	{[]string{"=>"}, 1, 1, false},
	{[]string{"<=>", "\\equiv"}, 2, 2, false},
	{[]string{"~>"}, 2, 2, false},
	{[]string{"-+->"}, 2, 2, false},
	{[]string{"/\\", "\\land"}, 3, 3, true},
	{[]string{"\\/", "\\lor"}, 3, 3, true},
	{[]string{"="}, 5, 5, false},
	{[]string{"/=", "#"}, 5, 5, false},
	{[]string{"<"}, 5, 5, false},
	{[]string{">"}, 5, 5, false},
	{[]string{"<=", "=<", "\\leq"}, 5, 5, false},
	{[]string{">=", "\\geq"}, 5, 5, false},
	{[]string{"\\in"}, 5, 5, false},
	{[]string{"\\notin"}, 5, 5, false},
	{[]string{"\\subseteq"}, 5, 5, false},
	{[]string{"\\subset"}, 5, 5, false},
	{[]string{"\\supseteq"}, 5, 5, false},
	{[]string{"\\supset"}, 5, 5, false},
	{[]string{":="}, 5, 5, false},
	{[]string{"::="}, 5, 5, false},
	{[]string{"-|"}, 5, 5, false},
	{[]string{"=|"}, 5, 5, false},
	{[]string{"|-"}, 5, 5, false},
	{[]string{"|="}, 5, 5, false},
	{[]string{"\\approx"}, 5, 5, false},
	{[]string{"\\asymp"}, 5, 5, false},
	{[]string{"\\cong"}, 5, 5, false},
	{[]string{"\\doteq"}, 5, 5, false},
	{[]string{"\\gg"}, 5, 5, false},
	{[]string{"\\ll"}, 5, 5, false},
	{[]string{"\\prec"}, 5, 5, false},
	{[]string{"\\preceq"}, 5, 5, false},
	{[]string{"\\succ"}, 5, 5, false},
	{[]string{"\\succeq"}, 5, 5, false},
	{[]string{"\\propto"}, 5, 5, false},
	{[]string{"\\sim"}, 5, 5, false},
	{[]string{"\\simeq"}, 5, 5, false},
	{[]string{"\\sqsubset"}, 5, 5, false},
	{[]string{"\\sqsubseteq"}, 5, 5, false},
	{[]string{"\\sqsupset"}, 5, 5, false},
	{[]string{"\\sqsupseteq"}, 5, 5, false},
	{[]string{"\\cdot"}, 5, 14, true},
	{[]string{"@@"}, 6, 6, true},
	{[]string{":>"}, 7, 7, false},
	{[]string{"<:"}, 7, 7, false},
	{[]string{"\\"}, 8, 8, false},
	{[]string{"\\cap", "\\intersect"}, 8, 8, true},
	{[]string{"\\cup", "\\union"}, 8, 8, true},
	{[]string{".."}, 9, 9, false},
	{[]string{"..."}, 9, 9, false},
	{[]string{"!!"}, 9, 13, false},
	{[]string{"##"}, 9, 13, true},
	{[]string{"$"}, 9, 13, true},
	{[]string{"$$"}, 9, 13, true},
	{[]string{"??"}, 9, 13, true},
	{[]string{"\\sqcap"}, 9, 13, true},
	{[]string{"\\sqcup"}, 9, 13, true},
	{[]string{"\\uplus"}, 9, 13, true},
	{[]string{"\\wr"}, 9, 14, false},
	{[]string{"+"}, 10, 10, true},
	{[]string{"++"}, 10, 10, true},
	{[]string{"\\oplus", "(+)"}, 10, 10, true},
	{[]string{"%"}, 10, 11, false},
	{[]string{"%%"}, 10, 11, true},
	{[]string{"|"}, 10, 11, true},
	{[]string{"||"}, 10, 11, true},
	{[]string{"-"}, 11, 11, true},
	{[]string{"--"}, 11, 11, true},
	{[]string{"\\ominus", "(-)"}, 11, 11, true},
	{[]string{"&"}, 13, 13, true},
	{[]string{"&&"}, 13, 13, true},
	{[]string{"\\odot", "(.)"}, 13, 13, true},
	{[]string{"\\oslash", "(/)"}, 13, 13, false},
	{[]string{"\\otimes", "(\\X)"}, 13, 13, true},
	{[]string{"*"}, 13, 13, true},
	{[]string{"**"}, 13, 13, true},
	{[]string{"/"}, 13, 13, false},
	{[]string{"//"}, 13, 13, false},
	{[]string{"\\bigcirc"}, 13, 13, true},
	{[]string{"\\bullet"}, 13, 13, true},
	{[]string{"\\div"}, 13, 13, false},
	{[]string{"\\o", "\\circ"}, 13, 13, true},
	{[]string{"\\star"}, 13, 13, true},
	{[]string{"^"}, 14, 14, false},
	{[]string{"^^"}, 14, 14, false},
	// The Cartesian product is not an ordinary infix operator: A \X B \X C
	// is one three-way product (a Cross node), not nested products.
	{[]string{"\\X", "\\times"}, 10, 13, false},
}

var prefixRows = []opRow{
	{[]string{"~", "\\lnot", "\\neg"}, 4, 4, false},
	{[]string{"ENABLED"}, 4, 15, false},
	{[]string{"UNCHANGED"}, 4, 15, false},
	{[]string{"[]"}, 4, 15, false},
	{[]string{"<>"}, 4, 15, false},
	// The Summary of TLA+ lists SUBSET and UNION as 8-8 and DOMAIN as 9-9,
	// but SANY (tla2sany's ConfigConstants) gives all three 10-13, so that
	// SUBSET S \cup T is (SUBSET S) \cup T. We follow SANY because printed
	// specifications are checked with it.
	{[]string{"SUBSET"}, 10, 13, false},
	{[]string{"UNION"}, 10, 13, false},
	{[]string{"DOMAIN"}, 10, 13, false},
	{[]string{"-"}, 12, 12, false},
}

var postfixRows = []opRow{
	{[]string{"'"}, 15, 15, false},
	{[]string{"^+"}, 15, 15, false},
	{[]string{"^*"}, 15, 15, false},
	{[]string{"^#"}, 15, 15, false},
}

func buildOps(rows []opRow, fix OpFix) map[string]*OpInfo {
	m := make(map[string]*OpInfo)
	for _, r := range rows {
		info := &OpInfo{Name: r.names[0], Fix: fix, Lo: r.lo, Hi: r.hi, Left: r.left}
		for _, n := range r.names {
			m[n] = info
		}
	}
	return m
}

var (
	infixOps   = buildOps(infixRows, InfixOp)
	prefixOps  = buildOps(prefixRows, PrefixOp)
	postfixOps = buildOps(postfixRows, PostfixOp)
)

// LookupOp returns the operator with the given spelling (any synonym) and
// fixity, or nil. The prefix minus is "-" here; in definitions and
// declarations it is written "-.".
func LookupOp(spelling string, fix OpFix) *OpInfo {
	switch fix {
	case PrefixOp:
		return prefixOps[spelling]
	case InfixOp:
		return infixOps[spelling]
	case PostfixOp:
		return postfixOps[spelling]
	}
	return nil
}

// crossOp is the precedence of \X.
var crossOp = infixOps["\\X"]

// inOp is \in, used as the context when parsing the set of a bound.
var inOp = infixOps["\\in"]

// opToken reports whether a token spells an operator of the given fixity.
func opToken(t Token, fix OpFix) *OpInfo {
	if t.Kind != TokSymbol && t.Kind != TokKeyword {
		return nil
	}
	if fix == PrefixOp && t.Text == "-." {
		return prefixOps["-"]
	}
	return LookupOp(t.Text, fix)
}
