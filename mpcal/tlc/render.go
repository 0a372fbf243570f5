package tlc

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Mapper gives the source line to show with a step of a trace, or "" for
// none. Render calls it for every step but the initial state.
type Mapper func(step Step) (srcLine string)

// Render prints r for people: the verdict, a table of the figures, and for
// a counterexample its numbered steps, each with its action, where TLC
// says the action is defined, the line mapper gives (mapper may be nil),
// and the variables: all of them in the first state, then only those that
// changed.
func Render(w io.Writer, r *Result, mapper Mapper) error {
	ew := &errWriter{w: w}
	ew.printf("TLC: %s\n", headline(r))
	if r.Message != "" && r.Outcome != AssertionFailed {
		for _, l := range strings.Split(r.Message, "\n") {
			ew.printf("  %s\n", l)
		}
	}
	rows := [][2]string{
		{"states generated", group(r.Generated)},
		{"distinct states", group(r.Distinct)},
	}
	if r.Queue > 0 {
		rows = append(rows, [2]string{"left on queue", group(r.Queue)})
	}
	rows = append(rows, [2]string{"depth", strconv.Itoa(r.Depth)}, [2]string{"time", r.Wall.Round(10 * time.Millisecond).String()})
	width := 0
	for _, row := range rows {
		width = max(width, len(row[1]))
	}
	for _, row := range rows {
		ew.printf("  %-16s %*s\n", row[0], width, row[1])
	}
	for _, wn := range r.Warnings {
		ew.printf("warning: %s\n", strings.ReplaceAll(wn, "\n", "\n  "))
	}
	if len(r.Trace) > 0 {
		renderTrace(ew, r.Trace, mapper)
		last := r.Trace[len(r.Trace)-1]
		switch {
		case last.Stuttering || last.BackTo > 0:
		case r.Outcome == Deadlock:
			ew.printf("State %d has no successor.\n", last.Index)
		case r.Outcome == AssertionFailed:
			ew.printf("The assertion fails in a step from state %d.\n", last.Index)
		case r.Outcome == Error:
			ew.printf("The error happens in a step from state %d.\n", last.Index)
		}
	}
	return ew.err
}

// headline is the verdict in words.
func headline(r *Result) string {
	switch r.Outcome {
	case InvariantViolated:
		if r.Name != "" {
			return "invariant " + r.Name + " violated"
		}
	case PropertyViolated:
		if r.Name != "" {
			return "property " + r.Name + " violated"
		}
	case AssertionFailed:
		if r.Message != "" {
			return "assertion failed: " + r.Message
		}
	case Error:
		if !r.Pos.IsZero() {
			return "error at " + r.Pos.String()
		}
	}
	return r.Outcome.String()
}

func renderTrace(ew *errWriter, trace []Step, mapper Mapper) {
	if len(trace) == 1 {
		ew.printf("\nCounterexample, 1 state:\n")
	} else {
		ew.printf("\nCounterexample, %d states (after the first, only the variables that change):\n", len(trace))
	}
	width := len(strconv.Itoa(trace[len(trace)-1].Index))
	prev := map[string]string{}
	for _, st := range trace {
		num := fmt.Sprintf("%*d.", width, st.Index)
		pad := strings.Repeat(" ", width+4)
		switch {
		case st.Stuttering:
			ew.printf("  %s stuttering forever\n", num)
			continue
		case st.BackTo > 0:
			ew.printf("  %s %s, back to state %d\n", num, actionText(st), st.BackTo)
			if src := mapStep(mapper, st); src != "" {
				ew.printf("%s  %s\n", pad, src)
			}
			continue
		case st.Action == "":
			ew.printf("  %s initial state\n", num)
		default:
			ew.printf("  %s %s\n", num, actionText(st))
			if src := mapStep(mapper, st); src != "" {
				ew.printf("%s  %s\n", pad, src)
			}
		}
		for _, v := range st.Vars {
			val := st.State[v]
			if old, ok := prev[v]; ok && old == val {
				continue
			}
			prev[v] = val
			// TLC indents a wrapped value's lines from the value's start.
			indent := "\n" + pad + "  " + strings.Repeat(" ", len(v)+3)
			ew.printf("%s  %s = %s\n", pad, v, strings.ReplaceAll(val, "\n", indent))
		}
	}
}

// actionText is "Name(args) (module M line ...)".
func actionText(st Step) string {
	s := st.Action
	if st.Args != "" {
		s += "(" + st.Args + ")"
	}
	if !st.Loc.IsZero() {
		s += "  (" + st.Loc.String() + ")"
	}
	return s
}

// mapStep calls the mapper, if any, keeping a panic in it from taking the
// report down with it.
func mapStep(mapper Mapper, st Step) (src string) {
	if mapper == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			src = ""
		}
	}()
	return strings.TrimSpace(mapper(st))
}

// group writes n with thousands separators, as TLC does.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// errWriter remembers the first write error and writes nothing after it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}

// LabelMapper returns a Mapper for a spec holding a PlusCal algorithm
// (the text of its .tla file): TLC names each step of a translated
// algorithm after its label (procedures' and processes' labels included),
// and the mapper gives "line N: " and the source line where that label is
// defined inside the --algorithm or --fair algorithm block, with the
// next line appended when the label stands alone on its line. Steps whose
// action is not a label of the algorithm (Terminating, labels the
// translator added) map to "".
func LabelMapper(tlaText []byte) Mapper {
	labels := plusCalLabels(string(tlaText))
	lines := strings.Split(string(tlaText), "\n")
	return func(st Step) string {
		n, ok := labels[st.Action]
		if !ok || n < 1 || n > len(lines) {
			return ""
		}
		text := strings.TrimSpace(lines[n-1])
		if end, ok := afterLabel(text, st.Action); ok && strings.TrimSpace(text[end:]) == "" {
			for _, next := range lines[n:] {
				if next = strings.TrimSpace(next); next != "" {
					text += " " + next
					break
				}
			}
		}
		return fmt.Sprintf("line %d: %s", n, text)
	}
}

// afterLabel is the offset in text just after the definition of label l
// (the name as a whole word, then a colon).
func afterLabel(text, l string) (int, bool) {
	for i := 0; l != "" && i < len(text); {
		j := strings.Index(text[i:], l)
		if j < 0 {
			return 0, false
		}
		j += i
		k := j + len(l)
		if (j == 0 || !isIdentByte(text[j-1])) && (k == len(text) || !isIdentByte(text[k])) {
			rest := strings.TrimLeft(text[k:], " \t")
			if strings.HasPrefix(rest, ":") {
				return len(text) - len(rest) + 1, true
			}
		}
		i = j + 1
	}
	return 0, false
}

// labelFollows are the tokens after which an identifier and a colon are a
// PlusCal label (and not, say, the bound of \E x \in S : P).
var labelFollows = map[string]bool{
	"": true, ";": true, "{": true, "}": true, ")": true,
	"begin": true, "do": true, "then": true, "else": true, "or": true, "either": true,
}

// plusCalLabels maps the labels defined in the text's PlusCal algorithm
// blocks to their line numbers (the first definition of each).
func plusCalLabels(src string) map[string]int {
	labels := map[string]int{}
	line, counted := 1, 0 // the line number at offset counted
	for off := 0; off < len(src); {
		i := algorithmStart(src[off:])
		if i < 0 {
			break
		}
		start := off + i
		end := commentEnd(src, start)
		line += strings.Count(src[counted:start], "\n")
		counted = start
		toks := plusCalTokens(src[start:end], line)
		for k := 1; k+1 < len(toks); k++ {
			t := toks[k]
			if !t.ident || toks[k+1].text != ":" {
				continue
			}
			if !labelFollows[toks[k-1].text] {
				continue
			}
			if _, dup := labels[t.text]; !dup {
				labels[t.text] = t.line
			}
		}
		off = end
	}
	return labels
}

// algorithmStart finds "--algorithm" or "--fair algorithm".
func algorithmStart(s string) int {
	a := strings.Index(s, "--algorithm")
	f := strings.Index(s, "--fair")
	switch {
	case f >= 0 && strings.HasPrefix(strings.TrimLeft(s[f+len("--fair"):], " \t\r\n"), "algorithm") && (a < 0 || f < a):
		return f
	default:
		return a
	}
}

// commentEnd is the offset of the end of the (* comment that contains
// offset start (the algorithm), counting nested comments, or len(src).
func commentEnd(src string, start int) int {
	depth := 1
	for i := start; i+1 < len(src); i++ {
		switch src[i : i+2] {
		case "(*":
			depth++
			i++
		case "*)":
			depth--
			if depth == 0 {
				return i
			}
			i++
		}
	}
	return len(src)
}

type plusCalToken struct {
	text  string
	line  int
	ident bool
}

// plusCalTokens splits an algorithm's text into identifiers and symbols,
// skipping strings and comments. ":=" and "::" are single tokens, so a
// ":" token is a label's colon or an expression's.
func plusCalTokens(s string, line int) []plusCalToken {
	var toks []plusCalToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], `\*`):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "(*"):
			depth := 0
			for i < len(s) {
				if strings.HasPrefix(s[i:], "(*") {
					depth++
					i += 2
				} else if strings.HasPrefix(s[i:], "*)") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					if s[i] == '\n' {
						line++
					}
					i++
				}
			}
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i++
			toks = append(toks, plusCalToken{text: `""`, line: line})
		case isIdentByte(c):
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			toks = append(toks, plusCalToken{text: s[i:j], line: line, ident: true})
			i = j
		case strings.HasPrefix(s[i:], ":=") || strings.HasPrefix(s[i:], "::"):
			toks = append(toks, plusCalToken{text: s[i : i+2], line: line})
			i += 2
		default:
			toks = append(toks, plusCalToken{text: s[i : i+1], line: line})
			i++
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
