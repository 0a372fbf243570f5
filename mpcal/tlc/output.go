package tlc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Outcome is TLC's verdict on a run.
type Outcome int

const (
	// Unknown: the output holds no verdict (TLC died, or was killed, or
	// the text is not TLC's -tool output).
	Unknown Outcome = iota
	// OK: the whole state space was explored and nothing was violated.
	OK
	// InvariantViolated: Result.Name is the invariant.
	InvariantViolated
	// PropertyViolated: a temporal or action property; Result.Name is it
	// when TLC says which.
	PropertyViolated
	// Deadlock: a reachable state has no successor (and deadlock checking
	// was on).
	Deadlock
	// AssertionFailed: an Assert (a PlusCal assert) was false;
	// Result.Message is its message.
	AssertionFailed
	// AssumptionViolated: an ASSUME is false for the configured constants.
	AssumptionViolated
	// Error: TLC could not check the spec: a parse or semantic error
	// (SANY's message), a configuration error, or an evaluation error in
	// a state (then with the trace to it). Result.Message says which.
	Error
)

var outcomeNames = [...]string{
	Unknown: "no verdict", OK: "no error found", InvariantViolated: "invariant violated",
	PropertyViolated: "property violated", Deadlock: "deadlock reached",
	AssertionFailed: "assertion failed", AssumptionViolated: "assumption violated",
	Error: "TLC error",
}

func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return "outcome(" + strconv.Itoa(int(o)) + ")"
	}
	return outcomeNames[o]
}

// Violation tells whether the outcome is a property of the spec failing
// (as opposed to OK, Unknown and Error).
func (o Outcome) Violation() bool {
	return o >= InvariantViolated && o <= AssumptionViolated
}

// Location is a range in a TLA+ module, as TLC reports it ("line 5, col 9
// to line 5, col 42 of module Counter"). Lines and columns count from 1.
type Location struct {
	Module                     string
	Line, Col, EndLine, EndCol int
}

// IsZero tells whether no location is known.
func (l Location) IsZero() bool { return l == Location{} }

func (l Location) String() string {
	if l.IsZero() {
		return ""
	}
	s := ""
	if l.Module != "" {
		s = "module " + l.Module + " "
	}
	switch {
	case l.EndLine == l.Line && l.EndCol == l.Col:
		return s + fmt.Sprintf("line %d, col %d", l.Line, l.Col)
	case l.EndLine == l.Line:
		return s + fmt.Sprintf("line %d, col %d-%d", l.Line, l.Col, l.EndCol)
	}
	return s + fmt.Sprintf("line %d, col %d to line %d, col %d", l.Line, l.Col, l.EndLine, l.EndCol)
}

// Step is one state of a trace and the action that led to it.
type Step struct {
	// Index is TLC's number for the state, 1 for the initial state.
	Index int
	// Action is the name of the action TLC says produced the state: an
	// operator of the spec's next-state relation, which for PlusCal is the
	// label of the step. "" for the initial state.
	Action string
	// Args is what TLC shows in parentheses after the action's name
	// ("self" in lbl(self)), without the parentheses; often "".
	Args string
	// Loc is where the action is defined (zero for the initial state).
	Loc Location
	// Vars are the state's variables in the order TLC printed them, and
	// State their values as TLC printed them; a value TLC wrapped over
	// several lines keeps its line breaks and indentation.
	Vars  []string
	State map[string]string
	// Stuttering: the behaviour stutters from here on (a liveness
	// counterexample); no state.
	Stuttering bool
	// BackTo > 0: this step goes back to state BackTo, closing the loop
	// of a liveness counterexample; no state.
	BackTo int
}

// Initial tells whether the step is the initial state.
func (s Step) Initial() bool { return s.Index == 1 && s.Action == "" && !s.Stuttering && s.BackTo == 0 }

// Progress is one of TLC's progress reports (and the report that the
// initial states are computed).
type Progress struct {
	// Depth is the depth (diameter) of the search so far: the length of
	// the longest shortest path from an initial state, counting states.
	Depth int
	// Generated counts states generated, Distinct the distinct ones
	// found, and Queue those left to explore.
	Generated, Distinct, Queue int64
}

// Result is what a TLC run found.
type Result struct {
	Outcome Outcome
	// Name is the violated invariant or property, when TLC names it.
	Name string
	// Message: the assertion's message, the false assumption, or TLC's
	// (or SANY's) error text.
	Message string
	// Pos is where the error is when TLC or SANY gives a position (a parse
	// error, a false assumption, an evaluation error).
	Pos Location
	// Generated, Distinct and Queue: states generated, distinct states
	// found, and states left on the queue when TLC stopped.
	Generated, Distinct, Queue int64
	// Depth: of the state graph explored (see Progress.Depth).
	Depth int
	// Wall: how long the run took: measured by Check around the JVM;
	// ParseOutput takes TLC's own "Finished in" figure.
	Wall time.Duration
	// Trace: for a violation (and for an evaluation error in a reachable
	// state), the states from an initial state to the bad one.
	Trace []Step
	// Warnings TLC printed.
	Warnings []string
	// ExitCode: the JVM's exit status (set by Check; TLC 2.18 uses 0 for
	// OK, 10-14 for violations, 75-77 and 150-153 for failures, 255 for
	// other errors).
	ExitCode int
}

// TLC -tool message codes (tlc2.output.EC) the decoder acts on.
const (
	ecGeneral              = 1000
	ecInitialState         = 2102
	ecNested               = 2103
	ecAssumptionFalse      = 2104
	ecInvariantInitial     = 2107
	ecPropertyInitial      = 2108
	ecInvariantViolated    = 2110
	ecActionProperty       = 2112
	ecDeadlock             = 2114
	ecTemporal             = 2116
	ecBehaviorUpTo         = 2121
	ecBackToState          = 2122
	ecAssertFailed         = 2132
	ecFinished             = 2186
	ecInitDone             = 2190
	ecSuccess              = 2193
	ecDepth                = 2194
	ecStats                = 2199
	ecProgress             = 2200
	ecState                = 2217
	ecStuttering           = 2218
	ecSANYEnd              = 2219
	ecSANYStart            = 2220
	ecCounterExample       = 2264
	ecParsingFailed        = 3002
	classError, classBug   = 1, 2
	classWarning           = 3
	msgStart, msgEnd, tail = "@!@!@STARTMSG ", "@!@!@ENDMSG ", " @!@!@"
)

var (
	progressRe  = regexp.MustCompile(`Progress\(([\d,]+)\)`)
	generatedRe = regexp.MustCompile(`([\d,]+) states? generated`)
	distinctRe  = regexp.MustCompile(`([\d,]+) distinct states? (?:found|generated)`)
	queueRe     = regexp.MustCompile(`([\d,]+) states? left on queue`)
	depthRe     = regexp.MustCompile(`depth of the complete state graph search is ([\d,]+)`)
	finishedRe  = regexp.MustCompile(`Finished in (.*?) at`)
	durationRe  = regexp.MustCompile(`(\d+)\s*(ms|h|min|s|d)`)
	nestedRe    = regexp.MustCompile(`Line (\d+), column (\d+) to line (\d+), column (\d+) in ([A-Za-z0-9_]+)`)
	locRe       = regexp.MustCompile(`line (\d+), col (\d+) to line (\d+), col (\d+) of module ([A-Za-z0-9_]+)`)
	invariantRe = regexp.MustCompile(`Invariant (\S+) is violated`)
	propertyRe  = regexp.MustCompile(`(?:Action property|Property|property) (\S+) (?:of module \S+ )?is violated`)
	headerRe    = regexp.MustCompile(`^(\d+): (.*)$`)
	stateVarRe  = regexp.MustCompile(`^([A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*) = `)
)

// message is one -tool report.
type message struct {
	code, class int
	lines       []string
}

// decoder turns TLC's -tool output, line by line, into a Result.
type decoder struct {
	res      Result
	cur      *message
	inSANY   bool
	sany     []string // SANY's untagged lines (its errors)
	progress func(Progress)
	depth    int      // deepest Progress(N) seen
	stats    bool     // the final statistics were read
	more     []string // further error text, for the Message of an Error
}

// ParseOutput decodes the output of `tlc2.TLC -tool` (TLC 2.18). It fails
// only when r does; output it does not understand gives a Result whose
// Outcome is Unknown or whose fields are partly empty, never a panic.
func ParseOutput(r io.Reader) (*Result, error) {
	d := &decoder{}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			d.line(line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d.result(), fmt.Errorf("reading TLC output: %w", err)
		}
	}
	return d.result(), nil
}

// line takes one line of output (with or without its newline).
func (d *decoder) line(s string) {
	s = strings.TrimRight(s, "\r\n")
	// A report marker normally starts a line; text printed by the spec
	// (Print, PrintT) without a newline may precede it.
	if i := strings.Index(s, msgStart); i >= 0 {
		if i > 0 {
			d.text(s[:i])
		}
		d.end()
		code, class, ok := parseStart(s[i+len(msgStart):])
		if ok {
			d.cur = &message{code: code, class: class}
		}
		return
	}
	if i := strings.Index(s, msgEnd); i >= 0 {
		if i > 0 {
			d.text(s[:i])
		}
		d.end()
		return
	}
	d.text(s)
}

// parseStart reads "code:class @!@!@".
func parseStart(s string) (code, class int, ok bool) {
	s, _, found := strings.Cut(s, tail)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found {
		return 0, 0, false
	}
	code, err1 := strconv.Atoi(a)
	class, err2 := strconv.Atoi(b)
	return code, class, err1 == nil && err2 == nil
}

func (d *decoder) text(s string) {
	if d.cur != nil {
		d.cur.lines = append(d.cur.lines, s)
		return
	}
	if d.inSANY {
		d.sany = append(d.sany, s)
	}
}

// end closes the report being read, if any, and acts on it.
func (d *decoder) end() {
	m := d.cur
	d.cur = nil
	if m == nil {
		return
	}
	body := strings.Join(m.lines, "\n")
	r := &d.res
	switch m.code {
	case ecSANYStart:
		d.inSANY = true
	case ecSANYEnd:
		d.inSANY = false
	case ecProgress:
		p := Progress{Generated: count(generatedRe, body), Distinct: count(distinctRe, body), Queue: count(queueRe, body)}
		p.Depth = int(count(progressRe, body))
		d.depth = max(d.depth, p.Depth)
		if !d.stats {
			r.Generated, r.Distinct, r.Queue = p.Generated, p.Distinct, p.Queue
		}
		d.report(p)
	case ecInitDone:
		n := count(distinctRe, body)
		if r.Distinct == 0 && !d.stats {
			r.Generated, r.Distinct, r.Queue = n, n, n
		}
		d.report(Progress{Depth: 1, Generated: n, Distinct: n, Queue: n})
	case ecStats:
		r.Generated, r.Distinct, r.Queue = count(generatedRe, body), count(distinctRe, body), count(queueRe, body)
		d.stats = true
	case ecDepth:
		r.Depth = int(count(depthRe, body))
	case ecFinished:
		if g := finishedRe.FindStringSubmatch(body); g != nil {
			r.Wall = parseElapsed(g[1])
		}
	case ecSuccess:
		d.verdict(OK, "", "")
	case ecInvariantViolated, ecInvariantInitial:
		name := ""
		if g := invariantRe.FindStringSubmatch(body); g != nil {
			name = strings.TrimSuffix(g[1], ".")
		}
		d.verdict(InvariantViolated, name, "")
		if m.code == ecInvariantInitial {
			d.initialState(m.lines)
		}
	case ecPropertyInitial, ecActionProperty, ecTemporal:
		name := ""
		if g := propertyRe.FindStringSubmatch(body); g != nil {
			name = strings.TrimSuffix(g[1], ".")
		}
		d.verdict(PropertyViolated, name, "")
		if m.code == ecPropertyInitial {
			d.initialState(m.lines)
		}
	case ecDeadlock:
		d.verdict(Deadlock, "", "")
	case ecAssertFailed:
		d.verdict(AssertionFailed, "", assertMessage(m.lines))
	case ecAssumptionFalse:
		d.verdict(AssumptionViolated, "", strings.TrimSpace(body))
		d.position(body)
	case ecBehaviorUpTo, ecCounterExample:
		r.Trace = nil // the trace follows
	case ecState, ecStuttering, ecBackToState:
		if st, ok := parseStep(m.lines); ok {
			if st.BackTo > 0 && len(r.Trace) > 0 {
				st.Index = r.Trace[len(r.Trace)-1].Index + 1
			}
			r.Trace = append(r.Trace, st)
		}
	case ecNested:
		// Where in the spec an evaluation error happened: context for an
		// error, noise after a failed assertion (it points at Assert).
		// The last position is the innermost expression.
		if r.Outcome == Error {
			d.more = append(d.more, strings.TrimSpace(body))
			if all := nestedRe.FindAllStringSubmatch(body, -1); len(all) > 0 && r.Pos.IsZero() {
				g := all[len(all)-1]
				r.Pos, _ = parseLoc(fmt.Sprintf("line %s, col %s to line %s, col %s of module %s", g[1], g[2], g[3], g[4], g[5]))
			}
		}
	case ecParsingFailed:
		msg := sanyMessage(d.sany)
		if msg == "" {
			msg = strings.TrimSpace(body)
		}
		d.verdict(Error, "", msg)
		d.position(msg)
	default:
		switch m.class {
		case classError, classBug:
			msg := strings.TrimSpace(body)
			if r.Outcome == Error {
				d.more = append(d.more, msg)
			} else {
				d.verdict(Error, "", msg)
			}
			d.position(msg)
		case classWarning:
			r.Warnings = append(r.Warnings, strings.TrimSpace(body))
		}
	}
}

// verdict records the run's outcome; the first one TLC gives stands.
func (d *decoder) verdict(o Outcome, name, msg string) {
	if d.res.Outcome != Unknown {
		return
	}
	d.res.Outcome, d.res.Name, d.res.Message = o, name, msg
}

// position records the first location found in an error's text.
func (d *decoder) position(s string) {
	if !d.res.Pos.IsZero() {
		return
	}
	if l, ok := parseLoc(s); ok {
		d.res.Pos = l
		return
	}
	if line, col := firstPos(s); line > 0 {
		d.res.Pos = Location{Line: line, Col: col, EndLine: line, EndCol: col}
	}
}

// initialState makes a one-state trace of the state printed after the
// first line of a "violated by the initial state" report.
func (d *decoder) initialState(lines []string) {
	if len(lines) < 2 {
		return
	}
	vars, state := parseState(lines[1:])
	d.res.Trace = []Step{{Index: 1, Vars: vars, State: state}}
}

func (d *decoder) report(p Progress) {
	if d.progress != nil {
		d.progress(p)
	}
}

// result finishes decoding (closing a report cut off by the end of the
// output) and returns a copy of the Result.
func (d *decoder) result() *Result {
	d.end()
	r := d.res
	if len(d.more) > 0 {
		r.Message = strings.Join(append([]string{r.Message}, d.more...), "\n")
		r.Message = strings.TrimPrefix(r.Message, "\n")
	}
	if r.Depth == 0 {
		r.Depth = d.depth
	}
	return &r
}

// count is the first number matched by re's group in s, commas removed; 0
// when there is none or it does not fit.
func count(re *regexp.Regexp, s string) int64 {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// parseElapsed reads TLC's "959ms", "06s", "02min 39s", "01h 02min".
func parseElapsed(s string) time.Duration {
	var total time.Duration
	for _, m := range durationRe.FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			continue
		}
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
		total += time.Duration(n) * unit
	}
	return total
}

// parseLoc reads the first "line L, col C to line L2, col C2 of module M".
func parseLoc(s string) (Location, bool) {
	m := locRe.FindStringSubmatch(s)
	if m == nil {
		return Location{}, false
	}
	var n [4]int
	for i := range n {
		v, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Location{}, false
		}
		n[i] = v
	}
	return Location{Module: m[5], Line: n[0], Col: n[1], EndLine: n[2], EndCol: n[3]}, true
}

// assertMessage is the second argument of a failed Assert: the report is
// "The first argument of Assert evaluated to FALSE; the second argument
// was:" followed by the value, a string in quotes for PlusCal's asserts.
func assertMessage(lines []string) string {
	var val []string
	for i, l := range lines {
		if strings.Contains(l, "the second argument was") {
			val = lines[i+1:]
			break
		}
	}
	if val == nil {
		return strings.TrimSpace(strings.Join(lines, "\n"))
	}
	s := strings.TrimSpace(strings.Join(val, "\n"))
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return u
	}
	return s
}

// parseStep reads a state report: a header "N: <Action line ... of module
// M>", "N: <Initial predicate>", "N: Stuttering" or "N: Back to state:
// <...>", then the state's variables.
func parseStep(lines []string) (Step, bool) {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return Step{}, false
	}
	m := headerRe.FindStringSubmatch(strings.TrimSpace(lines[0]))
	if m == nil {
		return Step{}, false
	}
	idx, err := strconv.Atoi(m[1])
	if err != nil || idx < 0 {
		return Step{}, false
	}
	st := Step{Index: idx}
	head := strings.TrimSpace(m[2])
	switch {
	case strings.HasPrefix(head, "Stuttering"):
		st.Stuttering = true
		return st, true
	case strings.HasPrefix(head, "Back to state"):
		// "1: Back to state: <Next ...>": the loop returns to state 1.
		st.BackTo, st.Index = idx, 0 // numbered after the trace's last state
		st.Action, st.Args, st.Loc = parseAction(strings.TrimSpace(strings.TrimPrefix(head, "Back to state:")))
		return st, true
	}
	st.Action, st.Args, st.Loc = parseAction(head)
	st.Vars, st.State = parseState(lines[1:])
	return st, true
}

// parseAction reads "<Name(args) line L, col C to ... of module M>" and
// "<Initial predicate>" (giving "").
func parseAction(s string) (name, args string, loc Location) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">")
	if s == "Initial predicate" || s == "" {
		return "", "", Location{}
	}
	loc, _ = parseLoc(s)
	if i := strings.Index(s, " line "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
		return s[:i], s[i+1 : len(s)-1], loc
	}
	return s, "", loc
}

// parseState reads a state as TLC prints it: "/\ name = value" conjuncts,
// or a bare "name = value" when the spec has one variable. A value that
// does not fit on a line continues on the following, indented, lines.
func parseState(lines []string) ([]string, map[string]string) {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	var vars []string
	state := map[string]string{}
	name := ""
	var val []string
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := state[name]; !dup {
			vars = append(vars, name)
		}
		state[name] = strings.Join(val, "\n")
	}
	for i, l := range lines {
		rest, conj := strings.CutPrefix(l, `/\ `)
		if conj || (i == 0 && name == "") {
			if m := stateVarRe.FindStringSubmatch(rest); m != nil {
				flush()
				name, val = m[1], []string{rest[len(m[0]):]}
				continue
			}
		}
		if name != "" {
			val = append(val, l)
		}
	}
	flush()
	if len(vars) == 0 {
		return nil, nil
	}
	return vars, state
}
