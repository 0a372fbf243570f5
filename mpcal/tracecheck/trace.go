package tracecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"strata/mpcal/tla"
)

// Event is one line of a trace file:
//
//	{"event":"acquire","action":"c(2)","state":{"pc[2]":"\"cs\"","hasLock[2]":"TRUE"}}
//
// Event names the event (for messages and the Mapping). Action, if not
// empty, is a TLA+ action of the model (an operator of Next, usually with
// its parameters from the event) that must take the step instead of the
// whole of Next. State maps state expressions of the model (a variable, or
// a variable indexed or with a field: pc["c1"], net[2].len) to the TLA+
// value each has after the step. An event named "init", and only on the
// first line, observes the initial state instead of a step. Writes is
// for the reader: what the step wrote to things outside the model's
// vocabulary (distsys records an archetype's resource writes there); the
// checker does not look at it.
type Event struct {
	Event  string            `json:"event"`
	Action string            `json:"action,omitempty"`
	State  map[string]string `json:"state,omitempty"`
	Writes map[string]string `json:"writes,omitempty"`

	// Line is the event's line in the trace file (from 1; blank lines
	// count). Set by Decode and ReadTrace, not part of the JSON.
	Line int `json:"-"`
}

// InitEvent is the name of an event that observes the initial state.
const InitEvent = "init"

// String is the event as its JSON line.
func (e Event) String() string {
	b, err := marshal(e)
	if err != nil {
		return fmt.Sprintf("event %q", e.Event)
	}
	return string(bytes.TrimSuffix(b, []byte("\n")))
}

// marshal is e's JSON line (with its newline), TLA+'s <, > and & left
// as they are.
func marshal(e Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Keys are the expressions the event observes, in order.
func (e Event) Keys() []string {
	ks := make([]string, 0, len(e.State))
	for k := range e.State {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ErrBadTrace is wrapped by every error about a trace line's form.
var ErrBadTrace = errors.New("malformed trace")

// DecodeLine decodes one trace line. It checks the line's form: one JSON
// object with a non-empty "event", no other fields than event, action and
// state, state values that are JSON strings; each key of state must
// parse as a TLA+ expression, each value as a TLA+ expression too, and the
// action (if any) as one. It does not check them against a model (Check
// does). The error wraps ErrBadTrace.
func DecodeLine(line []byte) (Event, error) {
	var e Event
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadTrace, err)
	}
	if d.More() {
		return Event{}, fmt.Errorf("%w: more than one JSON value on the line", ErrBadTrace)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return Event{}, fmt.Errorf("%w: text after the JSON object", ErrBadTrace)
	}
	if strings.TrimSpace(e.Event) == "" {
		return Event{}, fmt.Errorf("%w: no \"event\" name", ErrBadTrace)
	}
	if strings.ContainsAny(e.Event, "\n\r") {
		return Event{}, fmt.Errorf("%w: the event name %q holds a line break", ErrBadTrace, e.Event)
	}
	if e.Action != "" {
		if _, err := parseExpr(e.Action); err != nil {
			return Event{}, fmt.Errorf("%w: event %q: action %q: %v", ErrBadTrace, e.Event, e.Action, err)
		}
	}
	for _, k := range e.Keys() {
		if _, err := parseExpr(k); err != nil {
			return Event{}, fmt.Errorf("%w: event %q: observed expression %q: %v", ErrBadTrace, e.Event, k, err)
		}
		if _, err := parseExpr(e.State[k]); err != nil {
			return Event{}, fmt.Errorf("%w: event %q: value of %s: %q: %v", ErrBadTrace, e.Event, k, e.State[k], err)
		}
	}
	return e, nil
}

// parseExpr parses s as one TLA+ expression.
func parseExpr(s string) (tla.Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty")
	}
	x, err := tla.ParseExpr("trace", []byte(s))
	if err != nil {
		// The position is within s; the message names it.
		return nil, err
	}
	return x, nil
}

// ReadTrace reads a trace: one event a line, blank lines skipped. An
// error names the line.
func ReadTrace(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		e, err := DecodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if e.Event == InitEvent && len(out) > 0 {
			return nil, fmt.Errorf("line %d: %w: an %q event may only be the first", n, ErrBadTrace, InitEvent)
		}
		e.Line = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

// ReadTraceFile is ReadTrace on a file; errors name it.
func ReadTraceFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	evs, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

// Writer writes events as trace lines. Not safe for concurrent use.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes e as one line. After an error every Write returns it.
func (t *Writer) Write(e Event) error {
	if t.err != nil {
		return t.err
	}
	b, err := marshal(e)
	if err != nil {
		t.err = err
		return err
	}
	_, t.err = t.w.Write(b)
	return t.err
}

// Mapping says, per event name, which action of the model takes the
// step and which variables of the model the event may observe. It is
// read from a JSON object {"name": {"action": "...", "observes": ["v",
// ...]}, ...}. With a mapping, every event must be in it and observe
// only expressions over its variables; an event's own action overrides
// the mapping's.
type Mapping map[string]EventMap

// EventMap is one event's entry in a Mapping.
type EventMap struct {
	Action   string   `json:"action,omitempty"`
	Observes []string `json:"observes"`
}

// ReadMapping reads a Mapping from a JSON file.
func ReadMapping(path string) (Mapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Mapping
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: the trace mapping: %w", path, err)
	}
	for name, em := range m {
		if em.Action != "" {
			if _, err := parseExpr(em.Action); err != nil {
				return nil, fmt.Errorf("%s: event %q: action %q: %w", path, name, em.Action, err)
			}
		}
	}
	return m, nil
}
