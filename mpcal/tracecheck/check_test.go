package tracecheck

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"strata/mpcal/tlc"
)

// needTLC skips a test when the TLA+ tools are not installed (make setup
// installs them; CI has them).
func needTLC(t *testing.T) {
	t.Helper()
	if _, err := tlc.Jar(); err != nil {
		t.Skip(err)
	}
}

func mutexCheck(t *testing.T, trace string, m Mapping) *Result {
	t.Helper()
	evs, err := ReadTrace(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("testdata/Mutex.cfg")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), "testdata/Mutex.tla", evs, Options{Config: cfg, Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A run of the lock: partial observations (the release does not say who
// released, nor the count), one event naming its action.
const mutexGood = `{"event":"acquire","state":{"owner":"\"a\"","count":"1"}}
{"event":"release","state":{"owner":"\"none\""}}

{"event":"acquire","action":"Acquire(\"b\")","state":{"count":"2"}}
{"event":"release","state":{"owner":"\"none\"","count":"2"}}
`

// TestTraceAccepted: a run of the lock, from an init event.
func TestTraceAccepted(t *testing.T) {
	needTLC(t)
	res := mutexCheck(t, `{"event":"init","state":{"owner":"\"none\"","count":"0"}}`+"\n"+mutexGood, nil)
	if !res.Accepted || res.Events != 5 {
		t.Fatalf("a run of the lock: %v", res)
	}
	if got := res.String(); got != "trace accepted (5 events)" {
		t.Errorf("verdict %q", got)
	}
}

// The show-it-detects test: b acquires while a holds the lock; the
// trace is rejected at that event, with the event.
func TestTraceForbiddenStepRejected(t *testing.T) {
	needTLC(t)
	res := mutexCheck(t, `{"event":"acquire","state":{"owner":"\"a\""}}
{"event":"acquire","state":{"owner":"\"b\""}}
{"event":"release","state":{"owner":"\"none\""}}
`, nil)
	if res.Accepted {
		t.Fatal("two owners at once accepted")
	}
	if res.Index != 2 || res.Event.Line != 2 || res.Event.State["owner"] != `"b"` {
		t.Fatalf("rejected at %d (%v), want event 2", res.Index, res.Event)
	}
	if !strings.Contains(res.String(), "rejected at event 2 of 3 (line 2)") {
		t.Errorf("verdict %q", res.String())
	}
}

// A wrong initial state: rejected at the init event.
func TestTraceInitRejected(t *testing.T) {
	needTLC(t)
	bad := `{"event":"init","state":{"count":"7"}}` + "\n" + mutexGood
	if res := mutexCheck(t, bad, nil); res.Accepted || res.Index != 1 {
		t.Fatalf("a wrong initial state: %v", res)
	}
}

func TestTraceMapping(t *testing.T) {
	needTLC(t)
	m := Mapping{
		"acquire": {Action: `\E c \in Clients : Acquire(c)`, Observes: []string{"owner", "count"}},
		"release": {Action: `\E c \in Clients : Release(c)`, Observes: []string{"owner"}},
	}
	good := strings.Replace(mutexGood, `{"owner":"\"none\"","count":"2"}`, `{"owner":"\"none\""}`, 1)
	// The mapping's action narrows the step: a "release" that acquires.
	res := mutexCheck(t, `{"event":"release","state":{"owner":"\"a\""}}`, m)
	if res.Accepted || res.Index != 1 {
		t.Fatalf("a release event acquiring: %v", res)
	}
	evs, _ := ReadTrace(strings.NewReader(mutexGood))
	cfg, _ := os.ReadFile("testdata/Mutex.cfg")
	_, err := Check(context.Background(), "testdata/Mutex.tla", evs, Options{Config: cfg, Mapping: m})
	if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), `observes count, which the mapping does not list`) {
		t.Fatalf("release observing count: %v", err)
	}
	evs, _ = ReadTrace(strings.NewReader(good))
	evs = append(evs, Event{Event: "steal", Line: 9})
	_, err = Check(context.Background(), "testdata/Mutex.tla", evs, Options{Config: cfg, Mapping: m})
	if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), `"steal"`) {
		t.Fatalf("an event outside the mapping: %v", err)
	}
}

// Lines that parse as JSON but do not fit the model are errors, not
// verdicts.
func TestTraceDoesNotFitModel(t *testing.T) {
	needTLC(t)
	cfg, _ := os.ReadFile("testdata/Mutex.cfg")
	for _, c := range []struct{ line, want string }{
		{`{"event":"x","state":{"Clients":"{}"}}`, "observes no variable of Mutex"},
		{`{"event":"x","state":{"1 + 1":"2"}}`, "observes no variable of Mutex"},
	} {
		evs, err := ReadTrace(strings.NewReader(c.line))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Check(context.Background(), "testdata/Mutex.tla", evs, Options{Config: cfg})
		if !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	// An action the model does not define: TLC's error, as an error.
	evs, _ := ReadTrace(strings.NewReader(`{"event":"x","action":"Steal(\"a\")"}`))
	if _, err := Check(context.Background(), "testdata/Mutex.tla", evs, Options{Config: cfg}); err == nil {
		t.Error("an undefined action: no error")
	}
}

// TestTraceMPCalModel: the lock service of models/lock (MPCal, compiled
// and translated first): client 2 asks for the lock and the server takes
// its message; events name the PlusCal action (label(self)) or leave it
// to Next.
func TestTraceMPCalModel(t *testing.T) {
	needTLC(t)
	cfg, err := os.ReadFile("../../models/lock/LockService.cfg")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := ReadTrace(strings.NewReader(`{"event":"AClient.clientLoop","action":"clientLoop(2)","state":{"pc[2]":"\"requestLock\""}}
{"event":"AClient.requestLock","state":{"pc[2]":"\"receiveLock\""}}
{"event":"AServer.serverLoop","action":"serverLoop(0)","state":{"pc[0]":"\"serverReceive\""}}
{"event":"AServer.serverReceive","action":"serverReceive(0)","state":{"pc[0]":"\"serverRespond\"","msg[0]":"[type |-> \"lock\", from |-> 2]"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), "../../models/lock/LockService.tla", evs, Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Accepted {
		t.Fatalf("client 2's request: %v", res)
	}
}
