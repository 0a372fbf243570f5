package smr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
	"strata/wor"
)

// faults are the network's link settings for a run.
type faults struct {
	delay, jitter      time.Duration
	loss, dup, reorder float64
	clientTimeout      time.Duration
}

func drawFaults(rng *rand.Rand, lossy bool) faults {
	f := faults{delay: time.Duration(1+rng.IntN(2)) * time.Millisecond, jitter: time.Duration(rng.IntN(2)) * time.Millisecond, clientTimeout: 250 * time.Millisecond}
	if lossy {
		f.loss = rng.Float64() * 0.05
		f.dup = rng.Float64() * 0.05
		f.reorder = rng.Float64() * 0.2
	}
	return f
}

// worCluster is three in-memory wormservers on a real-time simulated
// network, and a factory for WOR clients (each on its own node, with its
// own client id).
type worCluster struct {
	t       *testing.T
	rt      *sim.RealTime // the network: loss, duplication, reordering, partitions, crashes
	engine  string
	servers []stack.Addr
	specs   []stack.Spec
	f       faults
	mu      sync.Mutex
	nextID  uint64
	nodes   []*stack.Node
	inc     uint64
	// persistent servers: each on a journal on a crash-simulating disk
	persistent bool
	disks      []*disk.CrashDisk
	journals   []*journal.Journal
	srvNodes   []*stack.Node
}

func newWorCluster(t *testing.T, seed uint64, engine string, lossy bool) *worCluster {
	return newWorClusterOpt(t, seed, engine, lossy, false)
}

// newWorClusterOpt: persistent servers keep their registers in journals
// on crash-simulating disks (values up to wor.MaxPersistentValue).
func newWorClusterOpt(t *testing.T, seed uint64, engine string, lossy, persistent bool) *worCluster {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	// Blocking code — wor.Client and the replicas' goroutines — runs over
	// the simulated network driven in real time: a seed replays the same
	// fault settings and fault schedule, not the same interleaving.
	rt := sim.NewRealTime(seed)
	t.Cleanup(rt.Close)
	c := &worCluster{t: t, rt: rt, engine: engine, f: drawFaults(rng, lossy), persistent: persistent}
	c.rt.Do(func(n *sim.Net) {
		n.SetDefault(sim.Link{Delay: c.f.delay, Jitter: c.f.jitter, Loss: c.f.loss, Dup: c.f.dup, Reorder: c.f.reorder})
	})
	ch, err := layers.Configure([]stack.Prop{stack.Reliable, stack.Fragment, stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	c.specs = ch.Specs
	for i := 0; i < 3; i++ {
		c.servers = append(c.servers, stack.Addr(fmt.Sprintf("sim:s%d", i)))
		if persistent {
			d := disk.NewCrashDisk(2 + 64 + 4096)
			if err := journal.Format(d, 64); err != nil {
				t.Fatal(err)
			}
			c.disks, c.journals, c.srvNodes = append(c.disks, d), append(c.journals, nil), append(c.srvNodes, nil)
		}
		c.startServer(i)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		nodes := c.nodes
		c.mu.Unlock()
		for _, n := range nodes {
			n.Close()
		}
		for _, j := range c.journals {
			if j != nil {
				j.Close()
			}
		}
	})
	return c
}

// startServer starts wormserver i: in memory, or recovering from its disk.
func (c *worCluster) startServer(i int) {
	c.t.Helper()
	nd := c.node(c.servers[i])
	srv := wor.NewServer(nil)
	if c.persistent {
		j, err := journal.Open(c.disks[i], journal.Options{})
		if err != nil {
			c.t.Fatalf("server %d: open journal: %v", i, err)
		}
		if srv, err = wor.NewPersistentServer(j, nil); err != nil {
			c.t.Fatalf("server %d: recover: %v", i, err)
		}
		c.journals[i], c.srvNodes[i] = j, nd
	}
	nd.HandleAsync(srv.HandleAsync)
	srv.SetNotifier(func(to stack.Addr, msg []byte) { _ = nd.Send(to, msg) })
}

// crashServer crashes persistent server i, keeping a random subset of its
// disk's unbarriered writes, and restarts it from its journal.
func (c *worCluster) crashServer(i int, rng *rand.Rand) {
	c.t.Helper()
	c.crash(c.servers[i])
	c.srvNodes[i].Close()
	crashed := c.disks[i].CrashRandom(rng)
	c.journals[i].Close() // its late writes go to the old disk
	c.disks[i], c.journals[i] = crashed, nil
	c.rt.Do(func(n *sim.Net) { n.Restart(c.servers[i]) })
	c.startServer(i)
}

func (c *worCluster) node(a stack.Addr) *stack.Node {
	c.t.Helper()
	tr, err := c.rt.Endpoint(a)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.inc++
	inc := c.inc
	c.mu.Unlock()
	nd := stack.NewNode(tr, stack.NewRealClock(),
		layers.Build(c.specs, stack.Config{Local: a, Epoch: inc, RTO: 20 * time.Millisecond, MaxRTO: 200 * time.Millisecond}), stack.NodeOptions{})
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	return nd
}

// client returns a new WOR client on a fresh node at address a.
func (c *worCluster) client(a stack.Addr) *wor.Client {
	c.t.Helper()
	nd := c.node(a)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	var e wor.Engine
	var err error
	if c.engine == "chain" {
		e, err = wor.NewChain(nd, c.servers, id, c.f.clientTimeout)
	} else {
		e, err = wor.NewPaxos(nd, c.servers, id, c.f.clientTimeout)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return wor.NewClient(e)
}

// isolate cuts addresses off from everyone else (nil heals).
func (c *worCluster) isolate(addrs ...stack.Addr) {
	c.rt.Do(func(n *sim.Net) {
		if len(addrs) == 0 {
			n.Heal()
			return
		}
		n.Partition(addrs)
	})
}

func (c *worCluster) crash(a stack.Addr) { c.rt.Do(func(n *sim.Net) { n.Crash(a) }) }

// group is a replication group of test replicas on a worCluster.
type group struct {
	t    *testing.T
	c    *worCluster
	cfg  Config // template: Client, ID, Addr filled per replica
	mu   sync.Mutex
	reps map[uint64]*member
	incs int // replicas started: each gets a node address of its own
}

type member struct {
	id   uint64
	addr stack.Addr
	rep  *Replica
	sm   *testSM
	gone bool
}

func newGroup(t *testing.T, c *worCluster, cfg Config) *group {
	g := &group{t: t, c: c, cfg: cfg, reps: map[uint64]*member{}}
	t.Cleanup(func() {
		g.mu.Lock()
		var ms []*member
		for _, m := range g.reps {
			ms = append(ms, m)
		}
		g.mu.Unlock()
		for _, m := range ms {
			m.rep.Close()
		}
	})
	return g
}

// eachEngine runs run once per engine (a subtest each) and seed.
func eachEngine(t *testing.T, run func(t *testing.T, seed uint64, engine string)) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				run(t, seed, engine)
			}
		})
	}
}

// ledGroup starts replicas 1-3 of cfg on c and makes replica 1 lead; the
// context it returns bounds the run (d).
func ledGroup(t *testing.T, c *worCluster, cfg Config, d time.Duration) (*group, context.Context) {
	t.Helper()
	g := newGroup(t, c, cfg)
	for id := uint64(1); id <= 3; id++ {
		g.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	if err := g.member(1).rep.Campaign(ctx); err != nil {
		t.Fatalf("campaign: %v", err)
	}
	return g, ctx
}

// start starts replica id (on a fresh node, so a restart is a new
// incarnation).
func (g *group) start(id uint64) *member {
	g.t.Helper()
	g.mu.Lock()
	inc := g.incs
	g.incs++
	g.mu.Unlock()
	a := stack.Addr(fmt.Sprintf("sim:r%d-%d", id, inc))
	cfg := g.cfg
	cfg.Client = g.c.client(a)
	cfg.ID = id
	cfg.Addr = fmt.Sprintf("kv-%d", id)
	sm := newTestSM()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := Start(ctx, cfg, sm)
	if err != nil {
		g.t.Fatalf("start replica %d: %v", id, err)
	}
	m := &member{id: id, addr: a, rep: rep, sm: sm}
	g.mu.Lock()
	if old := g.reps[id]; old != nil {
		old.rep.Close()
	}
	g.reps[id] = m
	g.mu.Unlock()
	return m
}

func (g *group) member(id uint64) *member {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reps[id]
}

func (g *group) live() []*member {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*member
	for _, m := range g.reps {
		if !m.gone {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *member) int { return cmp.Compare(a.id, b.id) })
	return out
}

// kill crashes a replica: its node drops off the network, then it stops.
func (g *group) kill(id uint64) {
	m := g.member(id)
	g.c.crash(m.addr)
	g.mu.Lock()
	m.gone = true
	g.mu.Unlock()
	m.rep.Close()
}

// leader waits until some live replica leads and returns it.
func (g *group) leader(ctx context.Context) (*member, error) {
	for {
		for _, m := range g.live() {
			if id, _, _, ok := m.rep.Leader(); ok && id == m.id {
				return m, nil
			}
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return nil, fmt.Errorf("no leader: %w", ctx.Err())
		}
	}
}

// propose sends cmd to the leader, following NotLeaderErrors (a proposal
// refused that way was not applied, so retrying is safe). It returns the
// result, or an error whose outcome is unknown.
func (g *group) propose(ctx context.Context, cmd []byte) ([]byte, error) {
	res, _, err := g.proposeVia(ctx, cmd)
	return res, err
}

// proposeVia is propose, also returning the replica that answered.
func (g *group) proposeVia(ctx context.Context, cmd []byte) ([]byte, uint64, error) {
	for {
		var last error
		// Replicas that say they lead, the newest epoch first (an old
		// leader cut off from the WOR space may not know yet).
		var leaders []*member
		epochs := map[uint64]uint64{}
		for _, m := range g.live() {
			if id, _, e, ok := m.rep.Leader(); ok && id == m.id {
				leaders = append(leaders, m)
				epochs[m.id] = e
			}
		}
		slices.SortFunc(leaders, func(a, b *member) int { return cmp.Compare(epochs[b.id], epochs[a.id]) })
		for _, m := range leaders {
			res, err := m.rep.Propose(ctx, cmd)
			if err == nil || !errors.Is(err, ErrNotLeader) {
				return res, m.id, err
			}
			last = err
		}
		if !sleep(ctx, 5*time.Millisecond) {
			if last == nil {
				last = ctx.Err()
			}
			return nil, 0, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		}
	}
}

// dump describes a replica's state, for failure messages.
func (m *member) dump() string {
	r := m.rep.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("replica %d: role %v cursor %v applied %d known %d owned %d pending %d lead %+v campaigning %v", m.id, r.role, r.cursor, r.applied, len(r.known), len(r.owned), len(r.pending), r.lead, r.campaigning != nil)
	if t := r.term; t != nil {
		s += fmt.Sprintf(" term{epoch %d first %d ready %v next %v inflight %d queue %d capEnd %v allocated %v}", t.epoch, t.first, t.ready, t.next, t.inflight, len(t.queue), t.capEnd, t.allocated)
	}
	return s
}

func (g *group) dump() string {
	var b strings.Builder
	for _, m := range g.live() {
		b.WriteString("\n  " + m.dump())
	}
	return b.String()
}
