package wor

import (
	"fmt"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
)

// learnNet is n memory wormservers and a writer and a learner client on a
// simulated network whose links all take d one way.
func learnNet(t *testing.T, d time.Duration, n int) (net *sim.Net, mk func(stack.Addr) *stack.Node, replicas []stack.Addr) {
	net = sim.New(5)
	net.SetDefault(sim.Link{Delay: d})
	ch, err := layers.Configure([]stack.Prop{stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	epoch := uint64(0)
	mk = func(a stack.Addr) *stack.Node {
		tr, err := net.Endpoint(a)
		if err != nil {
			t.Fatal(err)
		}
		epoch++
		return stack.NewNode(tr, net.Clock(), layers.Build(ch.Specs, stack.Config{Local: a, Epoch: epoch, RTO: 5 * d, MaxRTO: 40 * d}), stack.NodeOptions{})
	}
	for i := range n {
		a := stack.Addr(fmt.Sprintf("sim:s%d", i))
		n := mk(a)
		s := NewServer(nil)
		n.Handle(s.Handle)
		s.SetNotifier(func(to stack.Addr, msg []byte) { _ = n.Send(to, msg) })
		replicas = append(replicas, a)
	}
	return net, mk, replicas
}

// A learner knows a written value one message delay after the accepts
// reach the servers (a majority for Paxos, the tail for the chain): at
// 2d for a Paxos write (accept out, report back) and at 2·3d for a
// chain of 3 (the value reaches the tail after 5 delays); the ec engine
// (five servers, K=3) learns at 2d from a Phase 2 quorum's splits. It learns each
// register once, and nothing a minority accepted.
func TestLearnerTiming(t *testing.T) {
	const d = 10 * time.Millisecond
	for _, engine := range []string{"paxos", "chain", "ec"} {
		t.Run(engine, func(t *testing.T) {
			n := 3
			if engine == "ec" {
				n = 5
			}
			net, mk, replicas := learnNet(t, d, n)
			newEngine := func(a stack.Addr, id uint64) interface {
				Engine
				Learner
			} {
				if engine == "ec" {
					e, err := NewEC(mk(a), replicas, id, time.Second, ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4})
					if err != nil {
						t.Fatal(err)
					}
					return e
				}
				if engine == "chain" {
					e, err := NewChain(mk(a), replicas, id, time.Second)
					if err != nil {
						t.Fatal(err)
					}
					return e
				}
				e, err := NewPaxos(mk(a), replicas, id, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			w, l := newEngine("sim:w", 1), newEngine("sim:l", 2)
			type got struct {
				addr uint64
				v    string
				at   time.Duration
			}
			var learned []got
			registered := false
			l.Learn(4, time.Minute, func(addr uint64, v []byte) { learned = append(learned, got{addr, string(v), net.Now()}) },
				func(err error) {
					if err != nil {
						t.Errorf("learn: %v", err)
					}
					registered = true
				})
			if !net.RunUntil(func() bool { return registered }, time.Minute) {
				t.Fatal("learner never registered")
			}
			// A capture first, then the write alone is timed.
			var cid CaptureID
			captured := false
			w.Capture(Addr(4, 0), func(c CaptureID, err error) { cid, captured = c, err == nil })
			if !net.RunUntil(func() bool { return captured }, time.Minute) {
				t.Fatal("capture failed")
			}
			start := net.Now()
			var wrote time.Duration
			w.Write(Addr(4, 0), []byte("v0"), cid, func(err error) {
				if err != nil {
					t.Errorf("write: %v", err)
				}
				wrote = net.Now() - start
			})
			net.Run(time.Second)
			want := 2 * d
			if engine == "chain" {
				want = 6 * d
			}
			if len(learned) != 1 || learned[0].addr != Addr(4, 0) || learned[0].v != "v0" || learned[0].at-start != want {
				t.Fatalf("learned %+v (write started at %v), want v0 once at +%v", learned, start, want)
			}
			if wrote != want {
				t.Fatalf("the write took %v, want %v", wrote, want)
			}
			// A value only one server accepted (a minority; for the chain,
			// the head) is not learned.
			x := mk("sim:x")
			if _, err := x.CallAsync(replicas[0], request{Op: opAccept, Addr: Addr(4, 1), Ballot: 7, Value: []byte("minority")}.encode(), time.Second, func([]byte, error) {}); err != nil {
				t.Fatal(err)
			}
			net.Run(time.Second)
			if len(learned) != 1 {
				t.Fatalf("learned a value one server accepted: %+v", learned)
			}
		})
	}
}

// A learner learns a register once from a quorum of reports, ignores
// reports from servers outside its voters, and forgets old registers:
// with a window of 4, a duplicate of a recent register is ignored, one
// of a register learned two generations ago is learned again (so its
// memory is bounded), and a register reported by a minority long ago
// needs a full quorum of new reports once enough other registers are
// pending.
func TestLearnQuorumWindow(t *testing.T) {
	voters := []stack.Addr{"a", "b", "c"}
	got := map[uint64]int{}
	note := learnQuorumWindow(voters, 2, 4, func(addr uint64, v []byte) {
		got[addr]++
		if string(v) != fmt.Sprint("v", addr) {
			t.Fatalf("register %d learned %q", addr, v)
		}
	})
	report := func(from stack.Addr, addr uint64) {
		note(from, notification{Addr: addr, Ballot: 7, Value: []byte(fmt.Sprint("v", addr))})
	}
	report("a", 1)
	report("x", 1) // not a voter
	if got[1] != 0 {
		t.Fatal("learned from one voter and a stranger")
	}
	report("b", 1)
	report("c", 1) // a late report of a learned register
	if got[1] != 1 {
		t.Fatalf("register 1 learned %d times, want 1", got[1])
	}
	report("a", 100) // a minority report, never completed
	for addr := uint64(2); addr < 20; addr++ {
		report("a", addr)
		report("b", addr)
	}
	report("c", 19)
	if got[19] != 1 {
		t.Fatalf("a recent register learned %d times, want 1", got[19])
	}
	report("c", 1)
	report("a", 1)
	if got[1] != 2 {
		t.Fatalf("register 1, learned 18 registers ago with a window of 4: learned %d times, want 2 (forgotten, learned again)", got[1])
	}
	for addr := uint64(200); addr < 210; addr++ {
		report("a", addr) // minorities: pending, never completed
	}
	report("b", 100)
	if got[100] != 0 {
		t.Fatal("a minority report forgotten long ago still counted")
	}
}

// simRunner returns run(what, start): it calls start with a done
// function, runs the simulated network until done is called (failing the
// test after a simulated minute), lets it settle for settle more, and
// returns the simulated time start took.
func simRunner(t *testing.T, net *sim.Net, settle time.Duration) func(what string, start func(done func())) time.Duration {
	return func(what string, start func(done func())) time.Duration {
		t.Helper()
		t0, finished := net.Now(), false
		start(func() { finished = true })
		if !net.RunUntil(func() bool { return finished }, time.Minute) {
			t.Fatalf("%s did not finish", what)
		}
		took := net.Now() - t0
		net.Run(settle)
		return took
	}
}
