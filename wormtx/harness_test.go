package wormtx

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
	"strata/wor"
)

// cluster is WormTX on the deterministic simulated network: 3 memory
// wormservers, n RMs and a TM, each peer with a node for its messages
// and one for its engine.
type cluster struct {
	t       *testing.T
	net     *sim.Net
	engine  string
	wors    []stack.Addr
	rmAddrs []stack.Addr
	tmAddr  stack.Addr
	rms     []*Peer
	stores  []*MemStore
	nodes   [][]*stack.Node // per RM: its nodes of the current incarnation
	incarn  []uint64
	tm      *Peer
	timeout time.Duration
	epoch   uint64
	specs   []stack.Spec
	rto     time.Duration
	// lost, if set, hears of the commits an RM's crash lost (applied
	// but not yet durable: the RM applies them again on recovery).
	lost func(rm int, txs []uint64)
	// noLearn: peers start learning no segment (see newCluster).
	noLearn bool
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newCluster starts n RMs and a TM over 3 memory wormservers; every peer
// learns the first vote segments from the start, unless noLearn (then a
// peer learns a segment only when a prepare names it, as strata tx serve
// does).
func newCluster(t *testing.T, seed uint64, link sim.Link, n int, engine string, balances map[string]int64, noLearn ...bool) *cluster {
	t.Helper()
	net := sim.New(seed)
	net.SetDefault(link)
	ch, err := layers.Configure([]stack.Prop{stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, net: net, engine: engine, specs: ch.Specs, timeout: 300 * time.Millisecond, rto: max(5*link.Delay, 5*time.Millisecond), tmAddr: "sim:tm", noLearn: len(noLearn) > 0 && noLearn[0]}
	for i := range 3 {
		a := stack.Addr(fmt.Sprintf("sim:w%d", i))
		nd := c.node(a)
		s := wor.NewServer(quiet())
		nd.Handle(s.Handle)
		s.SetNotifier(func(to stack.Addr, msg []byte) { _ = nd.Send(to, msg) })
		c.wors = append(c.wors, a)
	}
	for i := range n {
		c.rmAddrs = append(c.rmAddrs, stack.Addr(fmt.Sprintf("sim:rm%d", i)))
	}
	for i := range n {
		part := map[string]int64{}
		for k, v := range balances {
			if Partition(k, n) == uint32(i) {
				part[k] = v
			}
		}
		c.stores = append(c.stores, NewMemStore(part))
		c.rms = append(c.rms, nil)
		c.nodes = append(c.nodes, nil)
		c.incarn = append(c.incarn, 0)
	}
	for i := range n {
		c.start(i)
	}
	tmNode := c.node(c.tmAddr)
	tmEng, _ := c.newEngine(c.tmAddr+"-w", 1000)
	c.tm, err = NewPeer(Config{RMs: c.rmAddrs, TM: c.tmAddr, Node: tmNode, Engine: tmEng, VoteSeg: tmSeg, Learn: c.segs(), Timeout: c.timeout, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const tmSeg = 500

// rmSeg is RM i's vote segment in its k-th incarnation.
func rmSeg(i int, k uint64) uint64 { return 1000 + uint64(i)*100 + k }

// segs are the vote segments every peer learns from the start.
func (c *cluster) segs() []uint64 {
	if c.noLearn {
		return nil
	}
	segs := []uint64{tmSeg}
	for i := range c.rmAddrs {
		segs = append(segs, rmSeg(i, 0))
	}
	return segs
}

func (c *cluster) node(a stack.Addr) *stack.Node {
	tr, err := c.net.Endpoint(a)
	if err != nil {
		c.t.Fatal(err)
	}
	c.epoch++
	return stack.NewNode(tr, c.net.Clock(), layers.Build(c.specs, stack.Config{Local: a, Epoch: c.epoch, RTO: c.rto, MaxRTO: 8 * c.rto}), stack.NodeOptions{})
}

func (c *cluster) newEngine(a stack.Addr, id uint64) (Engine, *stack.Node) {
	nd := c.node(a)
	if c.engine == "chain" {
		e, err := wor.NewChain(nd, c.wors, id, c.timeout/3)
		if err != nil {
			c.t.Fatal(err)
		}
		return e, nd
	}
	e, err := wor.NewPaxos(nd, c.wors, id, c.timeout/3)
	if err != nil {
		c.t.Fatal(err)
	}
	return e, nd
}

// start opens RM i (again) on its store, as a new incarnation: a fresh
// client id for its ballots and a fresh vote segment.
func (c *cluster) start(i int) {
	k := c.incarn[i]
	a := c.rmAddrs[i]
	nd := c.node(a)
	eng, end := c.newEngine(a+"-w", uint64(1+i)+uint64(16*k))
	c.nodes[i] = []*stack.Node{nd, end}
	p, err := NewPeer(Config{ID: uint32(i), RMs: c.rmAddrs, TM: c.tmAddr, Node: nd, Engine: eng, VoteSeg: rmSeg(i, k), Learn: c.segs(), Store: c.stores[i], Timeout: c.timeout, Log: quiet()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.rms[i] = p
}

// crash stops RM i and cuts it off the network; its store keeps what
// was synced.
func (c *cluster) crash(i int) {
	c.rms[i].Close()
	if lost := c.stores[i].Crash(); c.lost != nil && len(lost) > 0 {
		c.lost(i, lost)
	}
	c.net.Crash(c.rmAddrs[i])
	c.net.Crash(c.rmAddrs[i] + "-w")
	for _, nd := range c.nodes[i] {
		nd.Close()
	}
}

// restart brings RM i back as a new incarnation.
func (c *cluster) restart(i int) {
	if !c.net.Crashed(c.rmAddrs[i]) {
		return // already back
	}
	c.incarn[i]++
	c.net.Restart(c.rmAddrs[i])
	c.net.Restart(c.rmAddrs[i] + "-w")
	c.start(i)
}

// primeAll captures every coordinator's first slots and lets the learner
// registrations land.
func (c *cluster) primeAll() {
	ready := 0
	c.tm.Prime(func() { ready++ })
	for _, p := range c.rms {
		p.Prime(func() { ready++ })
	}
	if !c.net.RunUntil(func() bool { return ready == len(c.rms)+1 }, time.Minute) {
		c.t.Fatal("the coordinators did not capture their first slots")
	}
	c.net.Run(time.Second)
}
