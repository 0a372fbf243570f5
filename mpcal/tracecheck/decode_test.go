package tracecheck

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeLineErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`not json`, "invalid character"},
		{`{"state":{"x":"1"}}`, `no "event" name`},
		{`{"event":"  "}`, `no "event" name`},
		{`{"event":"e","when":3}`, `unknown field "when"`},
		{`{"event":"e","state":{"x":1}}`, "cannot unmarshal number"},
		{`{"event":"e","state":{"x":"1 +"}}`, "value of x"},
		{`{"event":"e","state":{"x":""}}`, "value of x"},
		{`{"event":"e","state":{"x[":"1"}}`, `observed expression "x["`},
		{`{"event":"e","state":{"x":"1) /\\ (TRUE"}}`, "value of x"},
		{`{"event":"e","action":"A(("}`, "action"},
		{`{"event":"e"} {"event":"f"}`, "more than one JSON value"},
		{`{"event":"e"} x`, "more than one JSON value"},
		{`[1,2]`, "cannot unmarshal array"},
		{`{"event":"a\nb"}`, "line break"},
	} {
		_, err := DecodeLine([]byte(c.line))
		if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.line, err, c.want)
		}
	}
}

func TestReadTraceNamesLine(t *testing.T) {
	_, err := ReadTrace(strings.NewReader("{\"event\":\"a\"}\n\n{\"event\":\"b\",\"state\":{\"x\":\"<<1,\"}}\n"))
	if !errors.Is(err, ErrBadTrace) || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Fatalf("got %v, want an error on line 3", err)
	}
	_, err = ReadTrace(strings.NewReader("{\"event\":\"a\"}\n{\"event\":\"init\"}\n"))
	if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), "only be the first") {
		t.Fatalf("init on line 2: %v", err)
	}
	evs, err := ReadTrace(strings.NewReader("\n{\"event\":\"a\",\"state\":{\"f[\\\"k\\\"].x\":\"{1, 2}\"}}\n"))
	if err != nil || len(evs) != 1 || evs[0].Line != 2 || evs[0].State[`f["k"].x`] != "{1, 2}" {
		t.Fatalf("got %v, %v", evs, err)
	}
}

// TestTraceSpecQuotes: values are printed back by the TLA+ front end, so
// the spec holds them as TLA+ (escapes kept) and nothing else; keys that
// are a variable with constant indices are filed under the variable with
// their path, other keys get an operator of their own; actions with
// constant arguments share a template.
func TestTraceSpecQuotes(t *testing.T) {
	evs := []Event{{Event: "e", State: map[string]string{"x": `"a\"b\\c"`, "y[1]": `[f |-> <<1, "s">>]`}}}
	text, err := traceSpec("M", "Init", "Next", evs, nil, map[string]bool{"x": true, "y": true})
	if err != nil {
		t.Fatal(err)
	}
	evs = []Event{
		{Event: "a", Action: `Op(1, "s")`, State: map[string]string{"x.f[2, 3]": "1", "x[1] + 1": "2"}},
		{Event: "b", Action: `Op(2, "t")`},
		{Event: "c", Action: `\E i \in S : Op(i, x)`},
	}
	text2, err := traceSpec("M", "Init", "Next", evs, nil, map[string]bool{"x": true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`[k |-> 1, x |-> <<1, "s">>, o1 |-> (2), v1 |-> << << <<"f", <<2, 3>>>>, (1) >> >>]`,
		`[k |-> 1, x |-> <<2, "t">>]`, `e.k = 1 -> (Op(e.x[1], e.x[2]))`, `e.k = 2 -> (\E i \in S : Op(i, x))`, `((x[1] + 1)' = e.o1)`} {
		if !strings.Contains(text2, want) {
			t.Errorf("trace spec lacks %s:\n%s", want, text2)
		}
	}
	for _, want := range []string{`v1 |-> << << <<>>, ("a\"b\\c") >> >>`, `v2 |-> << << <<1>>, ([f |-> <<1, "s">>]) >> >>`,
		`tvGet(x', e.v1[i][1], 1) = e.v1[i][2]`, `tvGet(y', e.v2[i][1], 1) = e.v2[i][2]`, "EXTENDS M, Naturals\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("trace spec lacks %s:\n%s", want, text)
		}
	}
}

func TestConstantsOnly(t *testing.T) {
	got := constantsOnly("\\* c\nCONSTANTS N = 3 (* x *) S = {\"a b\", 2}\nSPECIFICATION Spec\nSYMMETRY Sym\nINVARIANT Inv\nCONSTANT M = M\n")
	want := "CONSTANTS\nN\n=\n3\nS\n=\n{\n\"a b\"\n,\n2}\nCONSTANTS\nM\n=\nM\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// FuzzDecodeLine: the decoder never panics, and what it accepts encodes
// back to a line it decodes to the same event.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"event":"acquire","state":{"owner":"\"a\"","count":"1"}}`,
		`{"event":"x","action":"Acquire(\"b\")","state":{"f[1].g":"[a |-> {1, 2}]"}}`,
		`{"event":"init"}`, `{}`, `{"event":"e","state":{"x":"<<"}}`, `null`, `{"event":"e","state":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeLine(line)
		if err != nil {
			if !errors.Is(err, ErrBadTrace) {
				t.Fatalf("error %v does not wrap ErrBadTrace", err)
			}
			return
		}
		if strings.TrimSpace(e.Event) == "" {
			t.Fatal("accepted an event without a name")
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := DecodeLine(b)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", b, err)
		}
		if e2.String() != e.String() {
			t.Fatalf("round trip: %s != %s", e2, e)
		}
	})
}
