package wor

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
)

// Inputs and outputs of the write-once register model.
type linIn struct {
	write bool
	value string
}

type linOut struct {
	kind  string // "ok", "written", "value", "unwritten", "unknown"
	value string
}

// writeOnceModel: the state is "" (unwritten) or the value. A write whose
// outcome is unknown (preempted, timed out) may take effect at any later
// time, so its return is placed at the end of the history and it may or
// may not set the value.
var writeOnceModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{h} },
	Init:      func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(string), input.(linIn), output.(linOut)
		if in.write {
			switch out.kind {
			case "ok":
				if s == "" {
					return []any{in.value}
				}
			case "written": // our capture found out.value, and our write completed it
				if s == "" || s == out.value {
					return []any{out.value}
				}
			case "unknown":
				if s == "" {
					return []any{"", in.value}
				}
				return []any{s}
			}
			return nil
		}
		switch out.kind {
		case "value":
			if s == out.value {
				return []any{s}
			}
		case "unwritten":
			if s == "" {
				return []any{s}
			}
		case "unknown":
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linIn), output.(linOut)
		if in.write {
			return fmt.Sprintf("write(%s) -> %s %s", in.value, out.kind, out.value)
		}
		return fmt.Sprintf("read() -> %s %s", out.kind, out.value)
	},
}

// TestLinearizableUnderFaults: clients race to write and read a few
// registers over a simulated network that loses, duplicates, reorders and
// partitions; every per-address history must be linearizable against a
// write-once register, and no two clients may ever see different values.
//
// In the "persistent" variants the servers keep their state in journals
// on crash-simulating disks, and one server crashes (keeping a random
// subset of its unbarriered writes) and restarts from its journal with a
// new incarnation during the run.
func TestLinearizableUnderFaults(t *testing.T) {
	for _, v := range []struct {
		name, engine string
		persistent   bool
		seeds        int
	}{{"paxos", "paxos", false, 150}, {"chain", "chain", false, 150}, {"paxos-persistent", "paxos", true, 100}, {"chain-persistent", "chain", true, 60}} {
		engine := v.engine
		t.Run(v.name, func(t *testing.T) {
			total := 0
			for seed := range testseed.Each(t, testseed.Fresh(v.seeds)...) {
				n, err := linRun(t, seed, engine, v.persistent)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				total += n
			}
			t.Logf("%s: %d operations checked", v.name, total)
		})
	}
}

func linRun(t *testing.T, seed uint64, engine string, persistent bool) (int, error) {
	return linRunWith(t, seed, linOpts{engine: engine, persistent: persistent, corrupt: -1})
}

// linOpts are a campaign run's parameters beyond the seed.
type linOpts struct {
	engine     string
	persistent bool
	// ec engine: its plan (servers: plan.N(); other engines use 3),
	// whether the plan is used without Validate (to show a broken one
	// caught), and a server (its index, -1: none) whose replies carry a
	// damaged split.
	plan      ECPlan
	unchecked bool
	corrupt   int
	corrupted *int // if not nil, counts the replies damaged
	// outcomes, if not nil, counts the operations by outcome kind.
	outcomes map[string]int
	// leader: the ec clients hand preempted writes to a leader node
	// (leader fallback); leaderServed counts the writes it was handed.
	leader       bool
	leaderServed *int
	// delegate: the ec clients write with Propose, Phase 2 delegated to a
	// delegate node (partial delegation); delegated counts the delegate
	// requests it was sent, fellBack the proposals that ran both phases
	// from the client after all (the delegate failed or was cut off).
	delegate  bool
	delegated *int
	// keyed: the clients append versions to keyed logs (Latest, then
	// ProposeVersion of the next version, then sometimes TrimBelow) and
	// read their latest versions, checked against keyedLogModel; collected
	// counts the floors raised.
	keyed     bool
	collected *int
	// wrap, if set, replaces each client's engine (a broken one, to show
	// the campaign catching it).
	wrap func(Engine) Engine
	// onServer, if set, is called with each server as it is made
	// (index, server), before it serves (trace recording, trace_test.go).
	onServer func(i int, s *Server)
}

// corruptReply damages the split in a reply, as a faulty disk or
// memory would: a flipped byte, a wrong split index, or a truncation.
func corruptReply(rng *rand.Rand, b []byte) []byte {
	r, err := decodeResponse(b)
	if err != nil || !r.Has || len(r.Value) == 0 {
		return b
	}
	v := append([]byte(nil), r.Value...)
	switch rng.IntN(3) {
	case 0:
		v[rng.IntN(len(v))] ^= byte(1 + rng.IntN(255))
	case 1:
		if len(v) >= 4 {
			v[3] ^= 1 // the index's low byte
		}
	default:
		v = v[:rng.IntN(len(v))]
	}
	r.Value = v
	return r.encode()
}

func linRunWith(t *testing.T, seed uint64, o linOpts) (int, error) {
	engine, persistent := o.engine, o.persistent
	nservers := 3
	if engine == "ec" {
		nservers = o.plan.N()
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	net := sim.New(seed)
	net.SetDefault(sim.Link{
		Delay:   time.Duration(1+rng.IntN(5)) * time.Millisecond,
		Jitter:  time.Duration(rng.IntN(3)) * time.Millisecond,
		Loss:    rng.Float64() * 0.2,
		Dup:     rng.Float64() * 0.1,
		Reorder: rng.Float64() * 0.2,
	})
	ch, err := layers.Configure([]stack.Prop{stack.RPC})
	if err != nil {
		return 0, err
	}
	incarnation := uint64(1)
	mk := func(a stack.Addr) (*stack.Node, error) {
		tr, err := net.Endpoint(a)
		if err != nil {
			return nil, err
		}
		incarnation++
		return stack.NewNode(tr, net.Clock(), layers.Build(ch.Specs, stack.Config{Local: a, Epoch: incarnation, RTO: 5 * time.Millisecond, MaxRTO: 40 * time.Millisecond}), stack.NodeOptions{}), nil
	}
	var replicas []stack.Addr
	var servers []*Server
	type persisted struct {
		d    *disk.CrashDisk
		j    *journal.Journal
		node *stack.Node
	}
	var disks []*persisted
	defer func() {
		for _, p := range disks {
			if p.j != nil {
				p.j.Close()
			}
		}
	}()
	// start opens server i on its disk (persistent) or in memory.
	start := func(i int) error {
		a := stack.Addr(fmt.Sprintf("sim:s%d", i))
		nd, err := mk(a)
		if err != nil {
			return err
		}
		s := NewServer(nil)
		if persistent {
			p := disks[i]
			if p.j, err = journal.Open(p.d, journal.Options{}); err != nil {
				return fmt.Errorf("server %d: open journal: %w", i, err)
			}
			if s, err = NewPersistentServer(p.j, nil); err != nil {
				return fmt.Errorf("server %d: recover: %w", i, err)
			}
			p.node = nd
		}
		if o.onServer != nil {
			o.onServer(i, s)
		}
		if i == o.corrupt && engine == "ec" {
			crng := rand.New(rand.NewPCG(seed, 99))
			nd.Handle(func(from stack.Addr, req []byte) []byte {
				resp := s.Handle(from, req)
				bad := corruptReply(crng, resp)
				if o.corrupted != nil && !bytes.Equal(bad, resp) {
					*o.corrupted++ // the simulator runs one event at a time
				}
				return bad
			})
		} else {
			nd.Handle(s.Handle)
		}
		s.SetNotifier(func(to stack.Addr, msg []byte) { _ = nd.Send(to, msg) })
		if i < len(servers) {
			servers[i] = s
		} else {
			replicas, servers = append(replicas, a), append(servers, s)
		}
		return nil
	}
	for i := 0; i < nservers; i++ {
		if persistent {
			d := disk.NewCrashDisk(2 + 64 + 256)
			if err := journal.Format(d, 64); err != nil {
				return 0, err
			}
			disks = append(disks, &persisted{d: d})
		}
		if err := start(i); err != nil {
			return 0, err
		}
	}
	var startErr error
	if persistent {
		// One server crashes and comes back from what its disk kept.
		net.AfterFunc(time.Duration(10+rng.IntN(60))*time.Millisecond, func() {
			i := rng.IntN(nservers)
			p := disks[i]
			net.Crash(replicas[i])
			p.node.Close()
			crashed := p.d.CrashRandom(rng)
			p.j.Close() // stops its goroutines; what it writes goes to the old disk
			p.d, p.j = crashed, nil
			net.AfterFunc(time.Duration(5+rng.IntN(50))*time.Millisecond, func() {
				net.Restart(replicas[i])
				startErr = start(i)
			})
		})
	}
	const addrs = 3
	type rec struct {
		addr uint64
		op   porcupine.Operation
	}
	var history []rec
	nclients := 2 + rng.IntN(4)
	var leaderAddr stack.Addr
	if (o.leader || o.delegate) && engine == "ec" {
		// One proposer node serves both roles (ServeECLeader).
		leaderAddr = "sim:leader"
		nd, err := mk(leaderAddr)
		if err != nil {
			return 0, err
		}
		le, err := NewEC(nd, replicas, 1000, 100*time.Millisecond, o.plan)
		if err != nil {
			return 0, err
		}
		// Count the requests handed over: wrap the handler.
		h := serveLeader(le)
		nd.HandleAsync(func(from stack.Addr, body []byte, respond func([]byte)) {
			// The simulator runs one event at a time.
			switch {
			case len(body) > 0 && body[0] == delegateMagic && o.delegated != nil:
				*o.delegated++
			case len(body) > 0 && body[0] == leaderMagic && o.leaderServed != nil:
				*o.leaderServed++
			}
			h(from, body, respond)
		})
	}
	for k := 0; k < nclients; k++ {
		nd, err := mk(stack.Addr(fmt.Sprintf("sim:c%d", k)))
		if err != nil {
			return 0, err
		}
		var c Engine
		switch {
		case engine == "chain":
			c, err = NewChain(nd, replicas, uint64(k+1), 100*time.Millisecond)
		case engine == "ec" && o.unchecked:
			c, err = newEC(nd, replicas, uint64(k+1), 100*time.Millisecond, o.plan)
		case engine == "ec":
			c, err = NewEC(nd, replicas, uint64(k+1), 100*time.Millisecond, o.plan)
		default:
			c, err = NewPaxos(nd, replicas, uint64(k+1), 100*time.Millisecond)
		}
		if ec, ok := c.(*EC); ok && leaderAddr != "" {
			if o.leader {
				ec.SetLeader(leaderAddr)
			}
			if o.delegate {
				ec.SetDelegate(leaderAddr)
			}
		}
		if err != nil {
			return 0, err
		}
		if o.wrap != nil {
			c = o.wrap(c)
		}
		crng := rand.New(rand.NewPCG(seed, uint64(k+2)))
		left := 8 + crng.IntN(8)
		var next func()
		next = func() {
			if left == 0 {
				return
			}
			left--
			addr := uint64(crng.IntN(addrs))
			call := int64(net.Now())
			if o.keyed {
				keyedOp(c, crng, 7+addr, fmt.Sprintf("c%d-%d", k, left), o.collected, func(in, out any) {
					ret := int64(net.Now())
					if out.(keyOut).kind == "unknown" {
						ret = math.MaxInt64
					}
					history = append(history, rec{addr, porcupine.Operation{ClientId: k, Input: in, Call: call, Output: out, Return: ret}})
					net.AfterFunc(time.Duration(crng.IntN(5))*time.Millisecond, next)
				})
				return
			}
			finish := func(in linIn, out linOut) {
				ret := int64(net.Now())
				if out.kind == "unknown" {
					ret = math.MaxInt64
				}
				history = append(history, rec{addr, porcupine.Operation{ClientId: k, Input: in, Call: call, Output: out, Return: ret}})
				net.AfterFunc(time.Duration(crng.IntN(5))*time.Millisecond, next)
			}
			if crng.IntN(2) == 0 {
				v := fmt.Sprintf("c%d-%d", k, left)
				in := linIn{write: true, value: v}
				written := func(err error) { finish(in, writeOutcome(err)) }
				if p, ok := c.(Proposer); ok && o.delegate {
					p.Propose(addr, []byte(v), written)
					return
				}
				c.Capture(addr, func(cid CaptureID, err error) {
					if err != nil {
						finish(in, linOut{kind: "unknown"}) // a failed capture writes nothing, "unknown" is weaker and also sound
						return
					}
					c.Write(addr, []byte(v), cid, written)
				})
				return
			}
			c.Read(addr, func(v []byte, err error) {
				switch {
				case err == nil:
					finish(linIn{}, linOut{kind: "value", value: string(v)})
				case errors.Is(err, ErrUnwritten):
					finish(linIn{}, linOut{kind: "unwritten"})
				default:
					finish(linIn{}, linOut{kind: "unknown"})
				}
			})
		}
		net.AfterFunc(time.Duration(crng.IntN(10))*time.Millisecond, next)
	}
	// A partition isolating one server for a while, then healing.
	net.AfterFunc(time.Duration(20+rng.IntN(40))*time.Millisecond, func() {
		iso := replicas[rng.IntN(nservers)]
		var rest []stack.Addr
		others := append(append([]stack.Addr(nil), replicas...), clientAddrs(nclients)...)
		if leaderAddr != "" {
			others = append(others, leaderAddr)
		}
		for _, a := range others {
			if a != iso {
				rest = append(rest, a)
			}
		}
		net.Partition([]stack.Addr{iso}, rest)
		net.AfterFunc(time.Duration(20+rng.IntN(60))*time.Millisecond, net.Heal)
	})
	net.Run(time.Minute)
	if startErr != nil {
		return 0, startErr
	}
	// Check each address separately, and write-once safety across all.
	byAddr := map[uint64][]porcupine.Operation{}
	for _, r := range history {
		if o.outcomes != nil {
			switch out := r.op.Output.(type) {
			case linOut:
				o.outcomes[out.kind]++
			case keyOut:
				o.outcomes[out.kind]++
			}
		}
		byAddr[r.addr] = append(byAddr[r.addr], r.op)
	}
	for addr, ops := range byAddr {
		if o.keyed {
			if err := checkKeyed(ops); err != nil {
				return len(history), fmt.Errorf("keyed log %d: %w", addr, err)
			}
			continue
		}
		if !porcupine.CheckOperations(writeOnceModel.ToModel(), ops) {
			return len(history), fmt.Errorf("address %d: history of %d operations is not linearizable: %v", addr, len(ops), describe(ops))
		}
		seen := ""
		for _, op := range ops {
			out := op.Output.(linOut)
			if out.kind == "value" || out.kind == "written" || (out.kind == "ok" && op.Input.(linIn).write) {
				v := out.value
				if out.kind == "ok" {
					v = op.Input.(linIn).value
				}
				if seen != "" && v != seen {
					return len(history), fmt.Errorf("address %d: two values observed: %q and %q", addr, seen, v)
				}
				seen = v
			}
		}
	}
	for i, s := range servers {
		if s.Conflicts != 0 {
			return len(history), fmt.Errorf("server %d saw two values at one ballot", i)
		}
	}
	if len(history) == 0 {
		return 0, errors.New("no operation completed")
	}
	return len(history), nil
}

// writeOutcome is what a write's (or a proposal's) result says happened.
func writeOutcome(err error) linOut {
	var we *WrittenError
	switch {
	case err == nil:
		return linOut{kind: "ok"}
	case errors.As(err, &we):
		return linOut{kind: "written", value: string(we.Value)}
	}
	return linOut{kind: "unknown"}
}

func clientAddrs(n int) []stack.Addr {
	var out []stack.Addr
	for k := 0; k < n; k++ {
		out = append(out, stack.Addr(fmt.Sprintf("sim:c%d", k)))
	}
	return out
}

func describe(ops []porcupine.Operation) string { return describeWith(writeOnceModel, ops) }

func describeWith(m porcupine.NondeterministicModel, ops []porcupine.Operation) string {
	var b bytes.Buffer
	for _, op := range ops {
		fmt.Fprintf(&b, "\n  client %d [%d, %d] %s", op.ClientId, op.Call, op.Return, m.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
