package wormlog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
	"strata/wor"
)

var engines = []string{"paxos", "chain"}

func testLogger() *slog.Logger {
	if os.Getenv("STRATA_LOG_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// cluster is three in-memory wormservers, log servers and clients on a
// real-time simulated network (stack/sim): nodes at sim:wN, sim:lN-inc,
// sim:cN.
type cluster struct {
	t       *testing.T
	rt      *sim.RealTime
	engine  string
	specs   []stack.Spec
	wors    []stack.Addr
	mu      sync.Mutex
	inc     uint64
	nodes   []*stack.Node
	servers map[uint64]*logServer // by id
	addrs   []stack.Addr          // log servers' addresses, by id-1
}

type logServer struct {
	addr stack.Addr
	srv  *Server
}

const testSegment = 64

func newCluster(t *testing.T, seed uint64, engine string, link sim.Link) *cluster {
	t.Helper()
	rt := sim.NewRealTime(seed)
	t.Cleanup(rt.Close)
	rt.Do(func(n *sim.Net) { n.SetDefault(link) })
	ch, err := layers.Configure([]stack.Prop{stack.Reliable, stack.Fragment, stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, rt: rt, engine: engine, specs: ch.Specs, servers: map[uint64]*logServer{}}
	for i := range 3 {
		a := stack.Addr(fmt.Sprintf("sim:w%d", i))
		nd := c.node(a)
		srv := wor.NewServer(nil)
		nd.HandleAsync(srv.HandleAsync)
		srv.SetNotifier(func(to stack.Addr, msg []byte) { _ = nd.Send(to, msg) })
		c.wors = append(c.wors, a)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		var ss []*Server
		for _, s := range c.servers {
			ss = append(ss, s.srv)
		}
		nodes := c.nodes
		c.mu.Unlock()
		for _, s := range ss {
			s.Close()
		}
		for _, n := range nodes {
			n.Close()
		}
	})
	return c
}

func (c *cluster) node(a stack.Addr) *stack.Node {
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

// worClient is a WOR client on nd.
func (c *cluster) worClient(nd *stack.Node) *wor.Client {
	c.t.Helper()
	c.mu.Lock()
	c.inc++
	id := c.inc
	c.mu.Unlock()
	var e wor.Engine
	var err error
	if c.engine == "chain" {
		e, err = wor.NewChain(nd, c.wors, id, 250*time.Millisecond)
	} else {
		e, err = wor.NewPaxos(nd, c.wors, id, 250*time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return wor.NewClient(e)
}

// startServer starts log server id (1-based) at sim:l<id>; a restart
// comes back at the same address.
func (c *cluster) startServer(id uint64) *Server {
	c.t.Helper()
	a := stack.Addr(fmt.Sprintf("sim:l%d", id))
	c.rt.Do(func(n *sim.Net) { n.Restart(a) })
	nd := c.node(a)
	srv, err := StartServer(ServerConfig{Node: nd, Client: c.worClient(nd), ID: id, Base: 100, SegmentSize: testSegment,
		Heartbeat: 20 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.servers[id] = &logServer{addr: a, srv: srv}
	for uint64(len(c.addrs)) < id {
		c.addrs = append(c.addrs, stack.Addr(fmt.Sprintf("sim:l%d", len(c.addrs)+1)))
	}
	c.mu.Unlock()
	return srv
}

// kill crashes log server id: its address drops off the network, then
// it stops.
func (c *cluster) kill(id uint64) {
	c.mu.Lock()
	s := c.servers[id]
	delete(c.servers, id)
	c.mu.Unlock()
	c.rt.Do(func(n *sim.Net) { n.Crash(s.addr) })
	s.srv.Close()
}

// sequencer waits until some live server leads and returns its id.
func (c *cluster) sequencer(ctx context.Context) (uint64, error) {
	for {
		c.mu.Lock()
		for id, s := range c.servers {
			if s.srv.Stats().Sequencer {
				c.mu.Unlock()
				return id, nil
			}
		}
		c.mu.Unlock()
		if !sleep(ctx, 5*time.Millisecond) {
			return 0, fmt.Errorf("no sequencer: %w", ctx.Err())
		}
	}
}

// client returns a log client at sim:c<n>.
func (c *cluster) client(n int, hole time.Duration) *Client {
	c.t.Helper()
	nd := c.node(stack.Addr(fmt.Sprintf("sim:c%d", n)))
	c.mu.Lock()
	addrs := append([]stack.Addr(nil), c.addrs...)
	c.mu.Unlock()
	cl, err := NewClient(ClientConfig{Node: nd, WOR: c.worClient(nd), Servers: addrs, Base: 100, SegmentSize: testSegment,
		HoleTimeout: hole, RequestTimeout: 200 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}
