package wormtx

import (
	"testing"
	"time"

	"strata/stack"
	"strata/stack/sim"
)

// keyOn returns an account held by RM r of n.
func keyOn(r uint32, n int) string {
	for i := 0; ; i++ {
		if k := acct(i); Partition(k, n) == r {
			return k
		}
	}
}

// submit runs one transaction from RM i and returns its outcome.
func (c *cluster) submit(i int, v Variant, ops []Op) (Result, error) {
	var res Result
	var err error
	done := false
	c.rms[i].Submit(v, ops, func(r Result, e error) { res, err, done = r, e, true })
	if !c.net.RunUntil(func() bool { return done }, time.Minute) {
		c.t.Fatal("no outcome")
	}
	return res, err
}

// A prepare delivered again to an RM's next incarnation (a duplicate
// datagram, or a coordinator's retry) gets the same vote as before: the
// vote record outlives the restart, so the register keeps one value and
// the transaction is applied once.
func TestDuplicatePrepareAfterRestart(t *testing.T) {
	a, b := keyOn(0, 2), keyOn(1, 2)
	c := newCluster(t, 1, sim.Link{Delay: time.Millisecond}, 2, "paxos", map[string]int64{a: 100, b: 100})
	c.primeAll()
	c.rms[0].mu.Lock()
	s := c.rms[0].pool[0] // the slot the transaction gets
	id := c.rms[0].cfg.VoteSeg<<24 | 1
	c.rms[0].mu.Unlock()
	ops := []Op{{Kind: Add, Key: a, Delta: -10}, {Kind: Add, Key: b, Delta: 10}}
	if r, err := c.submit(0, E3, ops); err != nil || r.Outcome != Committed {
		t.Fatalf("transfer: %+v, %v", r, err)
	}
	c.net.Run(100 * time.Millisecond)
	c.crash(1)
	c.net.Run(10 * time.Millisecond)
	c.restart(1)
	dup := msg{kind: mPrepare, variant: E3, tx: id, origin: 0, seg: c.rms[0].cfg.VoteSeg, base: s.base, token: uint64(s.token), parts: []uint32{0, 1}, ops: ops[1:]}
	c.rms[1].run(func() { c.rms[1].receive(dup) })
	c.net.Run(5 * time.Second)
	if got := c.rms[1].Balances()[b]; got != 110 {
		t.Fatalf("%s holds %d after one transfer of 10 and a duplicate prepare, want 110", b, got)
	}
	if n := c.rms[1].lockCount(); n != 0 {
		t.Fatalf("%d locks held after the duplicate prepare", n)
	}
	if d := c.stores[1].InDoubt(); len(d) != 0 {
		t.Fatalf("in doubt: %+v", d)
	}
}

// An RM that restarts while a transaction it voted yes on is undecided
// takes that transaction's locks again, read locks included, so a
// writer cannot slip in between the transaction's reads and its outcome
// (strict two-phase locking across the restart); the restarted RM then
// resolves the transaction from the registers.
func TestRestartKeepsReadLocks(t *testing.T) {
	a, b, x := keyOn(0, 3), keyOn(1, 3), keyOn(2, 3)
	c := newCluster(t, 2, sim.Link{Delay: time.Millisecond}, 3, "paxos", map[string]int64{a: 100, b: 100, x: 100})
	c.primeAll()
	// RM 2 is cut off: the audit stays undecided until someone writes no
	// for it.
	c.net.Partition([]stack.Addr{c.rmAddrs[2], c.rmAddrs[2] + "-w"})
	var audit *Result
	c.rms[0].Submit(E3, []Op{{Kind: Get, Key: a}, {Kind: Get, Key: b}, {Kind: Get, Key: x}}, func(r Result, err error) { audit = &r })
	c.net.Run(20 * time.Millisecond) // RM 1 has prepared it: b is read-locked
	if audit != nil {
		t.Fatalf("the audit ended early: %+v", *audit)
	}
	c.crash(1)
	c.net.Run(5 * time.Millisecond)
	c.restart(1)
	// Recovery is synchronous: the lock is back before anything runs.
	p := c.rms[1]
	p.mu.Lock()
	l := p.locks[b]
	held := l != nil && len(l.readers) == 1
	p.mu.Unlock()
	if !held {
		t.Fatalf("after the restart %s is not read-locked by the undecided audit (%+v)", b, l)
	}
	// A writer of b now conflicts.
	p.mu.Lock()
	st, _ := p.lockAndCheck(&txState{id: 99, votes: map[uint32]vote{}}, []Op{{Kind: Add, Key: b, Delta: 5}})
	p.mu.Unlock()
	if st != Conflict {
		t.Fatalf("a write of %s after the restart: %v, want a lock conflict", b, st)
	}
	c.net.Heal()
	c.net.Run(5 * time.Second)
	if audit == nil || audit.Outcome == Committed {
		t.Fatalf("audit: %+v (want an abort: RM 2 never voted)", audit)
	}
	if n := p.lockCount(); n != 0 {
		t.Fatalf("%d locks left after the audit ended", n)
	}
}

// Non-blocking: with one participant crashed before it votes, every
// variant still ends the transaction (a peer times out and writes no
// into the crashed RM's register), the others' locks are released, and
// work that does not need the crashed RM goes on.
func TestNonBlocking(t *testing.T) {
	for _, v := range Variants {
		t.Run(v.String(), func(t *testing.T) {
			a, b, x := keyOn(0, 3), keyOn(1, 3), keyOn(2, 3)
			c := newCluster(t, 3, sim.Link{Delay: time.Millisecond}, 3, "paxos", map[string]int64{a: 100, b: 100, x: 100})
			c.primeAll()
			c.crash(2)
			start := c.net.Now()
			r, err := c.submit(0, v, []Op{{Kind: Add, Key: a, Delta: -1}, {Kind: Add, Key: b, Delta: -1}, {Kind: Add, Key: x, Delta: 2}})
			if err != nil || r.Outcome != TimedOut {
				t.Fatalf("with RM 2 down: %+v, %v (want an abort by timeout)", r, err)
			}
			if took := c.net.Now() - start; took > 2*c.timeout {
				t.Fatalf("the outcome took %v (timeout %v)", took, c.timeout)
			}
			c.net.Run(time.Second)
			for i := range 2 {
				if n := c.rms[i].lockCount(); n != 0 {
					t.Fatalf("RM %d still holds %d locks", i, n)
				}
			}
			if r, err := c.submit(1, v, []Op{{Kind: Add, Key: a, Delta: -1}, {Kind: Add, Key: b, Delta: 1}}); err != nil || r.Outcome != Committed {
				t.Fatalf("a transfer between the live RMs: %+v, %v", r, err)
			}
		})
	}
}
