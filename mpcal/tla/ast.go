package tla

// Loc records where a node starts. It is embedded in every node.
type Loc struct{ Pos Pos }

// Position returns the node's start.
func (l Loc) Position() Pos { return l.Pos }

// Node is any syntax tree node.
type Node interface{ Position() Pos }

// Expr is a TLA+ expression. Parentheses are not represented: the
// printer inserts them where precedence or layout requires.
type Expr interface {
	Node
	exprNode()
}

// Unit is a module-level item: a declaration, definition, assumption,
// theorem, instance, separator line or nested module. Definitions inside
// LET are Units too.
type Unit interface {
	Node
	unitNode()
}

// ---- Expressions ----

// Ident is an unqualified name used without arguments: x, Nat, TRUE.
type Ident struct {
	Loc
	Name string
}

// InstSel is one "Name(args)!" step of a module-qualified name.
type InstSel struct {
	Loc
	Name string
	Args []Expr
}

// OpApp applies an operator to arguments, Op(a, b), or names an operator
// through instances, M!Op or I(x)!Op(y). Without Prefix, Args is non-empty
// (a bare name is an Ident).
type OpApp struct {
	Loc
	Prefix []InstSel
	Name   string
	Args   []Expr
}

// OpSymbol is an operator symbol passed as an argument, as in F(+, x) or
// INSTANCE M WITH Op <- \cup. Op is the canonical infix spelling, or "-."
// for the prefix minus, or a prefix/postfix symbol.
type OpSymbol struct {
	Loc
	Op string
}

// Number is a numeral in its source form (42, 1.5, \b101, \o17, \h1F).
type Number struct {
	Loc
	Text string
}

// String is a string literal; Value is the decoded contents.
type String struct {
	Loc
	Value string
}

// Unary is a prefix operator application: ~ - ENABLED UNCHANGED SUBSET
// UNION DOMAIN [] <>. Op is the canonical spelling ("-" for minus).
type Unary struct {
	Loc
	Op string
	X  Expr
}

// Postfix is x', x^+, x^* or x^#.
type Postfix struct {
	Loc
	Op string
	X  Expr
}

// Binary is an infix operator application. Op is the canonical spelling
// (see OpInfo); user-definable symbols like \o, :>, @@, \oplus are here too.
type Binary struct {
	Loc
	Op   string
	L, R Expr
}

// Cross is a Cartesian product A \X B \X C (at least two factors).
type Cross struct {
	Loc
	Factors []Expr
}

// Junction is a bulleted conjunction or disjunction list. Op is "/\" or
// "\/". A list ends at the first token at or left of the bullets' column
// (the indentation rule), so items need no parentheses.
type Junction struct {
	Loc
	Op    string
	Items []Expr
}

// If is IF Cond THEN Then ELSE Else.
type If struct {
	Loc
	Cond, Then, Else Expr
}

// CaseArm is one "Cond -> Value" of a CASE.
type CaseArm struct {
	Cond, Value Expr
}

// Case is CASE arms [] ... with an optional OTHER (nil if absent).
type Case struct {
	Loc
	Arms  []CaseArm
	Other Expr
}

// Let is LET Defs IN Body. Defs holds *OpDef, *FuncDef, *ModuleDef and
// *Recursive units.
type Let struct {
	Loc
	Defs []Unit
	Body Expr
}

// Bound is one "x, y \in S" or "<<a, b>> \in S" of a quantifier, CHOOSE,
// set or function constructor. Tuple marks the <<...>> form. Set is nil
// for an unbounded quantifier or CHOOSE.
type Bound struct {
	Loc
	Names []*Ident
	Tuple bool
	Set   Expr
}

// Quant is \A, \E (bounded or not) or the temporal \AA, \EE (unbounded).
// An unbounded quantifier has a single Bound with a nil Set.
type Quant struct {
	Loc
	Op     string // "\A", "\E", "\AA" or "\EE"
	Bounds []Bound
	Body   Expr
}

// Choose is CHOOSE x \in S : P (Bound.Set nil when unbounded).
type Choose struct {
	Loc
	Bound Bound
	Body  Expr
}

// SetEnum is {a, b, c}; {} has no elements.
type SetEnum struct {
	Loc
	Elems []Expr
}

// SetFilter is {x \in S : P}.
type SetFilter struct {
	Loc
	Bound Bound
	Pred  Expr
}

// SetMap is {e : x \in S, y \in T}.
type SetMap struct {
	Loc
	Elem   Expr
	Bounds []Bound
}

// FuncCons is the function constructor [x \in S, y \in T |-> e].
type FuncCons struct {
	Loc
	Bounds []Bound
	Body   Expr
}

// FuncSet is the set of functions [S -> T].
type FuncSet struct {
	Loc
	Dom, Rng Expr
}

// RecField is one "name |-> e" of a record or "name : S" of a record set.
type RecField struct {
	Name  string
	Value Expr
}

// Record is [a |-> 1, b |-> 2].
type Record struct {
	Loc
	Fields []RecField
}

// RecordSet is [a : S, b : T].
type RecordSet struct {
	Loc
	Fields []RecField
}

// ExceptSel is one step of an EXCEPT path: .field (Field set) or
// [e1, ..., en] (Index set).
type ExceptSel struct {
	Field string
	Index []Expr
}

// ExceptUpdate is one "!path = value".
type ExceptUpdate struct {
	Path  []ExceptSel
	Value Expr
}

// Except is [f EXCEPT !path = value, ...]. Inside a value, @ (an AtSign)
// stands for the old value at the path.
type Except struct {
	Loc
	Func    Expr
	Updates []ExceptUpdate
}

// AtSign is @ inside an EXCEPT value.
type AtSign struct{ Loc }

// Tuple is <<a, b, c>>; <<>> has no elements.
type Tuple struct {
	Loc
	Elems []Expr
}

// FuncApp is function application f[a, b].
type FuncApp struct {
	Loc
	Func Expr
	Args []Expr
}

// FieldAccess is record field selection r.name.
type FieldAccess struct {
	Loc
	X     Expr
	Field string
}

// Lambda is LAMBDA x, y : e (an operator argument).
type Lambda struct {
	Loc
	Params []*Ident
	Body   Expr
}

// ActionExpr is [A]_v (Angle false) or <<A>>_v (Angle true).
type ActionExpr struct {
	Loc
	Angle  bool
	Action Expr
	Sub    Expr
}

// Fairness is WF_v(A) or, with Strong, SF_v(A).
type Fairness struct {
	Loc
	Strong bool
	Sub    Expr
	Action Expr
}

func (*Ident) exprNode()       {}
func (*OpApp) exprNode()       {}
func (*OpSymbol) exprNode()    {}
func (*Number) exprNode()      {}
func (*String) exprNode()      {}
func (*Unary) exprNode()       {}
func (*Postfix) exprNode()     {}
func (*Binary) exprNode()      {}
func (*Cross) exprNode()       {}
func (*Junction) exprNode()    {}
func (*If) exprNode()          {}
func (*Case) exprNode()        {}
func (*Let) exprNode()         {}
func (*Quant) exprNode()       {}
func (*Choose) exprNode()      {}
func (*SetEnum) exprNode()     {}
func (*SetFilter) exprNode()   {}
func (*SetMap) exprNode()      {}
func (*FuncCons) exprNode()    {}
func (*FuncSet) exprNode()     {}
func (*Record) exprNode()      {}
func (*RecordSet) exprNode()   {}
func (*Except) exprNode()      {}
func (*AtSign) exprNode()      {}
func (*Tuple) exprNode()       {}
func (*FuncApp) exprNode()     {}
func (*FieldAccess) exprNode() {}
func (*Lambda) exprNode()      {}
func (*ActionExpr) exprNode()  {}
func (*Fairness) exprNode()    {}

// ---- Units ----

// OpDecl declares an operator parameter or constant: x (Arity 0),
// F(_, _) (Arity 2), _ + _ (InfixDecl), -. _ (PrefixDecl) or _ ^+
// (PostfixDecl).
type OpDecl struct {
	Loc
	Name  string // identifier, or canonical symbol ("-." for prefix minus)
	Kind  DeclKind
	Arity int // number of arguments
}

// DeclKind says how a declared or defined operator is written.
type DeclKind uint8

const (
	// NameDecl is an identifier, possibly with a parameter list.
	NameDecl DeclKind = iota
	// PrefixDecl is a prefix symbol: -. a == ...
	PrefixDecl
	// InfixDecl is an infix symbol: a ++ b == ...
	InfixDecl
	// PostfixDecl is a postfix symbol: a ^+ == ...
	PostfixDecl
)

// OpDef is an operator definition. For NameDecl, Params are the
// parameters of Name(p1, ..., pn). For symbol definitions (a ++ b == ...)
// Params are the operands in order.
type OpDef struct {
	Loc
	Local  bool
	Name   string
	Kind   DeclKind
	Params []OpDecl
	Body   Expr
}

// FuncDef is f[x \in S, ...] == body.
type FuncDef struct {
	Loc
	Local  bool
	Name   string
	Bounds []Bound
	Body   Expr
}

// Subst is one "name <- e" of INSTANCE ... WITH. Name may be an operator
// symbol.
type Subst struct {
	Loc
	Name string
	Expr Expr
}

// Instance is INSTANCE Module WITH substitutions.
type Instance struct {
	Loc
	Local  bool
	Module string
	Subst  []Subst
}

// ModuleDef is a named instance, I(params) == INSTANCE M WITH ...
type ModuleDef struct {
	Loc
	Local    bool
	Name     string
	Params   []OpDecl
	Instance *Instance
}

// VarDecl is VARIABLES x, y.
type VarDecl struct {
	Loc
	Names []*Ident
}

// ConstDecl is CONSTANTS N, F(_), _ + _.
type ConstDecl struct {
	Loc
	Decls []OpDecl
}

// Recursive is RECURSIVE F(_), G.
type Recursive struct {
	Loc
	Decls []OpDecl
}

// Assume is ASSUME (or ASSUMPTION, AXIOM) [Name ==] Expr.
type Assume struct {
	Loc
	Keyword string
	Name    string
	Expr    Expr
}

// Theorem is THEOREM (or LEMMA, PROPOSITION, COROLLARY) [Name ==] Expr.
// Proofs are not parsed: Proof holds the proof's source text verbatim
// ("" if none) so that printing preserves it.
type Theorem struct {
	Loc
	Keyword string
	Name    string
	Expr    Expr
	Proof   string
}

// Separator is a ---- line between units.
type Separator struct{ Loc }

// Module is ---- MODULE Name ---- ... ====. A Module is also a Unit when
// nested inside another module.
type Module struct {
	Loc
	Name    string
	Extends []string
	Units   []Unit
}

func (*OpDef) unitNode()     {}
func (*FuncDef) unitNode()   {}
func (*Instance) unitNode()  {}
func (*ModuleDef) unitNode() {}
func (*VarDecl) unitNode()   {}
func (*ConstDecl) unitNode() {}
func (*Recursive) unitNode() {}
func (*Assume) unitNode()    {}
func (*Theorem) unitNode()   {}
func (*Separator) unitNode() {}
func (*Module) unitNode()    {}
