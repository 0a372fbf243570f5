package distsys_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/mpcal/testdata/gogen/lock"
	"strata/mpcal/tlc"
	"strata/mpcal/tracecheck"
)

// lockModel is the MPCal model the lock service is generated from.
const lockModel = "../mpcal/testdata/gogen/lock/LockService.tla"

// tracedLock runs the generated lock service (one server, clients
// clients, rounds rounds each, last-agent mailboxes on loopback UDP: see
// Tracer on why) with every instance tracing into one Tracer, and
// returns the trace and whether two clients were ever inside the
// critical section at once (in the order the sections committed). With mutant, the server's serverRespond
// section grants every lock request at once (a wrong implementation of
// the model's server).
func tracedLock(t *testing.T, clients, rounds int, mutant bool) (trace []byte, overlapped bool) {
	t.Helper()
	m, err := lock.New(lock.Constants{NumClients: tla.Int(int64(clients)), Rounds: tla.Int(int64(rounds))})
	if err != nil {
		t.Fatal(err)
	}
	srv := m.AServer()
	if mutant {
		cp := *srv
		cp.Sections = maps.Clone(srv.Sections)
		sec := cp.Sections["serverRespond"]
		sec.Run = grantEveryRequest
		cp.Sections["serverRespond"] = sec
		srv = &cp
	}
	ns := nodes(t, clients+1)
	var peers []distsys.Peer
	for i, n := range ns {
		peers = append(peers, distsys.Peer{ID: tla.Int(int64(i)), Addr: n.Local()})
	}
	var buf lockedBuffer
	tr := distsys.NewTracer(&buf)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(arch *distsys.Archetype, id int, opts ...distsys.Option) *distsys.Context {
		mb, err := distsys.NewMailboxes(ns[id], tla.Int(int64(id)), peers, distsys.MailboxOptions{LastAgent: true})
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, distsys.BindIndexed("network", mb), distsys.WithSeed(uint64(id)), distsys.WithTrace(tr))
		c, err := distsys.NewContext(arch, tla.Int(int64(id)), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serverCtx, stopServer := context.WithCancel(ctx)
	server := run(srv, 0)
	serverErr := make(chan error, 1)
	go func() { serverErr <- server.Run(serverCtx) }()
	var wg sync.WaitGroup
	errs := make([]error, clients+1) // each index written by its own goroutine
	for id := 1; id <= clients; id++ {
		// cs is private here (a local resource, not an output channel), so
		// that every section that sends goes as a last agent; the trace
		// records what the clients write to it.
		c := run(m.AClient(), id, distsys.BindRef("cs", distsys.NewLocal(tla.Tuple())))
		wg.Add(1)
		go func() { defer wg.Done(); errs[id] = c.Run(ctx) }()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", id, err)
		}
	}
	stopServer()
	if err := <-serverErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("server: %v", err)
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	trace = buf.Bytes()
	// Who is inside, in the order the sections committed (the trace's).
	inside := 0
	for _, ev := range bytes.Split(trace, []byte("\n")) {
		switch {
		case bytes.Contains(ev, []byte(`"cs":"<<\"enter\"`)):
			inside++
			overlapped = overlapped || inside > 1
		case bytes.Contains(ev, []byte(`"cs":"<<\"leave\"`)):
			inside--
		}
	}
	return trace, overlapped
}

// grantEveryRequest is a wrong serverRespond: it grants every lock
// request at once instead of queueing it behind the holder, and on an
// unlock only drops the holder.
func grantEveryRequest(c *distsys.Context, e *tla.Eval) (string, error) {
	msg := c.Read(e, "msg")
	if e.Bool(tla.Eq(e.Field(msg, "type"), tla.String("lock"))) {
		c.Write(e, "network", []tla.Value{e.Field(msg, "from")}, tla.String("grant"))
		c.Write(e, "q", nil, e.Append(c.Read(e, "q"), e.Field(msg, "from")))
	} else {
		c.Write(e, "q", nil, e.Tail(c.Read(e, "q")))
	}
	return "serverLoop", e.Err()
}

// lockedBuffer is a bytes.Buffer safe for the tracer's writes (made
// under its lock) and the test's read after the run.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

func checkLockTrace(t *testing.T, trace []byte, clients, rounds int) *tracecheck.Result {
	t.Helper()
	evs, err := tracecheck.ReadTrace(bytes.NewReader(trace))
	if err != nil {
		t.Fatalf("the recorded trace does not decode: %v", err)
	}
	cfg := []byte("CONSTANTS NumClients = " + itoa(clients) + " Rounds = " + itoa(rounds) + " defaultInitValue = defaultInitValue\n")
	res, err := tracecheck.Check(context.Background(), lockModel, evs, tracecheck.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func itoa(n int) string { return tla.Int(int64(n)).String() }

// TestLockServiceTrace: a run of the generated lock service is a
// behaviour of its MPCal model, step for step (each committed section one
// step of its label, with the same pc and locals after it).
func TestLockServiceTrace(t *testing.T) {
	if _, err := tlc.Jar(); err != nil {
		t.Skip(err)
	}
	const clients, rounds = 2, 2
	trace, overlapped := tracedLock(t, clients, rounds, false)
	if overlapped {
		t.Fatal("mutual exclusion violated by the real server")
	}
	// Each client: clientLoop, requestLock, receiveLock, enterCS, leaveCS
	// per round and a last clientLoop (the server may be stopped before it
	// takes the last unlocks).
	if got, want := bytes.Count(trace, []byte(`"event":"AClient.`)), clients*(5*rounds+1); got != want {
		t.Fatalf("%d client sections in the trace, want %d:\n%s", got, want, trace)
	}
	if !bytes.Contains(trace, []byte(`"writes":{"cs":"<<\"enter\", 1>>"}`)) {
		t.Errorf("no trace line records client 1 entering:\n%s", trace)
	}
	res := checkLockTrace(t, trace, clients, rounds)
	if !res.Accepted {
		t.Fatalf("%v\ntrace:\n%s", res, trace)
	}
	t.Logf("%v", res)
}

// TestLockServiceTraceMutant: the server that grants every request lets
// two clients in at once; its trace is rejected at the first step the
// model does not allow: a client receiving a grant the model's server
// never sent.
func TestLockServiceTraceMutant(t *testing.T) {
	if _, err := tlc.Jar(); err != nil {
		t.Skip(err)
	}
	const clients, rounds = 3, 3
	var trace []byte
	for try := 0; ; try++ {
		var overlapped bool
		trace, overlapped = tracedLock(t, clients, rounds, true)
		if overlapped {
			break
		}
		if try == 4 {
			t.Skip("the wrong server never let two clients in at once in 5 runs")
		}
	}
	res := checkLockTrace(t, trace, clients, rounds)
	if res.Accepted {
		t.Fatalf("a run with two clients inside accepted:\n%s", trace)
	}
	self := strings.TrimSuffix(strings.TrimPrefix(res.Event.Action, "receiveLock("), ")")
	if res.Event.Event != "AClient.receiveLock" || res.Event.State["resp["+self+"]"] != `"grant"` {
		t.Fatalf("rejected at %v, want a client's receiveLock of a grant", res)
	}
	t.Logf("%v", res)
}
