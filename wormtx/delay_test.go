package wormtx

import (
	"testing"
	"time"

	"strata/stack/sim"
)

// TestMessageDelays shows the message delays of each variant: on a
// network whose every link takes d one way and where nothing else costs
// time (virtual time, memory wormservers), a transaction across three
// RMs, started at RM 0, is known to RM 0 exactly Delays()·d later:
// 8d, 6d, 5d, 4d, 3d.
func TestMessageDelays(t *testing.T) {
	const d = 10 * time.Millisecond
	accounts, keys := oneAccountPerRM()
	for _, v := range Variants {
		t.Run(v.String(), func(t *testing.T) {
			c := newCluster(t, 1, sim.Link{Delay: d}, 3, "paxos", accounts)
			c.primeAll()
			ops := []Op{{Kind: Add, Key: keys[0], Delta: -5}, {Kind: Add, Key: keys[1], Delta: 5}, {Kind: Get, Key: keys[2]}}
			start := c.net.Now()
			var took time.Duration
			var res Result
			var err error
			finished := false
			c.rms[0].Submit(v, ops, func(r Result, e error) { res, err, took, finished = r, e, c.net.Now()-start, true })
			if !c.net.RunUntil(func() bool { return finished }, time.Minute) {
				t.Fatal("no outcome")
			}
			if err != nil || res.Outcome != Committed || res.Reads[keys[2]] != 100 {
				t.Fatalf("outcome %+v, %v", res, err)
			}
			t.Logf("%s: %v = %d·d", v, took, took/d)
			if took != time.Duration(v.Delays())*d {
				t.Fatalf("%s took %v, want %d·d = %v", v, took, v.Delays(), time.Duration(v.Delays())*d)
			}
			// Every participant applies the outcome.
			c.net.Run(time.Second)
			if got := c.rms[Partition(keys[0], 3)].Balances()[keys[0]]; got != 95 {
				t.Fatalf("%s: balance %d after the transfer, want 95", keys[0], got)
			}
			if got := c.rms[Partition(keys[1], 3)].Balances()[keys[1]]; got != 105 {
				t.Fatalf("%s: balance %d after the transfer, want 105", keys[1], got)
			}
		})
	}
}

// oneAccountPerRM is 30 accounts of 100 over 3 RMs, and one account of
// each RM, by RM.
func oneAccountPerRM() (map[string]int64, []string) {
	accounts := map[string]int64{}
	for i := range 30 {
		accounts[acct(i)] = 100
	}
	var keys []string
	for r := uint32(0); r < 3; r++ {
		for i := range 30 {
			if Partition(acct(i), 3) == r {
				keys = append(keys, acct(i))
				break
			}
		}
	}
	return accounts, keys
}

func acct(i int) string { return "acct" + string(rune('a'+i/10)) + string(rune('0'+i%10)) }

// A participant that has never learned the coordinator's vote segment
// (it starts learning it when the prepare arrives, and the other votes
// may be written before its registration reaches the servers) still
// learns the outcome from the votes, reading those written before it
// registered, rather than waiting for its timeout to resolve it.
func TestFirstTransactionOfASegment(t *testing.T) {
	const d = 10 * time.Millisecond
	accounts, keys := oneAccountPerRM()
	for _, v := range []Variant{D4, E3} {
		t.Run(v.String(), func(t *testing.T) {
			c := newCluster(t, 1, sim.Link{Delay: d}, 3, "paxos", accounts, true)
			c.primeAll()
			ops := []Op{{Kind: Add, Key: keys[0], Delta: -5}, {Kind: Add, Key: keys[1], Delta: 5}, {Kind: Add, Key: keys[2], Delta: 0}}
			start := c.net.Now()
			c.rms[0].Submit(v, ops, func(Result, error) {})
			applied := func() bool {
				return c.rms[1].Balances()[keys[1]] == 105 && c.rms[2].lockCount() == 0 && c.rms[1].lockCount() == 0
			}
			if !c.net.RunUntil(applied, time.Minute) {
				t.Fatal("the participants never applied the outcome")
			}
			took := c.net.Now() - start
			t.Logf("%s: participants applied the outcome after %v (%d·d); their timeout is %v", v, took, took/d, c.timeout)
			if took >= c.timeout {
				t.Fatalf("%s: the participants waited for their timeout (%v) to learn the outcome of a new segment's first transaction", v, took)
			}
		})
	}
}
