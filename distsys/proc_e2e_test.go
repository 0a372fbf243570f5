package distsys_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/mpcal/testdata/gogen/proc"
)

// refuseEveryOther wraps a resource and refuses every other pre-commit
// (the first, the third, ...), so each section that touches it aborts
// once after running to its end, calls and returns included, and is
// retried.
type refuseEveryOther struct {
	distsys.Resource
	calls, refused atomic.Int64
}

func (r *refuseEveryOther) PreCommit(ctx context.Context) error {
	if r.calls.Add(1)%2 == 1 {
		r.refused.Add(1)
		return &distsys.AbortError{Reason: "test: pre-commit refused"}
	}
	return r.Resource.PreCommit(ctx)
}

// idleInbox wraps the server's mailboxes and signals idle when a read of
// its own inbox finds it empty after want messages were received: the
// server is then inside Serve, waiting, with every request counted.
type idleInbox struct {
	distsys.IndexedResource
	self  tla.Value
	want  int
	idle  chan struct{}
	inbox *countingRead // made at the first Index(self): one resource per index
}

type countingRead struct {
	distsys.Resource
	in   *idleInbox
	read int // messages received; used by the server's Run goroutine only
}

func (w *idleInbox) Index(i tla.Value) (distsys.Resource, error) {
	r, err := w.IndexedResource.Index(i)
	if err != nil || !tla.Equal(i, w.self) {
		return r, err
	}
	if w.inbox == nil {
		w.inbox = &countingRead{Resource: r, in: w}
	}
	return w.inbox, nil
}

func (r *countingRead) Read(ctx context.Context) (tla.Value, error) {
	v, err := r.Resource.Read(ctx)
	switch {
	case err == nil:
		r.read++
	case errors.Is(err, distsys.ErrAborted) && r.read == r.in.want:
		select {
		case r.in.idle <- struct{}{}:
		default:
		}
	}
	return v, err
}

// TestProcEndToEnd runs the code generated from
// mpcal/testdata/gogen/proc/Proc.tla, which TestGoGenProcModel (mpcal)
// model-checks: a server whose loop calls Serve, which receives through
// its mailbox ref parameter, calls the recursive Fact with a ref to the
// server's local and tail-calls Reply with the mailbox; a client on
// another stack node that asks for 1!..3!, then tail-recurses through
// CountDown into a ref to its local trail. The client's out refuses
// every other pre-commit, so every section that writes it aborts once
// and is retried: among them the one that writes out and then calls
// CountDown. What the client writes must be exactly the model's
// Expected (read from Proc.tla), which holds only if the aborted call
// left no frame behind: a frame that survived an abort would make the
// return resume in CountDown's labels, and a call made twice would log
// the countdown twice. Afterwards the client's stack is empty and the
// server, stopped while Serve waits to receive, is one frame deep.
func TestProcEndToEnd(t *testing.T) {
	const file = "../mpcal/testdata/gogen/proc/Proc.tla"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "Expected == "); ok {
			want = strings.TrimSpace(rest)
		}
	}
	if want == "" {
		t.Fatalf("%s defines no Expected", file)
	}

	server, client := tla.Int(1), tla.Int(2)
	m, err := proc.New(proc.Constants{N: tla.Int(3), ServerID: server, ClientID: client})
	if err != nil {
		t.Fatal(err)
	}
	ns := nodes(t, 2)
	peers := []distsys.Peer{{ID: server, Addr: ns[0].Local()}, {ID: client, Addr: ns[1].Local()}}
	smb, err := distsys.NewMailboxes(ns[0], server, peers, distsys.MailboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmb, err := distsys.NewMailboxes(ns[1], client, peers, distsys.MailboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outs := make(chan tla.Value, 16)
	out := &refuseEveryOther{Resource: distsys.NewOutput(outs)}
	fast := distsys.WithBackoff(time.Millisecond, 5*time.Millisecond)
	idle := &idleInbox{IndexedResource: smb, self: server, want: 3, idle: make(chan struct{}, 1)}
	sc, err := distsys.NewContext(m.AServer(), server, distsys.BindIndexed("net", idle), distsys.WithSeed(1), fast)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := distsys.NewContext(m.AClient(), client, distsys.BindIndexed("net", cmb), distsys.BindRef("out", out),
		distsys.WithSeed(2), fast)
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
	select { // the server may still be finishing its last request
	case <-idle.idle:
	case <-ctx.Done():
		t.Fatal("the server never waited for a fourth request")
	}
	stop()
	if err := <-serr; !errors.Is(err, context.Canceled) {
		t.Fatalf("server: %v", err)
	}
	close(outs)
	var got []tla.Value
	for v := range outs {
		got = append(got, v)
	}
	if s := tla.Tuple(got...).String(); s != want {
		t.Fatalf("the client wrote %s; the model (Expected in Proc.tla) says %s", s, want)
	}
	// answered three times, count (write then call), Emit's emit twice.
	if n := out.refused.Load(); n != 6 {
		t.Fatalf("%d pre-commits refused, want 6", n)
	}
	if d := cc.Depth(); d != 0 {
		t.Fatalf("client frame stack %d deep after Done, want 0", d)
	}
	if d := sc.Depth(); d != 1 {
		t.Fatalf("server frame stack %d deep while waiting in Serve, want 1", d)
	}
	for _, c := range []struct {
		ctx        *distsys.Context
		name, want string
	}{{cc, "trail", "<<3, 2, 1, 0>>"}, {cc, "i", "4"}, {sc, "served", "3"}, {sc, "acc", "6"}} {
		if v, _ := c.ctx.Local(c.name); v.String() != c.want {
			t.Errorf("%s = %v, want %s", c.name, v, c.want)
		}
	}
}
