package kv

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
	"strata/stack/sim"
)

// Histories written by hand for the checker (linmodel_test.go): a valid
// one passes, and each way of breaking it is caught, by the check that
// should catch it.

func hPut(c int, call, ret int64, key, value string, rev, version uint64, existed bool) linOp {
	return linOp{client: c, op: OpPut, key: key, value: value, call: call, ret: ret, wr: WriteResult{Rev: rev, Version: version, Succeeded: true, Existed: existed}}
}

func hCAS(c int, call, ret int64, key string, want uint64, value string, rev, version uint64, ok, existed bool) linOp {
	return linOp{client: c, op: OpCAS, key: key, version: want, value: value, call: call, ret: ret, wr: WriteResult{Rev: rev, Version: version, Succeeded: ok, Existed: existed}}
}

func hDelete(c int, call, ret int64, key string, rev uint64, existed bool) linOp {
	return linOp{client: c, op: OpDelete, key: key, call: call, ret: ret, wr: WriteResult{Rev: rev, Succeeded: existed, Existed: existed}}
}

func hUnknown(c int, call int64, op Op, key, value string) linOp {
	return linOp{client: c, op: op, key: key, value: value, call: call, ret: math.MaxInt64, unknown: true}
}

func hGet(c int, call, ret int64, kv KeyValue) linOp {
	return linOp{client: c, op: OpGet, key: kv.Key, call: call, ret: ret, found: kv.Value != nil, kv: kv}
}

func hMissing(c int, call, ret int64, key string) linOp {
	return linOp{client: c, op: OpGet, key: key, call: call, ret: ret}
}

func hScan(c int, call, ret int64, start, end string, rev uint64, kvs ...KeyValue) linOp {
	return linOp{client: c, op: OpScan, key: start, end: end, call: call, ret: ret, rev: rev, kvs: kvs}
}

func kvOf(key, value string, version, create, mod uint64) KeyValue {
	return KeyValue{Key: key, Value: []byte(value), Version: version, Create: create, Mod: mod}
}

var checkKeys = []string{"k0", "k1", "k2", "k3"}

// validHistory is linearizable, with writes of unknown outcome: one
// observed (k2=d), one never (k0=z), and a delete of unknown outcome
// that explains a key a later scan leaves out.
func validHistory() []linOp {
	return []linOp{
		hPut(0, 0, 10, "k0", "a", 1, 1, false),
		hGet(1, 20, 30, kvOf("k0", "a", 1, 1, 1)),
		hPut(2, 20, 30, "k1", "b", 2, 1, false),
		hCAS(0, 40, 50, "k0", 1, "c", 3, 2, true, true),
		hScan(1, 60, 70, "k0", "", 3, kvOf("k0", "c", 2, 1, 3), kvOf("k1", "b", 1, 2, 2)),
		hDelete(2, 80, 90, "k1", 4, true),
		hUnknown(0, 85, OpPut, "k2", "d"),
		hUnknown(3, 86, OpPut, "k0", "z"),
		hScan(1, 100, 110, "k0", "", 5, kvOf("k0", "c", 2, 1, 3), kvOf("k2", "d", 1, 5, 5)),
		hCAS(0, 120, 130, "k0", 1, "e", 7, 2, false, true),
		hMissing(2, 140, 150, "k1"),
		hPut(2, 160, 170, "k1", "f", 8, 1, false),
		hUnknown(3, 175, OpDelete, "k1", ""),
		hScan(1, 180, 190, "k1", "k2", 9), // k1 gone: the unknown delete
		hScan(1, 200, 210, "k0", "", 9, kvOf("k0", "c", 2, 1, 3)).limited(1, true),
	}
}

// limited sets a scan's limit and more flag.
func (o linOp) limited(limit int, more bool) linOp {
	o.limit, o.more = limit, more
	return o
}

func TestCheckerAcceptsValidHistory(t *testing.T) {
	n, err := checkHistory(checkKeys, validHistory(), 5*time.Second, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if n < len(validHistory()) {
		t.Fatalf("%d porcupine operations for %d operations", n, len(validHistory()))
	}
}

// TestCheckerFlagsViolations breaks the valid history in one way each and
// expects the check named to flag it.
func TestCheckerFlagsViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h []linOp) []linOp
		want string // in the error
	}{
		{"stale get after a CAS", func(h []linOp) []linOp {
			return append(h, hGet(3, 55, 58, kvOf("k0", "a", 1, 1, 1)))
		}, "key k0: history"},
		{"get sees a write called later", func(h []linOp) []linOp {
			h[1].kv = kvOf("k0", "c", 2, 1, 3)
			return h
		}, "key k0: history"},
		{"CAS with a stale version succeeds", func(h []linOp) []linOp {
			h[9] = hCAS(0, 120, 130, "k0", 1, "e", 7, 3, true, true)
			return h
		}, "key k0: history"},
		{"put miscounts the version", func(h []linOp) []linOp {
			h[2].wr.Version = 2
			return h
		}, "key k1: history"},
		{"get reports a wrong modification revision", func(h []linOp) []linOp {
			h[1].kv.Mod = 2
			return h
		}, "key k0: history"},
		{"scan leaves out a key a completed put wrote", func(h []linOp) []linOp {
			h[4].kvs = h[4].kvs[:1]
			return h
		}, "key k1: history"},
		{"scan shows a deleted key", func(h []linOp) []linOp {
			h[8].kvs = append(h[8].kvs, kvOf("k1", "b", 1, 2, 2))
			return h
		}, "out of order"}, // k1 after k2: shape first
		{"scan shows a deleted key, in order", func(h []linOp) []linOp {
			h[8].kvs = []KeyValue{h[8].kvs[0], kvOf("k1", "b", 1, 2, 2), h[8].kvs[1]}
			return h
		}, "key k1: history"},
		{"limited scan skips a key before its last", func(h []linOp) []linOp {
			h = append(h, hPut(0, 220, 230, "k1", "g", 10, 1, false))
			return append(h, hScan(1, 240, 250, "k0", "", 10, kvOf("k0", "c", 2, 1, 3), kvOf("k2", "d", 1, 5, 5)).limited(2, true))
		}, "key k1: history"},
		{"scan shows a key nobody wrote", func(h []linOp) []linOp {
			h[4].kvs = append(h[4].kvs, kvOf("k9", "?", 1, 2, 2))
			return h
		}, "key k9: history"},
		{"scan over its limit", func(h []linOp) []linOp {
			h[14] = h[14].limited(1, false)
			h[14].kvs = append(h[14].kvs, kvOf("k2", "d", 1, 5, 5))
			return h
		}, "over the limit"},
		{"scan mixes revisions", func(h []linOp) []linOp {
			// Two concurrent puts; a scan concurrent with both sees the
			// second and not the first, yet claims a revision past both.
			// Each key alone is linearizable (the scan's read of k3
			// before its put, of k2 after); one revision is not.
			h = append(h, hPut(0, 300, 400, "k3", "x", 10, 1, false), hPut(2, 300, 400, "k2", "y", 11, 2, true))
			return append(h, hScan(1, 350, 360, "k2", "", 11, kvOf("k2", "y", 2, 5, 11)))
		}, "leaves out k3"},
		{"scan shows a value older than its revision", func(h []linOp) []linOp {
			h = append(h, hPut(0, 300, 400, "k0", "x", 10, 3, true))
			return append(h, hScan(1, 350, 360, "k0", "k1", 10, kvOf("k0", "c", 2, 1, 3)))
		}, "older than"},
		{"scan revision before a completed write", func(h []linOp) []linOp {
			h[13].rev = 7
			return h
		}, "returned before it was called"},
		{"scan revision after a later write", func(h []linOp) []linOp {
			return append(h, hPut(0, 500, 510, "k2", "q", 9, 2, true))
		}, "called after it returned"},
		{"revisions against real time", func(h []linOp) []linOp {
			return append(h, hPut(0, 300, 310, "k2", "x", 11, 2, true), hPut(1, 320, 330, "k0", "y", 10, 3, true))
		}, "revisions against real time"},
		{"two writes with one revision", func(h []linOp) []linOp {
			h[2].wr.Rev = 1
			h[4].kvs[1].Create, h[4].kvs[1].Mod = 1, 1
			return h
		}, "two acknowledged writes with revision 1"},
		{"modification revision names another write", func(h []linOp) []linOp {
			// k2=d came from a put of unknown outcome, so the per-key
			// model does not know its revision; 4 is the delete of k1.
			h[8].kvs[1] = kvOf("k2", "d", 1, 4, 4)
			return h
		}, "that revision is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.edit(validHistory())
			_, err := checkHistory(checkKeys, h, 5*time.Second, "", true)
			if err == nil {
				t.Fatalf("not flagged")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("flagged, but not as %q: %v", tc.want, err)
			}
			t.Logf("flagged: %s", strings.SplitN(err.Error(), "\n", 2)[0])
		})
	}
}

// TestCheckerFlagsStaleReads runs the checker on real replies: a kv
// server cut off from the WOR space (with a client that reaches only it)
// answers a sequential get and a sequential scan from its stale state
// after writes completed through the others, and the checker rejects
// both histories (the scan for the key it left out); a linearizable get
// at the same server gives no stale answer (none while cut off, the new
// value once reconnected).
func TestCheckerFlagsStaleReads(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(1)...) {
		c, err := newSimCluster(seed, "paxos", sim.Link{Delay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := range c.kvs {
			if err := c.startKV(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		l := c.leader(20 * time.Second)
		if l < 0 {
			t.Fatal("no leader elected")
		}
		lag := c.kvs[(l+1)%3]
		main, err := c.client(0)
		if err != nil {
			t.Fatal(err)
		}
		nd, err := c.node("sim:c1")
		if err != nil {
			t.Fatal(err)
		}
		only, err := NewClient(ClientConfig{Node: nd, Servers: []stack.Addr{lag.addr}, Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		h := &linHistory{t0: time.Now()}
		put := func(key, value string) {
			t.Helper()
			o := linOp{op: OpPut, key: key, value: value, call: h.now()}
			if o.wr, err = main.Put(ctx, key, []byte(value)); err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
			h.add(o)
		}
		put("k0", "v1")
		for lag.srv.Machine().Revision() < h.ops[0].wr.Rev {
			if ctx.Err() != nil {
				t.Fatal("the follower did not apply the first put")
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.isolate(lag.addr, "sim:c1")
		put("k0", "v2")
		put("k1", "w")
		puts := h.ops

		get := linOp{client: 1, op: OpGet, key: "k0", call: h.now()}
		kv, err := only.Get(ctx, "k0", SequentialRead())
		if err != nil || string(kv.Value) != "v1" {
			t.Fatalf("sequential get at the cut-off server: %s %v, want the stale v1 (else this shows nothing)", kvString(kv), err)
		}
		get.found, get.kv = true, kv
		h.add(get)
		if _, err := checkHistory(linKeys, h.ops, 5*time.Second, "", true); err == nil || !strings.Contains(err.Error(), "key k0: history") {
			t.Fatalf("a stale sequential get passed the check: %v", err)
		}

		scan := linOp{client: 1, op: OpScan, key: "k0", call: h.now()}
		resp, err := only.do(ctx, &Request{Op: OpScan, Key: "k0", Sequential: true})
		if err != nil {
			t.Fatalf("sequential scan at the cut-off server: %v", err)
		}
		scan.kvs, scan.more, scan.rev = resp.KVs, resp.More, resp.Rev
		h.add(scan)
		// The scan alone beside the put of k1 it missed.
		hk1 := []linOp{puts[2], h.ops[len(h.ops)-1]}
		if _, err := checkHistory([]string{"k1"}, hk1, 5*time.Second, "", true); err == nil || !strings.Contains(err.Error(), "key k1: history") {
			t.Fatalf("a scan missing k1 passed the check: %v (scan %v)", err, &h.ops[len(h.ops)-1])
		}

		sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
		kv, err = only.Get(sctx, "k0")
		scancel()
		if err == nil {
			t.Fatalf("a linearizable get completed at a cut-off server: %s", kvString(kv))
		}
		c.heal()
		if kv, err = only.Get(ctx, "k0"); err != nil || string(kv.Value) != "v2" {
			t.Fatalf("linearizable get after reconnecting: %s %v", kvString(kv), err)
		}
	}
}
