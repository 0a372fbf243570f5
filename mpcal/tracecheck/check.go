package tracecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"strata/mpcal"
	"strata/mpcal/tla"
	"strata/mpcal/tlc"
)

// Options say how to check a trace.
type Options struct {
	// Config is the model's TLC configuration (the text of its .cfg);
	// only its CONSTANT and CONSTANTS sections are kept.
	Config []byte
	// Mapping, if not nil, maps event names to actions and observed
	// variables (see Mapping).
	Mapping Mapping
	// Init and Next name the model's initial predicate and next-state
	// relation; "" means Init and Next (as PlusCal's translation names
	// them).
	Init, Next string
	// Workers is TLC's number of worker threads; 0 means 1.
	Workers int
	// Dir, if not empty, is the scratch directory to use (and keep);
	// otherwise a temporary one is made and removed.
	Dir string
	// Output, if set, receives what TLC prints.
	Output io.Writer
}

// Result is a trace check's verdict.
type Result struct {
	// Accepted: every event is a step of the model.
	Accepted bool
	// Events is the number of events in the trace.
	Events int
	// Index (from 1) and Event: when not Accepted, the first event no
	// step of the model allows after a behaviour of the events before it.
	Index int
	Event Event
	// TLC is TLC's result on the trace spec.
	TLC *tlc.Result
}

// String is the one-line verdict.
func (r *Result) String() string {
	if r.Accepted {
		return fmt.Sprintf("trace accepted (%d events)", r.Events)
	}
	return fmt.Sprintf("trace rejected at event %d of %d (line %d): no step of the model allows %s", r.Index, r.Events, r.Event.Line, r.Event)
}

// Names in the trace spec; the model must not define them.
const (
	posVar     = "tvPos"
	eventsDef  = "tvEvents"
	unfinished = "tvUnfinished"
	traceInit  = "tvInit"
	traceNext  = "tvNext"
)

// Check validates events against the model in modelPath: a TLA+ module,
// or a module with an MPCal or PlusCal algorithm (compiled and translated
// first, as `strata mpcal check` does). The modules beside modelPath are
// copied with it, so it may extend or instantiate them. A trace that is
// not a behaviour of the model is a Result with Accepted false, not an
// error; an error means the trace or the model could not be checked (a
// bad trace line for this model, TLC's error about the spec, or TLC not
// installed).
func Check(ctx context.Context, modelPath string, events []Event, opt Options) (*Result, error) {
	dir := opt.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "strata-trace-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	spec, err := prepareModel(ctx, modelPath, dir)
	if err != nil {
		return nil, err
	}
	model := strings.TrimSuffix(filepath.Base(spec), ".tla")
	src, err := os.ReadFile(spec)
	if err != nil {
		return nil, err
	}
	vars := modelVariables(spec, src)
	init, next := opt.Init, opt.Next
	if init == "" {
		init = "Init"
	}
	if next == "" {
		next = "Next"
	}
	text, err := traceSpec(model, init, next, events, opt.Mapping, vars)
	if err != nil {
		return nil, err
	}
	name := model + "_trace"
	tspec := filepath.Join(dir, name+".tla")
	if err := os.WriteFile(tspec, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cfg := constantsOnly(string(opt.Config)) +
		fmt.Sprintf("INIT %s\nNEXT %s\nINVARIANT %s\n", traceInit, traceNext, unfinished)
	if err := os.WriteFile(filepath.Join(dir, name+".cfg"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	res, err := tlc.Check(ctx, tlc.Options{Spec: tspec, Workers: opt.Workers, NoDeadlock: true, Output: opt.Output})
	if err != nil {
		return nil, err
	}
	out := &Result{Events: len(events), TLC: res}
	initEv := len(events) > 0 && events[0].Event == InitEvent
	switch {
	case res.Outcome == tlc.InvariantViolated && res.Name == unfinished:
		out.Accepted = true
		return out, nil
	case res.Outcome == tlc.OK:
		// Every state at depth d has tvPos = d (d+1 after an init
		// event): the deepest one matched the events before tvPos.
		idx := res.Depth
		if initEv {
			idx++
		}
		if res.Distinct == 0 {
			idx = 1 // not even the initial state
		}
		if idx < 1 || idx > len(events) {
			return nil, fmt.Errorf("trace check: TLC ended without reaching the end of the trace, at depth %d of %d events: cannot tell the event", res.Depth, len(events))
		}
		out.Index, out.Event = idx, events[idx-1]
		return out, nil
	}
	msg := res.Message
	if res.Name != "" {
		msg = res.Name + ": " + msg
	}
	return nil, fmt.Errorf("trace check of %s: TLC: %s: %s", modelPath, res.Outcome, strings.TrimSpace(msg))
}

// prepareModel writes the model into dir as a TLA+ module TLC can check
// (translating an algorithm) with the modules beside it, and returns its
// path there.
func prepareModel(ctx context.Context, modelPath, dir string) (string, error) {
	src, err := os.ReadFile(modelPath)
	if err != nil {
		return "", err
	}
	// The modules beside it: EXTENDS and INSTANCE find them in dir.
	siblings, _ := filepath.Glob(filepath.Join(filepath.Dir(modelPath), "*.tla"))
	for _, s := range siblings {
		if filepath.Base(s) == filepath.Base(modelPath) {
			continue
		}
		if b, err := os.ReadFile(s); err == nil {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(s)), b, 0o644); err != nil {
				return "", err
			}
		}
	}
	f, err := mpcal.ParseFile(modelPath, src)
	if errors.Is(err, mpcal.ErrNoAlgorithm) {
		spec := filepath.Join(dir, filepath.Base(modelPath))
		return spec, os.WriteFile(spec, src, 0o644)
	}
	if err != nil {
		return "", err
	}
	spec, _, err := mpcal.Translate(ctx, f, dir)
	return spec, err
}

// modelVariables returns the variables the module declares, or nil when
// Strata's parser cannot read it (TLC then judges the trace's names).
func modelVariables(path string, src []byte) map[string]bool {
	m, err := tla.ParseModule(path, src)
	if err != nil {
		return nil
	}
	vars := map[string]bool{}
	for _, u := range m.Units {
		if d, ok := u.(*tla.VarDecl); ok {
			for _, n := range d.Names {
				vars[n.Name] = true
			}
		}
	}
	return vars
}

// traceSpec writes the trace module. Events become a sequence of
// records, built so that TLC's work per event does not grow with the
// trace:
//
//   - field k says which action takes the step: 0 for Next, else a
//     template. An action Op(c1, ..., cn) with constant arguments (no
//     model variable in them) is the template "Op with n arguments", its
//     arguments in field x; any other action is a template of its own.
//   - an observed key var[c1][c2].f (constant indices and fields) is filed
//     under its variable: field vJ (J numbers the variables) holds the
//     pairs <<path, value>> of the event's observations of that variable,
//     checked by following the path in var'; any other key gets a field
//     oK of its own.
func traceSpec(model, init, next string, events []Event, m Mapping, vars map[string]bool) (string, error) {
	keyIndex := map[string]int{} // other keys
	var keys []string
	varIndex := map[string]int{} // variables observed along paths
	var varNames []string
	tmplIndex := map[string]int{} // action templates
	var tmpls []string            // their TLA+ (with e.x[i] for the arguments)
	var recs []string
	constant := func(x tla.Expr) bool {
		if vars == nil {
			return false
		}
		for n := range tla.FreeNames(x) {
			if vars[n] {
				return false
			}
		}
		return true
	}
	for i, e := range events {
		where := fmt.Sprintf("event %d (line %d, %q)", i+1, e.Line, e.Event)
		action := e.Action
		var allowed map[string]bool
		if m != nil {
			em, ok := m[e.Event]
			if !ok {
				return "", fmt.Errorf("%s: %w: the event is not in the mapping", where, ErrBadTrace)
			}
			if action == "" {
				action = em.Action
			}
			allowed = map[string]bool{}
			for _, v := range em.Observes {
				allowed[v] = true
			}
		}
		if e.Event == InitEvent {
			if i != 0 {
				return "", fmt.Errorf("%s: %w: an %q event may only be the first", where, ErrBadTrace, InitEvent)
			}
			action = ""
		}
		var fields []string
		if action != "" {
			x, err := parseExpr(action)
			if err != nil {
				return "", fmt.Errorf("%s: %w: action %q: %v", where, ErrBadTrace, action, err)
			}
			tmpl := tla.FormatExpr(x)
			var args []string
			if app, ok := x.(*tla.OpApp); ok && len(app.Prefix) == 0 && len(app.Args) > 0 {
				var ps []string
				for j, a := range app.Args {
					if !constant(a) {
						ps = nil
						break
					}
					args = append(args, tla.FormatExpr(a))
					ps = append(ps, fmt.Sprintf("e.x[%d]", j+1))
				}
				if ps != nil {
					tmpl = app.Name + "(" + strings.Join(ps, ", ") + ")"
				} else {
					args = nil
				}
			}
			k, ok := tmplIndex[tmpl]
			if !ok {
				tmpls = append(tmpls, tmpl)
				k = len(tmpls)
				tmplIndex[tmpl] = k
			}
			fields = append(fields, "k |-> "+strconv.Itoa(k))
			if args != nil {
				fields = append(fields, "x |-> <<"+strings.Join(args, ", ")+">>")
			}
		} else {
			fields = append(fields, "k |-> 0")
		}
		byVar := map[int][]string{}
		for _, key := range e.Keys() {
			kx, err := parseExpr(key)
			if err != nil {
				return "", fmt.Errorf("%s: %w: observed expression %q: %v", where, ErrBadTrace, key, err)
			}
			if vars != nil {
				var used []string
				for n := range tla.FreeNames(kx) {
					if vars[n] {
						used = append(used, n)
					}
				}
				if len(used) == 0 {
					return "", fmt.Errorf("%s: %w: %q observes no variable of %s", where, ErrBadTrace, key, model)
				}
				if allowed != nil {
					for _, n := range used {
						if !allowed[n] {
							return "", fmt.Errorf("%s: %w: %q observes %s, which the mapping does not list for the event", where, ErrBadTrace, key, n)
						}
					}
				}
			}
			vx, err := parseExpr(e.State[key])
			if err != nil {
				return "", fmt.Errorf("%s: %w: value of %s: %v", where, ErrBadTrace, key, err)
			}
			val := tla.FormatExpr(vx)
			if v, path, ok := varPath(kx, vars, constant); ok {
				j, seen := varIndex[v]
				if !seen {
					varNames = append(varNames, v)
					j = len(varNames)
					varIndex[v] = j
				}
				byVar[j] = append(byVar[j], fmt.Sprintf("<< <<%s>>, (%s) >>", strings.Join(path, ", "), val))
				continue
			}
			nk := tla.FormatExpr(kx)
			k, ok := keyIndex[nk]
			if !ok {
				keys = append(keys, nk)
				k = len(keys)
				keyIndex[nk] = k
			}
			fields = append(fields, fmt.Sprintf("o%d |-> (%s)", k, val))
		}
		js := make([]int, 0, len(byVar))
		for j := range byVar {
			js = append(js, j)
		}
		sort.Ints(js)
		for _, j := range js {
			fields = append(fields, fmt.Sprintf("v%d |-> << %s >>", j, strings.Join(byVar[j], ", ")))
		}
		recs = append(recs, "["+strings.Join(fields, ", ")+"]")
	}

	var b strings.Builder
	fmt.Fprintf(&b, "---- MODULE %s_trace ----\n", model)
	b.WriteString("\\* Generated by strata/mpcal/tracecheck: the trace as a constraint on the model's behaviours.\n")
	// The model and Naturals (for tvPos + 1) only: DOMAIN rather than
	// Len, so that Sequences' and TLC's names cannot clash with the
	// model's.
	fmt.Fprintf(&b, "EXTENDS %s, Naturals\n\n", model)
	fmt.Fprintf(&b, "VARIABLE %s  \\* the index of the next event\n\n", posVar)
	fmt.Fprintf(&b, "%s == <<\n", eventsDef)
	for i, r := range recs {
		sep := ","
		if i == len(recs)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  %s%s\n", r, sep)
	}
	b.WriteString(">>\n\n")
	// tvGet(f, p, i): f applied to p[i], p[i+1], ...
	b.WriteString("RECURSIVE tvGet(_, _, _)\ntvGet(f, p, i) == IF i \\in DOMAIN p THEN tvGet(f[p[i]], p, i + 1) ELSE f\n\n")
	var obs, obsInit []string
	for j, v := range varNames {
		fmt.Fprintf(&b, "tvVar%d(e) == (\"v%d\" \\in DOMAIN e) => \\A i \\in DOMAIN e.v%d : tvGet(%s', e.v%d[i][1], 1) = e.v%d[i][2]\n", j+1, j+1, j+1, v, j+1, j+1)
		fmt.Fprintf(&b, "tvVarInit%d(e) == (\"v%d\" \\in DOMAIN e) => \\A i \\in DOMAIN e.v%d : tvGet(%s, e.v%d[i][1], 1) = e.v%d[i][2]\n", j+1, j+1, j+1, v, j+1, j+1)
		obs = append(obs, fmt.Sprintf("tvVar%d(e)", j+1))
		obsInit = append(obsInit, fmt.Sprintf("tvVarInit%d(e)", j+1))
	}
	for i, k := range keys {
		fmt.Fprintf(&b, "tvObs%d(e) == (\"o%d\" \\in DOMAIN e) => ((%s)' = e.o%d)\n", i+1, i+1, k, i+1)
		fmt.Fprintf(&b, "tvObsInit%d(e) == (\"o%d\" \\in DOMAIN e) => ((%s) = e.o%d)\n", i+1, i+1, k, i+1)
		obs = append(obs, fmt.Sprintf("tvObs%d(e)", i+1))
		obsInit = append(obsInit, fmt.Sprintf("tvObsInit%d(e)", i+1))
	}
	conj := func(cs []string) string {
		if len(cs) == 0 {
			return "TRUE"
		}
		return strings.Join(cs, " /\\ ")
	}
	b.WriteString("\n")
	if len(tmpls) == 0 {
		fmt.Fprintf(&b, "tvAct(e) == %s\n", next)
	} else {
		fmt.Fprintf(&b, "tvAct(e) ==\n  CASE e.k = 0 -> %s\n", next)
		for i, a := range tmpls {
			fmt.Fprintf(&b, "    [] e.k = %d -> (%s)\n", i+1, a)
		}
	}
	b.WriteString("\n")
	if len(events) > 0 && events[0].Event == InitEvent {
		fmt.Fprintf(&b, "%s ==\n  /\\ %s\n  /\\ LET e == %s[1] IN %s\n  /\\ %s = 2\n\n", traceInit, init, eventsDef, conj(obsInit), posVar)
	} else {
		fmt.Fprintf(&b, "%s ==\n  /\\ %s\n  /\\ %s = 1\n\n", traceInit, init, posVar)
	}
	fmt.Fprintf(&b, "%s ==\n  /\\ %s \\in DOMAIN %s\n  /\\ LET e == %s[%s] IN tvAct(e) /\\ %s\n  /\\ %s' = %s + 1\n\n",
		traceNext, posVar, eventsDef, eventsDef, posVar, conj(obs), posVar, posVar)
	fmt.Fprintf(&b, "\\* Violated when the whole trace was matched: the trace is accepted.\n%s == %s \\in DOMAIN %s\n", unfinished, posVar, eventsDef)
	b.WriteString("====\n")
	return b.String(), nil
}

// varPath splits an observed key of the form v[c1][c2, c3].f (a model
// variable followed by constant indices and fields) into v and the path
// (c1, <<c2, c3>>, "f") as TLA+ texts. ok is false for any other key.
func varPath(x tla.Expr, vars map[string]bool, constant func(tla.Expr) bool) (v string, path []string, ok bool) {
	switch x := x.(type) {
	case *tla.Ident:
		return x.Name, nil, vars[x.Name]
	case *tla.OpApp:
		if len(x.Prefix) == 0 && len(x.Args) == 0 {
			return x.Name, nil, vars[x.Name]
		}
	case *tla.FuncApp:
		v, path, ok := varPath(x.Func, vars, constant)
		if !ok {
			return "", nil, false
		}
		var args []string
		for _, a := range x.Args {
			if !constant(a) {
				return "", nil, false
			}
			args = append(args, tla.FormatExpr(a))
		}
		if len(args) == 1 {
			return v, append(path, args[0]), true
		}
		return v, append(path, "<<"+strings.Join(args, ", ")+">>"), true
	case *tla.FieldAccess:
		v, path, ok := varPath(x.X, vars, constant)
		if !ok {
			return "", nil, false
		}
		return v, append(path, strconv.Quote(x.Field)), true
	}
	return "", nil, false
}

// constantsOnly returns the CONSTANT and CONSTANTS sections of a TLC
// configuration (comments dropped), for the trace spec's configuration:
// the model's INIT, NEXT, SPECIFICATION, invariants, properties,
// constraints, symmetry and view do not apply to it.
func constantsOnly(cfg string) string {
	var b strings.Builder
	keep := false
	for _, t := range cfgTokens(cfg) {
		switch {
		case cfgKeywords[t]:
			keep = t == "CONSTANT" || t == "CONSTANTS"
			if keep {
				b.WriteString("CONSTANTS\n")
			}
		case keep:
			// TLC's configuration parser reads tokens: the layout does not
			// matter.
			b.WriteString(t + "\n")
		}
	}
	return b.String()
}

var cfgKeywords = map[string]bool{
	"CONSTANT": true, "CONSTANTS": true, "INIT": true, "NEXT": true, "SPECIFICATION": true,
	"INVARIANT": true, "INVARIANTS": true, "PROPERTY": true, "PROPERTIES": true,
	"CONSTRAINT": true, "CONSTRAINTS": true, "ACTION_CONSTRAINT": true, "ACTION_CONSTRAINTS": true,
	"SYMMETRY": true, "VIEW": true, "CHECK_DEADLOCK": true, "POSTCONDITION": true, "ALIAS": true,
}

// cfgTokens splits a TLC configuration into tokens: strings ("...") stay
// whole, \* comments and (* *) comments are dropped.
func cfgTokens(cfg string) []string {
	var toks []string
	i := 0
	for i < len(cfg) {
		c := cfg[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(cfg[i:], `\*`):
			for i < len(cfg) && cfg[i] != '\n' {
				i++
			}
		case strings.HasPrefix(cfg[i:], "(*"):
			end := strings.Index(cfg[i+2:], "*)")
			if end < 0 {
				return toks
			}
			i += 2 + end + 2
		case c == '"':
			j := i + 1
			for j < len(cfg) && cfg[j] != '"' {
				if cfg[j] == '\\' {
					j++
				}
				j++
			}
			if j > len(cfg) {
				j = len(cfg) - 1
			}
			toks = append(toks, cfg[i:j+1])
			i = j + 1
		default:
			j := i
			for j < len(cfg) && !strings.ContainsRune(" \t\n\r\"", rune(cfg[j])) &&
				!strings.HasPrefix(cfg[j:], `\*`) && !strings.HasPrefix(cfg[j:], "(*") {
				j++
			}
			toks = append(toks, cfg[i:j])
			i = j
		}
	}
	return toks
}
