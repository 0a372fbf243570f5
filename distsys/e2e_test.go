package distsys_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/mpcal/testdata/gogen/echo"
	"strata/mpcal/testdata/gogen/lock"
	"strata/stack"
	"strata/stack/layers"
)

// nodes opens n stack nodes on loopback UDP with reliable FIFO delivery
// and RPC (for the mailboxes' two-phase commit).
func nodes(t *testing.T, n int) []*stack.Node {
	t.Helper()
	var out []*stack.Node
	for range n {
		nd, err := layers.Listen("udp:127.0.0.1:0", "Reliable,FIFO,RPC")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		out = append(out, nd)
	}
	return out
}

// TestLockServiceEndToEnd runs the lock service compiled from
// mpcal/testdata/gogen/lock/LockService.tla (PGo Listing 2): one server
// and three clients, each archetype on its own stack node on loopback
// UDP, exchanging messages through distsys.Mailboxes. Every client
// records entering and leaving the critical section through an output
// channel resource. A client commits "leave" before its unlock message
// leaves (resources commit in the order first touched), and the next
// client can only enter after the server has received that unlock, so
// the channel's order is the real order: the test asserts no two clients
// are ever inside at once (mutual exclusion) and that every client
// entered Rounds times (progress).
func TestLockServiceEndToEnd(t *testing.T) {
	for name, opt := range mailboxModes {
		t.Run(name, func(t *testing.T) { runLock(t, 3, 5, opt) })
	}
}

// mailboxModes are the mailbox options the end-to-end tests run with.
// With LastAgent, the lock clients' sections that send also write the cs
// output channel (not private), so they keep the two-phase protocol; the
// server's sends and the echo's go as last agents.
var mailboxModes = map[string]distsys.MailboxOptions{
	"two-phase":  {},
	"relaxed":    {Relaxed: true},
	"last-agent": {LastAgent: true},
}

func runLock(t *testing.T, clients, rounds int, opt distsys.MailboxOptions) {
	m, err := lock.New(lock.Constants{NumClients: tla.Int(int64(clients)), Rounds: tla.Int(int64(rounds))})
	if err != nil {
		t.Fatal(err)
	}
	ns := nodes(t, clients+1)
	var peers []distsys.Peer
	for i, n := range ns {
		peers = append(peers, distsys.Peer{ID: tla.Int(int64(i)), Addr: n.Local()})
	}
	cs := make(chan tla.Value, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()

	run := func(arch *distsys.Archetype, id int, opts ...distsys.Option) (*distsys.Context, error) {
		mb, err := distsys.NewMailboxes(ns[id], tla.Int(int64(id)), peers, opt)
		if err != nil {
			return nil, err
		}
		opts = append(opts, distsys.BindIndexed("network", mb), distsys.WithSeed(uint64(id)))
		return distsys.NewContext(arch, tla.Int(int64(id)), opts...)
	}
	server, err := run(m.AServer(), 0)
	if err != nil {
		t.Fatal(err)
	}
	serverErr := make(chan error, 1)
	go func() { serverErr <- server.Run(serverCtx) }() // ends when serverCtx is cancelled

	var wg sync.WaitGroup
	clientErrs := make([]error, clients+1) // each index written by its own goroutine only
	for id := 1; id <= clients; id++ {
		c, err := run(m.AClient(), id, distsys.BindRef("cs", distsys.NewOutput(cs)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); clientErrs[id] = c.Run(ctx) }()
	}
	go func() { wg.Wait(); close(cs) }()

	inside := tla.Value{} // the client in the critical section, if valid
	entered := map[int64]int{}
	events := 0
	for ev := range cs {
		events++
		kind, _ := tla.Apply(ev, tla.Int(1))
		who, _ := tla.Apply(ev, tla.Int(2))
		switch kind.String() {
		case `"enter"`:
			if inside.IsValid() {
				t.Fatalf("mutual exclusion violated: %v entered while %v is inside (event %d)", who, inside, events)
			}
			inside = who
			n, _ := who.AsInt64()
			entered[n]++
		case `"leave"`:
			if !tla.Equal(inside, who) {
				t.Fatalf("%v left but %v was inside", who, inside)
			}
			inside = tla.Value{}
		default:
			t.Fatalf("unexpected event %v", ev)
		}
	}
	for id := 1; id <= clients; id++ {
		if clientErrs[id] != nil {
			t.Fatalf("client %d: %v", id, clientErrs[id])
		}
		if entered[int64(id)] != rounds {
			t.Errorf("client %d entered %d times, want %d", id, entered[int64(id)], rounds)
		}
	}
	stopServer()
	if err := <-serverErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("server: %v, want context.Canceled", err)
	}
	if events != 2*clients*rounds {
		t.Fatalf("%d events, want %d", events, 2*clients*rounds)
	}
}

// TestEchoEndToEnd runs the echo service compiled from
// mpcal/testdata/gogen/echo/Echo.tla: the client sends 20 numbered
// requests through the mailbox resource, the server replies with the
// number doubled (through either branch: a macro call or a with), and
// the client's output channel must receive 2, 4, ..., 40 in order; the
// client's final print must reach its output.
func TestEchoEndToEnd(t *testing.T) {
	for name, opt := range mailboxModes {
		t.Run(name, func(t *testing.T) { runEcho(t, opt) })
	}
}

func runEcho(t *testing.T, opt distsys.MailboxOptions) {
	const n = 20
	server, client := tla.String("server"), tla.String("client")
	m, err := echo.New(echo.Constants{NumRequests: tla.Int(n), ServerID: server, ClientID: client})
	if err != nil {
		t.Fatal(err)
	}
	ns := nodes(t, 2)
	peers := []distsys.Peer{{ID: server, Addr: ns[0].Local()}, {ID: client, Addr: ns[1].Local()}}
	smb, err := distsys.NewMailboxes(ns[0], server, peers, opt)
	if err != nil {
		t.Fatal(err)
	}
	cmb, err := distsys.NewMailboxes(ns[1], client, peers, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan tla.Value, n)
	var printed bytes.Buffer
	sc, err := distsys.NewContext(m.AEchoServer(), server, distsys.BindIndexed("net", smb))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := distsys.NewContext(m.AEchoClient(), client, distsys.BindIndexed("net", cmb),
		distsys.BindRef("out", distsys.NewOutput(out)), distsys.WithOutput(&printed))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	serr := make(chan error, 1)
	go func() { serr <- sc.Run(sctx) }()
	if err := cc.Run(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-serr; !errors.Is(err, context.Canceled) {
		t.Fatalf("server: %v", err)
	}
	close(out)
	want := int64(2)
	for v := range out {
		if got, _ := v.AsInt64(); got != want {
			t.Fatalf("reply %v, want %d", v, want)
		}
		want += 2
	}
	if want != 2*n+2 {
		t.Fatalf("got %d replies, want %d", want/2-1, n)
	}
	if got := printed.String(); got != "<<\"client done\", \"client\">>\n" {
		t.Fatalf("print output %q", got)
	}
	if served, _ := sc.Local("served"); served.String() != "20" {
		t.Fatalf("server served %v requests, want 20", served)
	}
	if smb.Dropped()+cmb.Dropped() != 0 {
		t.Fatalf("dropped messages: %d, %d", smb.Dropped(), cmb.Dropped())
	}
}

// TestGeneratedMissingConstant: New names the CONSTANTS declaration of a
// constant left out.
func TestGeneratedMissingConstant(t *testing.T) {
	_, err := lock.New(lock.Constants{NumClients: tla.Int(2)})
	if err == nil || err.Error() != "LockService.tla:11:23: constant Rounds is not set" {
		t.Fatalf("err = %v", err)
	}
}

// TestGeneratedMissingBinding: an archetype whose ref is not bound is
// refused at construction, naming the parameter's position.
func TestGeneratedMissingBinding(t *testing.T) {
	m, err := lock.New(lock.Constants{NumClients: tla.Int(2), Rounds: tla.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = distsys.NewContext(m.AClient(), tla.Int(1), distsys.BindIndexed("network", distsys.NewLocalMap(tla.Tuple())))
	if err == nil || !strings.Contains(err.Error(), "LockService.tla:") || !strings.Contains(err.Error(), "parameter cs is not bound (use distsys.BindRef)") {
		t.Fatalf("err = %v", err)
	}
	_, err = distsys.NewContext(m.AClient(), tla.Int(1), distsys.BindRef("network", distsys.NewLocal(tla.Tuple())))
	if err == nil || !strings.Contains(err.Error(), "not a plain ref (BindRef)") {
		t.Fatalf("err = %v", err)
	}
}
