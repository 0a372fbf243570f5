package wor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"strata/geo"
	"strata/stack"
)

// TestECPlanValidate: each rule, broken alone, is named in the error.
func TestECPlanValidate(t *testing.T) {
	for _, c := range []struct {
		plan ECPlan
		n    int
		rule string // "" for a valid plan
	}{
		{ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}, 5, ""},
		{ECPlan{K: 2, R: 3, Q1a: 2, Q1b: 3, Q2: 4}, 5, ""},
		{ECPlan{K: 1, R: 2, Q1a: 2, Q1b: 2, Q2: 2}, 3, ""},
		{ECPlan{K: 1, R: 0, Q1a: 1, Q1b: 1, Q2: 1}, 1, ""},
		{ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 5, Q2: 5}, 5, ""},
		{ECPlan{K: 0, R: 5, Q1a: 3, Q1b: 4, Q2: 4}, 5, RuleSizes},
		{ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 6, Q2: 4}, 5, RuleSizes},
		{ECPlan{K: 3, R: 2, Q1a: 0, Q1b: 4, Q2: 4}, 5, RuleSizes},
		{ECPlan{K: 3, R: -1, Q1a: 3, Q1b: 4, Q2: 4}, 5, RuleSizes},
		{ECPlan{K: 3, R: 3, Q1a: 3, Q1b: 4, Q2: 4}, 5, RuleKRN},
		{ECPlan{K: 3, R: 2, Q1a: 2, Q1b: 4, Q2: 4}, 5, RuleQ1aK},
		{ECPlan{K: 1, R: 4, Q1a: 2, Q1b: 4, Q2: 3}, 5, RuleQ1aQ2},
		{ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 3, Q2: 4}, 5, RuleQ1bQ2},
		{ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 5, Q2: 3}, 5, RuleQ2Q2},
	} {
		err := c.plan.Validate(c.n)
		if c.rule == "" {
			if err != nil {
				t.Errorf("%+v over %d: %v", c.plan, c.n, err)
			}
			continue
		}
		var pe *PlanError
		if !errors.Is(err, ErrBadPlan) || !errors.As(err, &pe) || pe.Rule != c.rule || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%+v over %d: %v, want rule %s named", c.plan, c.n, err, c.rule)
		}
	}
	// The helpers make valid plans, and say when there is none.
	for n := 1; n <= 9; n++ {
		for k := 1; k <= n; k++ {
			p, err := ECPlanFor(n, k)
			if err != nil {
				t.Fatalf("ECPlanFor(%d, %d): %v", n, k, err)
			}
			if p.N() != n || p.K != k {
				t.Fatalf("ECPlanFor(%d, %d) = %+v", n, k, p)
			}
		}
		for f := 0; 2*f < n; f++ {
			p, err := DefaultECPlan(n, f)
			if err != nil || p.Tolerates() < f {
				t.Fatalf("DefaultECPlan(%d, %d) = %+v (tolerates %d), %v", n, f, p, p.Tolerates(), err)
			}
		}
		if _, err := DefaultECPlan(n, (n+1)/2); !errors.Is(err, ErrBadPlan) {
			t.Fatalf("DefaultECPlan(%d, %d): %v, want ErrBadPlan", n, (n+1)/2, err)
		}
	}
	if p, _ := DefaultECPlan(5, 1); p != (ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}) {
		t.Fatalf("DefaultECPlan(5, 1) = %+v", p)
	}
}

// TestParseECPlanFromGeo: the geo planner's JSON (one plan, or the list
// it prints for several protocols) is read as an ECPlan.
func TestParseECPlanFromGeo(t *testing.T) {
	one := geo.Plan{Protocol: geo.Pando, F: 1, Sites: []string{"a", "b", "c", "d", "e"}, K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4, ReadMs: 12}
	b, err := json.MarshalIndent(one, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseECPlan(b)
	if err != nil || p != (ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}) || p.Validate(len(one.Sites)) != nil {
		t.Fatalf("ParseECPlan(geo plan) = %+v, %v", p, err)
	}
	other := geo.Plan{Protocol: geo.EPaxos, K: 1, R: 4, Q1a: 2, Q2: 4}
	list, _ := json.Marshal([]geo.Plan{other, one})
	if p, err := ParseECPlan(list); err != nil || p.K != 3 || p.Q1b != 4 {
		t.Fatalf("ParseECPlan(list) = %+v, %v", p, err)
	}
	list, _ = json.Marshal([]geo.Plan{other})
	if _, err := ParseECPlan(list); !errors.Is(err, ErrBadPlan) {
		t.Fatalf("a list without a pando plan: %v", err)
	}
	if _, err := ParseECPlan([]byte("{")); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}

// TestSplitCoding: any K of the n splits rebuild the value, for values
// of 0, 1, random and large sizes and plans from replication to K = n.
func TestSplitCoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pl := range [][2]int{{5, 3}, {5, 2}, {3, 1}, {1, 1}, {4, 4}, {7, 4}, {9, 6}} {
		n, k := pl[0], pl[1]
		c, err := newSplitCodec(n, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{0, 1, 2, k - 1, k, k + 1, 100 + rng.IntN(1000), 64 << 10, MaxValue - splitHdr} {
			v := make([]byte, size)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			enc, err := c.encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if len(enc) != n {
				t.Fatalf("%d splits for n = %d", len(enc), n)
			}
			splits := make([]*split, n)
			for i, b := range enc {
				s, err := c.decodeSplit(b, i)
				if err != nil {
					t.Fatalf("n=%d k=%d size %d: split %d: %v", n, k, size, i, err)
				}
				splits[i] = &s
			}
			// Every subset of exactly k splits (all of them for small n;
			// a few random ones for large values, where decoding is slow).
			subsets := 0
			for mask := 0; mask < 1<<n; mask++ {
				if popcount(mask) != k || (size > 4096 && rng.IntN(8) != 0 && mask != 1<<k-1) {
					continue
				}
				subsets++
				some := make([]*split, n)
				for i := range n {
					if mask&(1<<i) != 0 {
						some[i] = splits[i]
					}
				}
				got, err := c.decode(some)
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("n=%d k=%d size %d subset %b: %d bytes, %v", n, k, size, mask, len(got), err)
				}
				// k-1 of them are not enough, and say so.
				for i := range n {
					if some[i] != nil {
						some[i] = nil
						break
					}
				}
				if _, err := c.decode(some); !errors.Is(err, ErrSplit) {
					t.Fatalf("n=%d k=%d: %d splits decoded: %v", n, k, k-1, err)
				}
			}
			if subsets == 0 {
				t.Fatalf("n=%d k=%d: no subset tried", n, k)
			}
		}
	}
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestSplitDamage: a damaged split (a flipped byte anywhere, another
// split's index, a truncation, another plan's split) is refused, and with
// only K-1 valid splits left decoding fails cleanly instead of returning
// a wrong value.
func TestSplitDamage(t *testing.T) {
	c, _ := newSplitCodec(5, 3)
	v := []byte("the quick brown fox jumps over the lazy dog, twice over")
	enc, _ := c.encode(v)
	for i := range len(enc[1]) {
		b := bytes.Clone(enc[1])
		b[i] ^= 0x10
		if _, err := c.decodeSplit(b, 1); !errors.Is(err, ErrSplit) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for cut := range len(enc[1]) {
		if _, err := c.decodeSplit(enc[1][:cut], 1); !errors.Is(err, ErrSplit) {
			t.Fatalf("truncated to %d bytes: %v", cut, err)
		}
	}
	if _, err := c.decodeSplit(enc[2], 1); !errors.Is(err, ErrSplit) {
		t.Fatalf("split 2 where split 1 belongs: %v", err)
	}
	other, _ := newSplitCodec(5, 2)
	if _, err := other.decodeSplit(enc[1], 1); !errors.Is(err, ErrSplit) {
		t.Fatalf("a 3-of-5 split read as 2-of-5: %v", err)
	}
	// Through the rules: two good splits and two damaged ones rebuild
	// nothing; three good ones rebuild v.
	damaged := func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-1] ^= 1; return b }
	as := []ecAnswer{
		{from: 0, resp: response{Has: true, AccBallot: 5, Value: enc[0]}},
		{from: 1, resp: response{Has: true, AccBallot: 5, Value: damaged(enc[1])}},
		{from: 2, resp: response{Has: true, AccBallot: 5, Value: enc[2][:splitHdr]}},
		{from: 3, resp: response{Has: true, AccBallot: 5, Value: enc[3]}},
	}
	view := c.view(as)
	if len(view.states) != 2 || view.failed != 2 {
		t.Fatalf("view of 2 good and 2 damaged answers: %d usable, %d failed", len(view.states), view.failed)
	}
	if r := c.recoverValue(view.states); r.ok {
		t.Fatalf("rebuilt %q from 2 valid splits", r.value)
	}
	as = append(as, ecAnswer{from: 4, resp: response{Has: true, AccBallot: 5, Value: enc[4]}})
	if r := c.recoverValue(c.view(as).states); !r.ok || !bytes.Equal(r.value, v) {
		t.Fatalf("3 valid splits: %+v", r)
	}
	// Splits of two values under one (forged) id never decode to either.
	w := bytes.Repeat([]byte("w"), len(v))
	encW, _ := c.encode(w)
	s0, _ := c.decodeSplit(enc[0], 0)
	s1, _ := c.decodeSplit(enc[1], 1)
	sw, _ := c.decodeSplit(encW[2], 2)
	sw.vid = s0.vid
	if got, err := c.decode([]*split{&s0, &s1, &sw, nil, nil}); !errors.Is(err, ErrSplit) {
		t.Fatalf("mixed splits decoded to %q, %v", got, err)
	}
}

// FuzzDecodeSplit: the split decoder refuses garbage with ErrSplit and
// never panics; a split it accepts re-encodes to the same bytes.
func FuzzDecodeSplit(f *testing.F) {
	c, _ := newSplitCodec(5, 3)
	enc, _ := c.encode([]byte("hello, splits"))
	for _, b := range enc {
		f.Add(b, 0)
	}
	f.Add(enc[2], 2)
	f.Add([]byte{5, 3, 0, 1}, 1)
	f.Fuzz(func(t *testing.T, b []byte, index int) {
		s, err := c.decodeSplit(b, index)
		if err != nil {
			if !errors.Is(err, ErrSplit) {
				t.Fatalf("error %v is not ErrSplit", err)
			}
			return
		}
		if !bytes.Equal(encodeSplit(s), b) {
			t.Fatal("decode then encode changed the split")
		}
		splits := make([]*split, c.n)
		if index >= 0 && index < c.n {
			splits[index] = &s
		}
		if _, err := c.decode(splits); err == nil {
			t.Fatal("one split of a 3-of-5 plan decoded")
		}
	})
}

// ecAns builds a reply of server from holding value's split at ballot acc.
func ecAns(t *testing.T, c *splitCodec, from int, acc uint64, value string, chosen bool) ecAnswer {
	t.Helper()
	enc, err := c.encode([]byte(value))
	if err != nil {
		t.Fatal(err)
	}
	return ecAnswer{from: from, resp: response{Status: stOK, Promised: acc, AccBallot: acc, Has: true, Chosen: chosen, Value: enc[from]}}
}

// TestECRecoveryAcrossBallots: a value chosen at one ballot and partly
// re-accepted at a higher one (a completion that stopped midway) has
// fewer than K splits at each ballot in a Phase 1b quorum, but K of the
// value: recovery counts splits by value, not by ballot, and finds it.
// Counting by ballot would find nothing and let another value be chosen.
func TestECRecoveryAcrossBallots(t *testing.T) {
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	c, _ := newSplitCodec(5, 3)
	// v chosen at ballot 10 on servers 0-3; a completion at ballot 20
	// reached servers 0 and 4. Phase 1b hears 0, 1, 2, 4: two splits at
	// each ballot, four of v.
	as := []ecAnswer{
		ecAns(t, c, 0, 20, "v", false),
		ecAns(t, c, 1, 10, "v", false),
		ecAns(t, c, 2, 10, "v", false),
		ecAns(t, c, 4, 20, "v", false),
	}
	out, pr, _ := plan.phase1(c, as, 1)
	if out != p1Captured || !pr.has || string(pr.value) != "v" {
		t.Fatalf("phase 1: %v, prior %+v", out, pr)
	}
	// A higher ballot's value with fewer than K splits is passed over
	// for a lower one with K.
	as = []ecAnswer{
		ecAns(t, c, 0, 30, "w", false),
		ecAns(t, c, 1, 10, "v", false),
		ecAns(t, c, 2, 10, "v", false),
		ecAns(t, c, 3, 10, "v", false),
	}
	if out, pr, _ := plan.phase1(c, as, 1); out != p1Captured || string(pr.value) != "v" {
		t.Fatalf("phase 1 with a lone higher split: %v, prior %q", out, pr.value)
	}
}

// TestECPhaseRules: the fast paths and the waits of Phase 1, Phase 2 and
// reads, answer by answer.
func TestECPhaseRules(t *testing.T) {
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	c, _ := newSplitCodec(5, 3)
	empty := func(from int) ecAnswer { return ecAnswer{from: from, resp: response{Status: stOK, Promised: 9}} }
	nack := func(from int) ecAnswer { return ecAnswer{from: from, resp: response{Status: stNack, Promised: 99}} }
	down := func(from int) ecAnswer { return ecAnswer{from: from, err: ErrUnavailable} }

	// Phase 1: three empty promises capture (fast path); two wait.
	if out, _, _ := plan.phase1(c, []ecAnswer{empty(0), empty(1)}, 3); out != p1Wait {
		t.Fatalf("2 empty promises: %v", out)
	}
	if out, pr, _ := plan.phase1(c, []ecAnswer{empty(0), empty(1), empty(2)}, 2); out != p1Captured || pr.has {
		t.Fatalf("3 empty promises: %v %+v", out, pr)
	}
	// A split among the first three: wait for Phase 1b.
	if out, _, _ := plan.phase1(c, []ecAnswer{empty(0), empty(1), ecAns(t, c, 2, 5, "x", false)}, 2); out != p1Wait {
		t.Fatalf("a split among 3 promises: %v", out)
	}
	// One split at four promises: nothing recoverable, nothing chosen.
	if out, pr, _ := plan.phase1(c, []ecAnswer{empty(0), empty(1), ecAns(t, c, 2, 5, "x", false), empty(3)}, 1); out != p1Captured || pr.has {
		t.Fatalf("one split at 4 promises: %v %+v", out, pr)
	}
	// Nacks: preempted once a quorum cannot promise, with the promise.
	if out, _, hi := plan.phase1(c, []ecAnswer{nack(0), nack(1), ecAns(t, c, 2, 5, "x", false)}, 2); out != p1Preempted || hi != 99 {
		t.Fatalf("2 nacks and a split: %v %d", out, hi)
	}
	if out, _, _ := plan.phase1(c, []ecAnswer{down(0), down(1), down(2), empty(3), empty(4)}, 0); out != p1Unavailable {
		t.Fatalf("3 down: %v", out)
	}
	// A damaged split does not count as a promise, nor as "nothing".
	bad := ecAns(t, c, 2, 5, "x", false)
	bad.resp.Value = bad.resp.Value[:5]
	if out, _, _ := plan.phase1(c, []ecAnswer{empty(0), empty(1), bad}, 2); out != p1Wait {
		t.Fatalf("2 empty promises and a damaged one: %v", out)
	}

	// Phase 2: four accepts choose; a nack among five is not fatal.
	ok := func(from int) ecAnswer { return ecAnswer{from: from, resp: response{Status: stOK}} }
	if out, _ := plan.phase2([]ecAnswer{ok(0), ok(1), nack(2)}, 2); out != p2Wait {
		t.Fatalf("phase 2, 2 accepts 1 nack: %v", out)
	}
	if out, _ := plan.phase2([]ecAnswer{ok(0), ok(1), nack(2), ok(3), ok(4)}, 0); out != p2Chosen {
		t.Fatalf("phase 2, 4 accepts: %v", out)
	}
	if out, hi := plan.phase2([]ecAnswer{ok(0), nack(1), nack(2)}, 2); out != p2Preempted || hi != 99 {
		t.Fatalf("phase 2, 2 nacks: %v", out)
	}
	if out, _ := plan.phase2([]ecAnswer{ok(0), down(1), down(2)}, 2); out != p2Unavailable {
		t.Fatalf("phase 2, 2 down: %v", out)
	}

	// Reads. One round: three answers, one marked chosen, three splits.
	if out, v := plan.read(c, []ecAnswer{ecAns(t, c, 0, 5, "v", true), ecAns(t, c, 1, 5, "v", false), ecAns(t, c, 2, 5, "v", false)}, 2); out != readChosen || string(v) != "v" {
		t.Fatalf("fast read: %v %q", out, v)
	}
	// Marked chosen but only two splits of it among three: wait.
	if out, _ := plan.read(c, []ecAnswer{ecAns(t, c, 0, 5, "v", true), ecAns(t, c, 1, 5, "v", false), empty(2)}, 2); out != readWait {
		t.Fatalf("fast read with 2 splits: %v", out)
	}
	// No marker: wait for four; four at one ballot (a Phase 2 quorum) are chosen.
	three := []ecAnswer{ecAns(t, c, 0, 5, "v", false), ecAns(t, c, 1, 5, "v", false), ecAns(t, c, 2, 5, "v", false)}
	if out, _ := plan.read(c, three, 2); out != readWait {
		t.Fatalf("read of 3 unmarked: %v", out)
	}
	if out, v := plan.read(c, append(three, ecAns(t, c, 3, 5, "v", false)), 1); out != readChosen || string(v) != "v" {
		t.Fatalf("read of a Phase 2 quorum: %v %q", out, v)
	}
	// Three of four: recoverable, not known chosen: write it back.
	if out, v := plan.read(c, append(three, empty(3)), 1); out != readComplete || string(v) != "v" {
		t.Fatalf("read of a partial write: %v %q", out, v)
	}
	// Nothing recoverable among four: unwritten.
	if out, _ := plan.read(c, []ecAnswer{empty(0), empty(1), ecAns(t, c, 2, 5, "v", false), empty(3)}, 1); out != readUnwritten {
		t.Fatalf("read of one split: %v", out)
	}
	if out, _ := plan.read(c, []ecAnswer{empty(0), empty(1), down(2), down(3), down(4)}, 0); out != readUnavailable {
		t.Fatalf("read with 3 down: %v", out)
	}
}

// TestECLeaderFallback: a write preempted by another client's capture is
// handed to the leader, which writes it (the writer gets success); the
// other client's write, preempted in turn by the leader, is handed over
// too and finds the first value chosen (*WrittenError). Both read it.
func TestECLeaderFallback(t *testing.T) {
	net, mk, replicas := learnNet(t, time.Millisecond, 5)
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	newEC := func(a stack.Addr, id uint64) *EC {
		e, err := NewEC(mk(a), replicas, id, time.Second, plan)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	leaderNode := mk("sim:leader")
	le, err := NewEC(leaderNode, replicas, 9, time.Second, plan)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := serveLeader(le)
	leaderNode.HandleAsync(func(from stack.Addr, body []byte, respond func([]byte)) {
		served++
		h(from, body, respond)
	})
	a, b := newEC("sim:a", 1), newEC("sim:b", 2)
	a.SetLeader("sim:leader")
	b.SetLeader("sim:leader")
	addr := Addr(3, 0)
	capture := func(e *EC) CaptureID {
		var cid CaptureID
		done := false
		e.Capture(addr, func(c CaptureID, err error) {
			if err != nil {
				t.Fatal(err)
			}
			cid, done = c, true
		})
		if !net.RunUntil(func() bool { return done }, time.Minute) {
			t.Fatal("capture did not finish")
		}
		return cid
	}
	write := func(e *EC, v string, cid CaptureID) error {
		var out error
		done := false
		e.Write(addr, []byte(v), cid, func(err error) { out, done = err, true })
		if !net.RunUntil(func() bool { return done }, time.Minute) {
			t.Fatal("write did not finish")
		}
		return out
	}
	ca, cb := capture(a), capture(b) // b's capture preempts a's
	if err := write(a, "from-a", ca); err != nil || served != 1 {
		t.Fatalf("a's preempted write: %v, %d handed to the leader", err, served)
	}
	var we *WrittenError
	if err := write(b, "from-b", cb); !errors.As(err, &we) || string(we.Value) != "from-a" || served != 2 {
		t.Fatalf("b's preempted write: %v, %d handed to the leader", err, served)
	}
	for _, e := range []*EC{a, b, le} {
		var got []byte
		done := false
		e.Read(addr, func(v []byte, err error) {
			if err != nil {
				t.Fatal(err)
			}
			got, done = v, true
		})
		if !net.RunUntil(func() bool { return done }, time.Minute) || string(got) != "from-a" {
			t.Fatalf("read %q", got)
		}
	}
	// Without a leader, the same conflict is ErrPreempted.
	c, d := newEC("sim:c", 3), newEC("sim:d", 4)
	addr = Addr(3, 1)
	cc := capture(c)
	capture(d)
	if err := write(c, "x", cc); !errors.Is(err, ErrPreempted) {
		t.Fatalf("preempted write without a leader: %v", err)
	}
}

// FuzzDecodeLeader: the leader's messages decode garbage to ErrMalformed
// and round-trip what they accept; the leader answers anything.
func FuzzDecodeLeader(f *testing.F) {
	f.Add(leaderReq{Addr: 7, Value: []byte("v")}.encode())
	f.Add(leaderResp{Status: leaderWritten, Value: []byte("w")}.encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeLeaderReq(b); err == nil {
			if !bytes.Equal(r.encode(), b) {
				t.Fatal("leader request does not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if r, err := decodeLeaderResp(b); err == nil {
			if !bytes.Equal(r.encode(), b) {
				t.Fatal("leader reply does not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
	})
}

// TestECReadRounds: with every link taking d, a read of a register whose
// Phase 3 reached the servers takes one round (2d); so does one written
// by a segment batch (no Phase 3, but a Phase 2 quorum at one ballot is
// among the first answers); a register only K servers accepted (not
// chosen, nothing marked) is written back first: read, capture, write
// (6d); an unwritten one takes one round.
func TestECReadRounds(t *testing.T) {
	const d = 5 * time.Millisecond
	net, mk, replicas := learnNet(t, d, 5)
	e, err := NewEC(mk("sim:w"), replicas, 1, time.Second, ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4})
	if err != nil {
		t.Fatal(err)
	}
	run := simRunner(t, net, 10*d) // the settling lets Phase 3 land
	read := func(addr uint64, want string) time.Duration {
		t.Helper()
		return run("read", func(done func()) {
			e.Read(addr, func(v []byte, err error) {
				if (want == "" && !errors.Is(err, ErrUnwritten)) || (want != "" && (err != nil || string(v) != want)) {
					t.Errorf("read %#x: %q, %v; want %q", addr, v, err, want)
				}
				done()
			})
		})
	}
	put := func(addr uint64, v string) {
		run("put", func(done func()) {
			e.Capture(addr, func(cid CaptureID, err error) {
				if err != nil {
					t.Fatal(err)
				}
				e.Write(addr, []byte(v), cid, func(err error) {
					if err != nil {
						t.Fatal(err)
					}
					done()
				})
			})
		})
	}
	put(Addr(1, 0), "chosen")
	if took := read(Addr(1, 0), "chosen"); took != 2*d {
		t.Errorf("read of a committed register took %v, want %v", took, 2*d)
	}
	run("segment write", func(done func()) {
		e.SegCapture(1, 10, 12, func(cid CaptureID, err error) {
			if err != nil {
				t.Fatal(err)
			}
			e.SegWrite(1, 10, [][]byte{[]byte("s10"), []byte("s11")}, cid, func(_ [][]byte, err error) {
				if err != nil {
					t.Fatal(err)
				}
				done()
			})
		})
	})
	if took := read(Addr(1, 11), "s11"); took != 2*d {
		t.Errorf("read of a segment-written register took %v, want %v", took, 2*d)
	}
	// Accepted by servers 0-2 only, at ballot 7: K splits, not chosen.
	c, _ := newSplitCodec(5, 3)
	splits, _ := c.encode([]byte("partial"))
	x := mk("sim:x")
	for i := range 3 {
		if _, err := x.CallAsync(replicas[i], request{Op: opAccept, Addr: Addr(1, 20), Ballot: 7, Value: splits[i]}.encode(), time.Second, func([]byte, error) {}); err != nil {
			t.Fatal(err)
		}
	}
	net.Run(10 * d)
	if took := read(Addr(1, 20), "partial"); took != 6*d {
		t.Errorf("read of a half-written register took %v, want %v (read, capture, write)", took, 6*d)
	}
	if took := read(Addr(1, 20), "partial"); took != 2*d {
		t.Errorf("second read took %v, want %v", took, 2*d)
	}
	if took := read(Addr(1, 30), ""); took != 2*d {
		t.Errorf("read of an unwritten register took %v, want %v", took, 2*d)
	}
}

// Concurrent writes handed to the leader for one register are led one at
// a time: the first is captured and written, the others are answered
// with the value chosen, and all within one lead's time (the leader's
// own captures used to preempt each other, round after round).
func TestECLeaderOneRequestPerRegister(t *testing.T) {
	const d = time.Millisecond
	net, mk, replicas := learnNet(t, d, 5)
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	leaderNode := mk("sim:leader")
	le, err := NewEC(leaderNode, replicas, 9, time.Second, plan)
	if err != nil {
		t.Fatal(err)
	}
	ServeECLeader(leaderNode, le)
	addr := Addr(4, 0)
	type reply struct {
		r   leaderResp
		err error
	}
	var replies []reply
	start := net.Now()
	var took time.Duration
	for i := range 3 {
		n := mk(stack.Addr(fmt.Sprintf("sim:fe%d", i)))
		v := fmt.Sprintf("value-%d", i)
		if _, err := n.CallAsync("sim:leader", leaderReq{Addr: addr, Value: []byte(v)}.encode(), time.Second, func(b []byte, err error) {
			r, derr := decodeLeaderResp(b)
			replies = append(replies, reply{r, errors.Join(err, derr)})
			took = net.Now() - start
		}); err != nil {
			t.Fatal(err)
		}
	}
	if !net.RunUntil(func() bool { return len(replies) == 3 }, time.Minute) {
		t.Fatalf("%d of 3 forwarded writes answered", len(replies))
	}
	oks, chosen := 0, ""
	for _, x := range replies {
		switch {
		case x.err != nil:
			t.Fatal(x.err)
		case x.r.Status == leaderOK:
			oks++
		case x.r.Status == leaderWritten:
			if chosen != "" && chosen != string(x.r.Value) {
				t.Fatalf("two values reported chosen: %q and %q", chosen, x.r.Value)
			}
			chosen = string(x.r.Value)
		default:
			t.Fatalf("a forwarded write failed: %q", x.r.Value)
		}
	}
	if oks != 1 || chosen == "" {
		t.Fatalf("%d written, others told %q: want one written and two told its value", oks, chosen)
	}
	// A lead is a capture and a Phase 2 (two round trips), plus the
	// forward and the reply: 6 d.
	if took > 8*d {
		t.Fatalf("the three forwarded writes took %v, more than one lead (%v): the leader duelled with itself", took, 8*d)
	}
	t.Logf("three concurrent forwarded writes answered after %v", took)
}
