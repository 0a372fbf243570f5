package smr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/internal/testseed"
)

// The key-value model the histories are checked against: per key a
// string ("" absent). put returns the old value; get (a proposed read)
// and read (Read(Linearizable)) return the value. A put whose outcome is
// unknown may take effect at any later time, or never: its return is
// placed at the end of the history and it may or may not set the value.
type kvIn struct {
	op, key, val string // op: "put", "get", "read"
}

type kvOut struct {
	val     string
	unknown bool
}

var kvModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(kvIn).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(string), input.(kvIn), output.(kvOut)
		switch {
		case in.op == "put" && out.unknown:
			return []any{s, in.val}
		case in.op == "put":
			if out.val == s {
				return []any{in.val}
			}
		default:
			if out.val == s {
				return []any{s}
			}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvIn), output.(kvOut)
		if out.unknown {
			return fmt.Sprintf("%s(%s, %s) -> unknown", in.op, in.key, in.val)
		}
		return fmt.Sprintf("%s(%s, %s) -> %q", in.op, in.key, in.val, out.val)
	},
}

// history collects operations from concurrent clients.
type history struct {
	mu  sync.Mutex
	t0  time.Time
	ops []porcupine.Operation
}

func (h *history) now() int64 { return int64(time.Since(h.t0)) }

func (h *history) add(client int, in kvIn, call int64, out kvOut) {
	ret := h.now()
	if out.unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

func describeHistory(ops []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "\n  client %d [%d, %d] %s", op.ClientId, op.Call, op.Return, kvModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// TestLinearizable: clients put and get through Propose (via the leader)
// and read with Read(Linearizable) at random replicas — followers
// included — over a lossy, duplicating, reordering network, while the
// leader crashes or is partitioned away and a new one takes over; the
// history must be linearizable against a key-value map.
func TestLinearizable(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			total := 0
			for seed := range testseed.Each(t, testseed.Fresh(2)...) {
				total += linRun(t, seed, engine)
			}
			t.Logf("%s: %d operations checked", engine, total)
		})
	}
}

func linRun(t *testing.T, seed uint64, engine string) int {
	rng := rand.New(rand.NewPCG(seed, 3))
	c := newWorCluster(t, seed, engine, true)
	g := newGroup(t, c, testConfig())
	for id := uint64(1); id <= 3; id++ {
		g.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := g.member(1).rep.Campaign(ctx); err != nil {
		t.Fatalf("campaign: %v", err)
	}
	h := &history{t0: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range 5 {
		crng := rand.New(rand.NewPCG(seed, uint64(10+k)))
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", crng.IntN(3))
				octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
				call := h.now()
				switch crng.IntN(3) {
				case 0:
					v := fmt.Sprintf("c%d-%d", k, i)
					res, err := g.propose(octx, []byte(fmt.Sprintf("put %s %s c%d-%d", key, v, k, i)))
					switch {
					case err == nil:
						h.add(k, kvIn{"put", key, v}, call, kvOut{val: string(res)})
					case !errors.Is(err, ErrNotLeader):
						h.add(k, kvIn{"put", key, v}, call, kvOut{unknown: true})
					}
				case 1:
					res, err := g.propose(octx, []byte(fmt.Sprintf("get %s c%d-%d", key, k, i)))
					if err == nil {
						h.add(k, kvIn{"get", key, ""}, call, kvOut{val: string(res)})
					}
				default:
					live := g.live()
					m := live[crng.IntN(len(live))]
					var v string
					if err := m.rep.Read(octx, Linearizable, func() { v = m.sm.get(key) }); err == nil {
						h.add(k, kvIn{"read", key, ""}, call, kvOut{val: v})
					}
				}
				ocancel()
			}
		})
	}
	// A leader change in the middle of the run.
	sleep(ctx, time.Duration(200+rng.IntN(200))*time.Millisecond)
	old, err := g.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	crash := rng.IntN(2) == 0
	if crash {
		g.kill(old.id)
	} else {
		c.isolate(old.addr)
	}
	if _, err := g.leaderOtherThan(ctx, old.id); err != nil {
		t.Fatalf("%v; state:%s", err, g.dump())
	}
	sleep(ctx, time.Duration(300+rng.IntN(300))*time.Millisecond)
	if !crash {
		c.isolate()
		sleep(ctx, 200*time.Millisecond)
	}
	// Enough operations to be worth checking, however slow the machine.
	for {
		h.mu.Lock()
		n := len(h.ops)
		h.mu.Unlock()
		if n >= 60 || !sleep(ctx, 50*time.Millisecond) {
			break
		}
	}
	close(stop)
	wg.Wait()
	h.mu.Lock()
	ops := h.ops
	h.mu.Unlock()
	if len(ops) < 60 {
		t.Fatalf("seed %d: only %d operations completed in 40 s; state:%s", seed, len(ops), g.dump())
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel.ToModel(), ops, 20*time.Second)
	if res != porcupine.Ok {
		if dir := t.TempDir(); res == porcupine.Illegal {
			_ = porcupine.VisualizePath(kvModel.ToModel(), info, dir+"/history.html")
		}
		t.Fatalf("seed %d: history of %d operations is %v:%s", seed, len(ops), res, describeHistory(ops))
	}
	return len(ops)
}

// TestCheckerFlagsStaleReads shows the checker is not vacuous: a replica
// cut off from the WOR space serves a Sequential read from its stale
// state after a put completed elsewhere, and porcupine rejects that
// history; a Linearizable read at the same replica does not return the
// stale value (it cannot complete while cut off, and sees the put once
// reconnected).
func TestCheckerFlagsStaleReads(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(1)...) {
		c := newWorCluster(t, seed, "paxos", false)
		g := newGroup(t, c, testConfig())
		for id := uint64(1); id <= 3; id++ {
			g.start(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := g.member(1).rep.Campaign(ctx); err != nil {
			t.Fatalf("campaign: %v", err)
		}
		lagging := g.member(3)
		c.isolate(lagging.addr)
		h := &history{t0: time.Now()}
		call := h.now()
		res, err := g.propose(ctx, []byte("put k v1 w1"))
		if err != nil {
			t.Fatal(err)
		}
		h.add(0, kvIn{"put", "k", "v1"}, call, kvOut{val: string(res)})
		call = h.now()
		var v string
		if err := lagging.rep.Read(ctx, Sequential, func() { v = lagging.sm.get("k") }); err != nil {
			t.Fatal(err)
		}
		h.add(1, kvIn{"read", "k", ""}, call, kvOut{val: v})
		if v == "v1" {
			t.Fatalf("the cut-off replica saw the put: the test shows nothing")
		}
		if porcupine.CheckOperations(kvModel.ToModel(), h.ops) {
			t.Fatalf("a stale sequential read passed the linearizability check:%s", describeHistory(h.ops))
		}
		// Linearizable at the same replica: no stale answer.
		sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = lagging.rep.Read(sctx, Linearizable, func() { v = lagging.sm.get("k") })
		scancel()
		if err == nil {
			t.Fatalf("a linearizable read completed at a cut-off replica, value %q", v)
		}
		c.isolate()
		if err := lagging.rep.Read(ctx, Linearizable, func() { v = lagging.sm.get("k") }); err != nil || v != "v1" {
			t.Fatalf("linearizable read after reconnecting: %q, %v", v, err)
		}
	}
}
