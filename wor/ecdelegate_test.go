package wor

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/sim"
)

// delegateNet is five ec servers, a front end far from them (far one
// way) and a proposer node near them (near), for the delegation tests.
func delegateNet(t *testing.T, far, near time.Duration) (net *sim.Net, front, proposer *EC, plan ECPlan) {
	t.Helper()
	net, mk, replicas := learnNet(t, near, 5)
	plan = ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	fn, pn := mk("sim:front"), mk("sim:delegate")
	for _, s := range append(replicas, "sim:delegate") {
		net.SetLink("sim:front", s, sim.Link{Delay: far})
		net.SetLink(s, "sim:front", sim.Link{Delay: far})
	}
	var err error
	if front, err = NewEC(fn, replicas, 1, 2*time.Second, plan); err != nil {
		t.Fatal(err)
	}
	if proposer, err = NewEC(pn, replicas, 9, 2*time.Second, plan); err != nil {
		t.Fatal(err)
	}
	ServeECLeader(pn, proposer)
	return net, front, proposer, plan
}

// propose runs e.Propose to its end and returns its error and the
// simulated time it took.
func propose(t *testing.T, net *sim.Net, e *EC, addr uint64, v string) (time.Duration, error) {
	t.Helper()
	var out error
	done := false
	start := net.Now()
	e.Propose(addr, []byte(v), func(err error) { out, done = err, true })
	if !net.RunUntil(func() bool { return done }, time.Minute) {
		t.Fatal("propose did not finish")
	}
	return net.Now() - start, out
}

func readValue(t *testing.T, net *sim.Net, e *EC, addr uint64) string {
	t.Helper()
	var got []byte
	var rerr error
	done := false
	e.Read(addr, func(v []byte, err error) { got, rerr, done = v, err, true })
	if !net.RunUntil(func() bool { return done }, time.Minute) || rerr != nil {
		t.Fatalf("read: %v", rerr)
	}
	return string(got)
}

// With a delegate next to the servers, a far front end's write takes
// front → server → delegate → server → front end (two far delays and
// two near ones) instead of two far round trips, which is what the
// planner's Pando write latency assumes; the value is then chosen and
// readable everywhere. Without a delegate the same Propose takes the two
// round trips.
func TestECDelegatedWriteTiming(t *testing.T) {
	const far, near = 50 * time.Millisecond, time.Millisecond
	net, front, proposer, _ := delegateNet(t, far, near)
	addr := Addr(1, 0)
	if took, err := propose(t, net, front, addr, "here"); err != nil || took != 4*far {
		t.Fatalf("without a delegate: %v after %v, want nil after %v (two round trips)", err, took, 4*far)
	}
	front.SetDelegate("sim:delegate")
	addr = Addr(1, 1)
	took, err := propose(t, net, front, addr, "delegated")
	if err != nil || took != 2*far+2*near {
		t.Fatalf("delegated: %v after %v, want nil after %v", err, took, 2*far+2*near)
	}
	for _, e := range []*EC{front, proposer} {
		if got := readValue(t, net, e, addr); got != "delegated" {
			t.Fatalf("read %q after a delegated write", got)
		}
	}
}

// A delegated proposal on a register another client already wrote
// reports the value chosen as a *WrittenError (the delegate's Phase 1
// recovered it and wrote it again); proposing the value already chosen
// reports success.
func TestECDelegatedWriteFindsChosen(t *testing.T) {
	net, front, proposer, _ := delegateNet(t, 5*time.Millisecond, time.Millisecond)
	front.SetDelegate("sim:delegate")
	addr := Addr(2, 0)
	if _, err := propose(t, net, proposer, addr, "first"); err != nil {
		t.Fatal(err)
	}
	var we *WrittenError
	if _, err := propose(t, net, front, addr, "second"); !errors.As(err, &we) || string(we.Value) != "first" {
		t.Fatalf("delegated proposal over a chosen value: %v", err)
	}
	if _, err := propose(t, net, front, addr, "first"); err != nil {
		t.Fatalf("proposing the value chosen: %v", err)
	}
}

// When the delegate does not answer (cut off, or gone), the front end
// runs both phases itself after the delegate's timeout, and the write
// still succeeds under a ballot of its own.
func TestECDelegateDownFallsBack(t *testing.T) {
	net, front, _, _ := delegateNet(t, 5*time.Millisecond, time.Millisecond)
	front.SetDelegate("sim:nobody")
	addr := Addr(3, 0)
	took, err := propose(t, net, front, addr, "v")
	if err != nil {
		t.Fatalf("with the delegate gone: %v", err)
	}
	if took < 2*front.timeout {
		t.Fatalf("finished after %v, before the delegate's timeout %v: did it fall back?", took, 2*front.timeout)
	}
	if got := readValue(t, net, front, addr); got != "v" {
		t.Fatalf("read %q", got)
	}
}

// Two front ends proposing different values on one register through
// one delegate, at once: one value is chosen, and both learn which.
func TestECDelegatedConflict(t *testing.T) {
	net, mk, replicas := learnNet(t, time.Millisecond, 5)
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	pn := mk("sim:delegate")
	proposer, err := NewEC(pn, replicas, 9, time.Second, plan)
	if err != nil {
		t.Fatal(err)
	}
	ServeECLeader(pn, proposer)
	for round := range 20 {
		addr := Addr(4, uint64(round))
		var outs [2]error
		done := 0
		vals := []string{"a", "b"}
		for i := range 2 {
			e, err := NewEC(mk(stack.Addr(fmt.Sprintf("sim:f%d-%d", round, i))), replicas, uint64(10+2*round+i), time.Second, plan)
			if err != nil {
				t.Fatal(err)
			}
			e.SetDelegate("sim:delegate")
			e.Propose(addr, []byte(vals[i]), func(err error) { outs[i] = err; done++ })
		}
		if !net.RunUntil(func() bool { return done == 2 }, time.Minute) {
			t.Fatal("proposals did not finish")
		}
		chosen := readValue(t, net, proposer, addr)
		for i, err := range outs {
			var we *WrittenError
			switch {
			case err == nil && vals[i] == chosen:
			case errors.As(err, &we) && string(we.Value) == chosen && vals[i] != chosen:
			default:
				t.Fatalf("round %d: %s's proposal: %v, chosen %q", round, vals[i], err, chosen)
			}
		}
	}
}

// FuzzDecodeDelegation: the delegation messages (delegate requests,
// forwarded replies, the forward address of a request) decode garbage to
// ErrMalformed and round-trip what they accept.
func FuzzDecodeDelegation(f *testing.F) {
	f.Add(delegateReq{Addr: 7, Ballot: 9, Front: "udp:1.2.3.4:5", Value: []byte("v")}.encode())
	f.Add(forwarded{Addr: 1, Ballot: 2, Resp: response{Status: stOK, Has: true, Value: []byte("x")}}.encode())
	f.Add(request{Op: opAcceptFor, Addr: 1, Ballot: 3, Value: withForward("sim:f", []byte("s"))}.encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeDelegateReq(b); err == nil {
			if !bytes.Equal(r.encode(), b) {
				t.Fatalf("delegate request does not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("delegate request: %v", err)
		}
		if fw, err := decodeForwarded(b); err == nil {
			if !bytes.Equal(fw.encode(), b) {
				t.Fatalf("forwarded reply does not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("forwarded: %v", err)
		}
		if to, v, err := splitForward(b); err == nil {
			if !bytes.Equal(withForward(to, v), b) {
				t.Fatalf("forward address does not round-trip")
			}
		}
		// A server answers any request, forwarded ones included.
		s := NewServer(slog.New(slog.DiscardHandler))
		s.SetNotifier(func(stack.Addr, []byte) {})
		s.Handle("sim:x", b)
	})
}
