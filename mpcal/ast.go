package mpcal

import "strata/mpcal/tla"

// Pos is a position in the source file (line and column as SANY counts).
type Pos = tla.Pos

// Algorithm is a PlusCal algorithm (--algorithm, --fair algorithm) or an
// MPCal one (--mpcal). Plain PlusCal algorithms have no archetypes,
// mapping macros or instances.
type Algorithm struct {
	Pos     Pos
	MPCal   bool
	PSyntax bool // written in PlusCal's P-syntax (begin ... end)
	Fair    bool // --fair algorithm
	Name    string

	Globals       []*VarDecl
	Defines       []tla.Unit
	Macros        []*Macro
	Procedures    []*Procedure
	MappingMacros []*MappingMacro
	Archetypes    []*Archetype
	Processes     []*Process
	Body          []Stmt // a uniprocess algorithm's body

	// Start and End are the byte offsets of the block in the file: from
	// the leading "--" to just after the closing "}" or "end algorithm".
	Start, End int
}

// VarDecl declares a variable: x, x = e or x \in S.
type VarDecl struct {
	Pos  Pos
	Name string
	Op   string // "", "=" or "\\in"
	Init tla.Expr
}

// Param is a parameter of a macro, procedure or archetype. Ref marks an
// MPCal resource parameter (ref x); Index is the number of [_] after it.
type Param struct {
	Pos   Pos
	Name  string
	Ref   bool
	Index int
	Init  tla.Expr // a PlusCal procedure parameter's default (rare)
}

// Macro is a PlusCal macro: its body is expanded at each call.
type Macro struct {
	Pos     Pos
	NamePos Pos
	Name    string
	Params  []*Param
	Body    []Stmt
}

// Procedure is a PlusCal procedure or an MPCal one (with ref parameters).
type Procedure struct {
	Pos     Pos
	NamePos Pos
	Name    string
	Params  []*Param
	Locals  []*VarDecl
	Body    []Stmt
}

// MappingMacro gives the read and write semantics of a mapped resource.
type MappingMacro struct {
	Pos      Pos
	NamePos  Pos
	Name     string
	ReadPos  Pos
	Read     []Stmt
	WritePos Pos
	Write    []Stmt
	EndRead  Pos // the closing brace of the read body
	EndWrite Pos
	HasRead  bool
	HasWrite bool
}

// Archetype is an MPCal process template.
type Archetype struct {
	Pos     Pos
	NamePos Pos
	Name    string
	Params  []*Param
	Locals  []*VarDecl
	Body    []Stmt
}

// Fairness of a process.
type Fairness int

// The fairness a process can be declared with.
const (
	Unfair     Fairness = iota
	WeakFair            // fair
	StrongFair          // fair+
)

func (f Fairness) String() string {
	switch f {
	case WeakFair:
		return "fair "
	case StrongFair:
		return "fair+ "
	}
	return ""
}

// Process is a PlusCal process, or (Instance set) an MPCal archetype
// instance.
type Process struct {
	Pos      Pos
	NamePos  Pos
	Fair     Fairness
	Name     string
	Op       string // "=" or "\\in"
	ID       tla.Expr
	Locals   []*VarDecl
	Body     []Stmt
	Instance *Instance
}

// Instance is "instance A(args) mapping ... via M ...".
type Instance struct {
	Pos       Pos
	NamePos   Pos
	Archetype string
	Args      []*Arg
	Mappings  []*Mapping
}

// Arg is an argument of an instance or a call: an expression, or "ref x"
// (with Index [_] markers in an instance).
type Arg struct {
	Pos   Pos
	Ref   bool
	Name  string   // the variable of a ref argument
	Index int      // [_] count of a ref argument
	Expr  tla.Expr // a non-ref argument
}

// Mapping is "mapping x[_] via M" or "mapping @2[_] via M".
type Mapping struct {
	Pos      Pos
	Name     string // the mapped variable, or "" with Position
	Position int    // 1-based argument position for @n
	Index    int
	Macro    string
	MacroPos Pos
}

// Stmt is a PlusCal/MPCal statement.
type Stmt interface {
	Position() Pos
	stmt()
}

// Labeled is "lbl: stmt"; Mod is "", "+" or "-" (lbl:+ and lbl:-).
type Labeled struct {
	Pos   Pos
	Label string
	Mod   string
	Stmt  Stmt
}

// Skip is skip.
type Skip struct{ Pos Pos }

// Selector is one step of an assignment's left-hand side: [e, ...] or .f.
type Selector struct {
	Index []tla.Expr
	Field string
}

// LHS is the target of an assignment: x, x[i], x.f, $variable ...
type LHS struct {
	Pos  Pos
	Name string
	Sels []Selector
}

// AssignPair is one "lhs := e" of an assignment.
type AssignPair struct {
	LHS LHS
	RHS tla.Expr
}

// Assign is lhs := e || lhs := e ...
type Assign struct {
	Pos   Pos
	Pairs []AssignPair
}

// If is if (c) {..} else {..}; Else may be empty.
type If struct {
	Pos  Pos
	Cond tla.Expr
	Then []Stmt
	Else []Stmt
}

// While is while (c) {..}.
type While struct {
	Pos  Pos
	Cond tla.Expr
	Body []Stmt
}

// Either is either {..} or {..} ...
type Either struct {
	Pos      Pos
	Branches [][]Stmt
}

// Binding is one "x \in S" or "x = e" of a with.
type Binding struct {
	Pos  Pos
	Name string
	Op   string // "=" or "\\in"
	Expr tla.Expr
}

// With is with (x \in S, y = e) {..}.
type With struct {
	Pos      Pos
	Bindings []Binding
	Body     []Stmt
}

// Await is await e (or when e).
type Await struct {
	Pos  Pos
	Cond tla.Expr
	When bool
}

// Goto is goto lbl.
type Goto struct {
	Pos    Pos
	Label  string
	LabPos Pos
}

// Call is call P(args).
type Call struct {
	Pos     Pos
	Proc    string
	Args    []*Arg
	NamePos Pos
}

// Return is return.
type Return struct{ Pos Pos }

// MacroCall is M(args).
type MacroCall struct {
	Pos  Pos
	Name string
	Args []tla.Expr
}

// Print is print e.
type Print struct {
	Pos  Pos
	Expr tla.Expr
}

// Assert is assert e.
type Assert struct {
	Pos  Pos
	Expr tla.Expr
}

// Yield is yield e (mapping macros only).
type Yield struct {
	Pos  Pos
	Expr tla.Expr
}

func (s *Labeled) Position() Pos   { return s.Pos }
func (s *Skip) Position() Pos      { return s.Pos }
func (s *Assign) Position() Pos    { return s.Pos }
func (s *If) Position() Pos        { return s.Pos }
func (s *While) Position() Pos     { return s.Pos }
func (s *Either) Position() Pos    { return s.Pos }
func (s *With) Position() Pos      { return s.Pos }
func (s *Await) Position() Pos     { return s.Pos }
func (s *Goto) Position() Pos      { return s.Pos }
func (s *Call) Position() Pos      { return s.Pos }
func (s *Return) Position() Pos    { return s.Pos }
func (s *MacroCall) Position() Pos { return s.Pos }
func (s *Print) Position() Pos     { return s.Pos }
func (s *Assert) Position() Pos    { return s.Pos }
func (s *Yield) Position() Pos     { return s.Pos }

func (*Labeled) stmt()   {}
func (*Skip) stmt()      {}
func (*Assign) stmt()    {}
func (*If) stmt()        {}
func (*While) stmt()     {}
func (*Either) stmt()    {}
func (*With) stmt()      {}
func (*Await) stmt()     {}
func (*Goto) stmt()      {}
func (*Call) stmt()      {}
func (*Return) stmt()    {}
func (*MacroCall) stmt() {}
func (*Print) stmt()     {}
func (*Assert) stmt()    {}
func (*Yield) stmt()     {}

// unlabel returns the statement under any label, and the label.
func unlabel(s Stmt) (Stmt, *Labeled) {
	if l, ok := s.(*Labeled); ok {
		return l.Stmt, l
	}
	return s, nil
}
