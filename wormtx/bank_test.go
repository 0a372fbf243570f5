package wormtx

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/internal/testseed"
	"strata/stack"
	"strata/stack/sim"
)

// bank is the workload's accounts.
const (
	bankAccounts = 24
	bankStart    = 100
)

func bankBalances() map[string]int64 {
	m := map[string]int64{}
	for i := range bankAccounts {
		m[acct(i)] = bankStart
	}
	return m
}

// bankIn is one operation of the bank workload: a transfer, or an audit
// reading every account in one transaction.
type bankIn struct {
	audit    bool
	from, to int
	amount   int64
}

// bankOut is its outcome; unknown when its initiator crashed or could
// not learn the outcome (the transfer may or may not have happened).
type bankOut struct {
	unknown bool
	outcome Outcome
	reads   [bankAccounts]int64
}

type bankState [bankAccounts]int64

// bankModel: transactions are atomic operations on the whole bank, so a
// linearizable history of them is a strictly serializable one.
var bankModel = porcupine.NondeterministicModel{
	Init: func() []any {
		var s bankState
		for i := range s {
			s[i] = bankStart
		}
		return []any{s}
	},
	Step: func(state, input, output any) []any {
		s, in, out := state.(bankState), input.(bankIn), output.(bankOut)
		if in.audit {
			if out.unknown || out.outcome != Committed || out.reads == s {
				return []any{s}
			}
			return nil
		}
		applied := s
		ok := s[in.from] >= in.amount
		if ok {
			applied[in.from] -= in.amount
			applied[in.to] += in.amount
		}
		switch {
		case out.unknown:
			return []any{s, applied}
		case out.outcome == Conflict || out.outcome == TimedOut:
			return []any{s} // aborted (the client gave up retrying): no effect
		case out.outcome == Committed && ok:
			return []any{applied}
		case out.outcome == Insufficient && !ok:
			return []any{s}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(bankState) == b.(bankState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(bankIn), output.(bankOut)
		res := out.outcome.String()
		if out.unknown {
			res = "unknown"
		}
		if in.audit {
			return fmt.Sprintf("audit -> %s %v", res, out.reads)
		}
		return fmt.Sprintf("transfer %d from %d to %d -> %s", in.amount, in.from, in.to, res)
	},
}

// TestBank runs a bank-transfer workload (concurrent transfers and
// audits of every account, each a transaction across RMs) under message
// loss, duplication and reordering, RM crashes and restarts, and
// partitions, over each variant and both engines. Afterwards the total
// balance is what it was, no RM holds a lock or an in-doubt transaction,
// and the history of outcomes is strictly serializable (porcupine).
func TestBank(t *testing.T) {
	total, lost, runs := 0, 0, 0
	for seed := range testseed.Each(t, testseed.Range(0, 10)...) {
		n, l := bankRun(t, seed)
		total += n
		lost += l
		runs++
	}
	t.Logf("%d transactions checked; %d applied commits lost in crashes (logged, not yet synced) and applied again on recovery", total, lost)
	if lost == 0 && runs >= 10 && !t.Failed() {
		t.Error("no crash lost an applied commit: the campaign does not exercise recovery of unsynced finishes")
	}
}

// bankRun runs one seed; it returns the number of operations checked and
// of applied commits that crashes lost.
func bankRun(t *testing.T, seed uint64) (int, int) {
	rng := rand.New(rand.NewPCG(seed, 3))
	variant := Variants[seed%uint64(len(Variants))]
	engine := []string{"paxos", "chain"}[seed/uint64(len(Variants))%2]
	link := sim.Link{
		Delay:   time.Duration(1+rng.IntN(3)) * time.Millisecond,
		Jitter:  time.Duration(rng.IntN(2)) * time.Millisecond,
		Loss:    rng.Float64() * 0.05,
		Dup:     rng.Float64() * 0.05,
		Reorder: rng.Float64() * 0.1,
	}
	c := newCluster(t, seed, link, 3, engine, bankBalances())
	// Every peer's decision on a transaction agrees, and a committed
	// transaction is applied by each participant once.
	decisions := map[uint64]Outcome{}
	applied := map[uint64]map[uint32]bool{}
	partsOf := map[uint64][]uint32{}
	lostCommits := 0
	c.lost = func(rm int, txs []uint64) {
		lostCommits += len(txs)
		for _, tx := range txs {
			delete(applied[tx], uint32(rm))
		}
	}
	decideHook = func(p *Peer, tx *txState, o Outcome) {
		if prev, ok := decisions[tx.id]; ok && (prev == Committed) != (o == Committed) {
			t.Errorf("seed %d: transaction %x decided %v and %v (peer %d, yes %v, votes %v)", seed, tx.id, prev, o, p.cfg.ID, tx.yes, tx.votes)
		}
		decisions[tx.id] = o
		if p.cfg.Store != nil && tx.yes && o == Committed {
			if applied[tx.id] == nil {
				applied[tx.id] = map[uint32]bool{}
			}
			if applied[tx.id][p.cfg.ID] {
				t.Errorf("seed %d: rm %d applied transaction %x twice", seed, p.cfg.ID, tx.id)
			}
			applied[tx.id][p.cfg.ID] = true
			partsOf[tx.id] = tx.parts
		}
	}
	defer func() { decideHook = nil }()
	c.primeAll()
	start := c.net.Now()
	var hist []porcupine.Operation
	type pending struct {
		idx int // into hist
		rm  int
	}
	inflight := map[*pending]bool{}
	attempts := map[string]int{} // outcomes of attempts, for the report
	const clients = 6
	const runFor = 3 * time.Second
	end := start + runFor
	var loop func(client int)
	retire := func(p *pending, out bankOut) {
		if !inflight[p] {
			return // already retired (its RM crashed)
		}
		delete(inflight, p)
		hist[p.idx].Output = out
		if !out.unknown {
			// An unknown outcome may take effect later (another RM
			// resolves it): it stays open to the end of the history.
			hist[p.idx].Return = int64(c.net.Now())
		}
	}
	loop = func(client int) {
		if c.net.Now() >= end {
			return
		}
		in := bankIn{audit: rng.IntN(8) == 0}
		if !in.audit {
			in.from = rng.IntN(bankAccounts)
			in.to = (in.from + 1 + rng.IntN(bankAccounts-1)) % bankAccounts
			in.amount = int64(1 + rng.IntN(60))
		}
		hist = append(hist, porcupine.Operation{ClientId: client, Input: in, Call: int64(c.net.Now()), Output: bankOut{unknown: true}, Return: -1})
		p := &pending{idx: len(hist) - 1}
		inflight[p] = true
		var attempt func(tries int)
		attempt = func(tries int) {
			if !inflight[p] {
				return
			}
			// Any live RM may initiate.
			var up []int
			for i := range c.rms {
				if !c.net.Crashed(c.rmAddrs[i]) {
					up = append(up, i)
				}
			}
			if len(up) == 0 {
				c.net.AfterFunc(20*time.Millisecond, func() { attempt(tries) })
				return
			}
			p.rm = up[rng.IntN(len(up))]
			c.rms[p.rm].Submit(variant, in.ops(), func(r Result, err error) {
				if err != nil {
					attempts["in doubt"]++
				} else {
					attempts[r.Outcome.String()]++
				}
				switch {
				case err != nil:
					retire(p, bankOut{unknown: true})
				case (r.Outcome == Conflict || r.Outcome == TimedOut) && tries < 20:
					// Immediate-Restart: the attempt had no effect; try again.
					// A random pause, longer after each abort.
					pause := time.Duration(1+rng.IntN(5<<min(tries, 4))) * time.Millisecond
					c.net.AfterFunc(pause, func() { attempt(tries + 1) })
					return
				case r.Outcome == Conflict || r.Outcome == TimedOut:
					retire(p, bankOut{outcome: r.Outcome}) // gave up: no effect
				default:
					out := bankOut{outcome: r.Outcome}
					if in.audit && r.Outcome == Committed {
						for i := range bankAccounts {
							v, ok := r.Reads[acct(i)]
							if !ok {
								t.Errorf("seed %d: audit committed without account %d: %v", seed, i, r.Reads)
							}
							out.reads[i] = v
						}
					}
					if in.audit && r.Outcome == Committed {
						sum := int64(0)
						for _, v := range out.reads {
							sum += v
						}
						if sum != bankAccounts*bankStart {
							t.Errorf("seed %d: an audit read a total of %d: %v", seed, sum, out.reads)
						}
					}
					retire(p, out)
				}
				c.net.AfterFunc(time.Duration(rng.IntN(5))*time.Millisecond, func() { loop(client) })
			})
		}
		attempt(0)
	}
	for i := range clients {
		loop(i)
	}
	// Faults: crashes with restarts, and partitions, while the clients run.
	var fault func()
	fault = func() {
		if c.net.Now() >= end-500*time.Millisecond {
			return
		}
		i := rng.IntN(len(c.rms))
		switch rng.IntN(3) {
		case 0:
			c.crash(i)
			// The crashed RM's own initiations have unknown outcomes.
			for p := range inflight {
				if p.rm == i {
					retire(p, bankOut{unknown: true})
				}
			}
			// Its clients go on through other RMs.
			c.net.AfterFunc(time.Duration(50+rng.IntN(300))*time.Millisecond, func() {
				c.restart(i)
			})
		case 1:
			// RM i is cut off from everyone else (unlisted addresses
			// form the other group).
			c.net.Partition([]stack.Addr{c.rmAddrs[i], c.rmAddrs[i] + "-w"})
			c.net.AfterFunc(time.Duration(50+rng.IntN(300))*time.Millisecond, c.net.Heal)
		}
		c.net.AfterFunc(time.Duration(200+rng.IntN(400))*time.Millisecond, fault)
	}
	c.net.AfterFunc(time.Duration(100+rng.IntN(200))*time.Millisecond, fault)
	c.net.Run(runFor + time.Second)
	// Settle: heal, bring every RM up, let every in-doubt transaction be
	// resolved and every client finish.
	c.net.Heal()
	for i := range c.rms {
		if c.net.Crashed(c.rmAddrs[i]) {
			c.restart(i)
		}
	}
	settled := func() bool {
		for i := range c.rms {
			if len(c.stores[i].InDoubt()) > 0 || c.rms[i].lockCount() > 0 {
				return false
			}
		}
		return len(inflight) == 0
	}
	if !c.net.RunUntil(settled, time.Minute) {
		for i := range c.rms {
			t.Logf("rm %d: in doubt %+v, locks %d", i, c.stores[i].InDoubt(), c.rms[i].lockCount())
		}
		for p := range inflight {
			t.Logf("in flight: %+v at rm %d", hist[p.idx], p.rm)
		}
		t.Fatalf("seed %d (%s, %s): did not settle: %d operations in flight", seed, variant, engine, len(inflight))
	}
	for id, rms := range applied {
		if len(rms) != len(partsOf[id]) {
			t.Errorf("seed %d: transaction %x applied at %v, participants %v", seed, id, rms, partsOf[id])
		}
	}
	sum := int64(0)
	for i := range c.rms {
		for _, v := range c.stores[i].Balances() {
			sum += v
		}
	}
	if sum != bankAccounts*bankStart {
		t.Fatalf("seed %d (%s, %s): total balance %d, want %d", seed, variant, engine, sum, bankAccounts*bankStart)
	}
	for i := range hist {
		if hist[i].Return < 0 {
			hist[i].Return = int64(c.net.Now()) + 1 // unknown: may have taken effect any time after its call
		}
	}
	res, info := porcupine.CheckOperationsVerbose(bankModel.ToModel(), hist, time.Minute)
	if res != porcupine.Ok {
		path := fmt.Sprintf("%s/wormtx-bank-%d.html", t.TempDir(), seed)
		_ = porcupine.VisualizePath(bankModel.ToModel(), info, path)
		t.Fatalf("seed %d (%s, %s): history of %d transactions is not strictly serializable (%v); see %s", seed, variant, engine, len(hist), res, path)
	}
	committed := 0
	for _, op := range hist {
		if out := op.Output.(bankOut); !out.unknown && out.outcome == Committed {
			committed++
		}
	}
	if committed < 10 {
		t.Fatalf("seed %d (%s, %s): only %d of %d transactions committed: the run shows little (attempts: %v)", seed, variant, engine, committed, len(hist), attempts)
	}
	if seed == 0 {
		t.Logf("seed 0 (%s, %s): %d transactions, %d committed", variant, engine, len(hist), committed)
	}
	return len(hist), lostCommits
}

func (in bankIn) ops() []Op {
	if in.audit {
		ops := make([]Op, bankAccounts)
		for i := range ops {
			ops[i] = Op{Kind: Get, Key: acct(i)}
		}
		return ops
	}
	return []Op{{Kind: Add, Key: acct(in.from), Delta: -in.amount}, {Kind: Add, Key: acct(in.to), Delta: in.amount}}
}
