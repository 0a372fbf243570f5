package distsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"strata/distsys/tla"
	"strata/stack"
)

// CRDT is the resource behind an archetype's `ref crdt[_]` for a
// state-based CRDT (a GCounter or an AWORSet, crdt_state.go) replicated
// on stack nodes, as PGo's CRDT resources are: crdt[self] reads this
// replica's state's value (the counter's sum, the set), and a write to
// crdt[self] applies a client operation (<<"inc", k>>, <<"add", x>>,
// <<"remove", x>>) to it. crdt[j] for another j is an error: a replica
// sees the others only through what it has merged.
//
// Every Interval the replica sends its whole state to every peer over
// its stack node, and merges (joins) each state it receives into its own.
// Because the join is commutative, associative and idempotent, gossip
// needs no reliability, order or deduplication: any stack works (a lost
// or repeated message only delays or repeats a join), and replicas that
// have received each other's states, directly or through others, hold
// the same state (strong eventual consistency). Messages larger than a
// datagram need the stack's Fragment property.
//
// Guarantees. A section's writes are buffered and applied at commit, in
// order; a read sees the committed state, the merges received so far and
// the section's own writes; an aborted section changes nothing. With a
// Path, the state is written to that file (to a temporary file, synced,
// then renamed over it) before the commit makes it visible or gossips it,
// so a replica restarted on the same file has every update it committed;
// without a Path a restarted replica must not reuse its id (a new
// replica's adds would reuse the dots of the old one's). Received states
// that do not decode are dropped and counted (Dropped).
//
// Assumptions: replica ids are distinct (the replica's key in the state
// is the id as TLC prints it); a Path is used by one replica at a time.
type CRDT struct {
	node    *stack.Node
	self    tla.Value
	replica string
	kind    CRDTKind
	peers   []stack.Addr
	opt     CRDTOptions
	rep     *crdtReplica

	mu      sync.Mutex    // guards state and changed
	state   CRDTState     // committed updates and merges
	changed chan struct{} // closed and replaced when state changes (Wait)

	stop     chan struct{} // closed by Close
	done     chan struct{} // closed when the gossip goroutine ends
	stopOnce sync.Once

	dropped atomic.Uint64
	merged  atomic.Uint64
}

// CRDTOptions tune a CRDT resource.
type CRDTOptions struct {
	// Interval is the gossip period (default 50 ms, the PGo paper's).
	Interval time.Duration
	// Path, if set, keeps the state durably in this file (see CRDT).
	Path string
}

// Gossip message: msgGossip, then the state's encoding.
const msgGossip = 0x47

// NewCRDT makes the replica self of a CRDT of the given kind on node,
// gossiping with the replicas at peers (node's own address, if listed,
// is skipped). It loads the state from opt.Path if that file exists,
// takes over the node's OnDeliver callback and starts gossiping; Close
// stops it.
func NewCRDT(node *stack.Node, self tla.Value, kind CRDTKind, peers []stack.Addr, opt CRDTOptions) (*CRDT, error) {
	if node == nil {
		return nil, errors.New("distsys: a CRDT needs a stack node")
	}
	if !self.IsValid() {
		return nil, errors.New("distsys: a CRDT replica needs an id")
	}
	st, err := NewCRDTState(kind)
	if err != nil {
		return nil, fmt.Errorf("distsys: %w", err)
	}
	if opt.Interval <= 0 {
		opt.Interval = 50 * time.Millisecond
	}
	if opt.Path != "" {
		b, err := os.ReadFile(opt.Path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("distsys: crdt state: %w", err)
		default:
			if st, err = DecodeCRDTState(b); err != nil {
				return nil, fmt.Errorf("distsys: crdt state %s: %w", opt.Path, err)
			}
			if st.Kind() != kind {
				return nil, fmt.Errorf("distsys: crdt state %s holds a %v, not a %v", opt.Path, st.Kind(), kind)
			}
		}
	}
	c := &CRDT{node: node, self: self, replica: self.String(), kind: kind, opt: opt, state: st,
		changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	for _, p := range peers {
		if p != node.Local() {
			c.peers = append(c.peers, p)
		}
	}
	c.rep = &crdtReplica{c: c}
	node.OnDeliver(c.deliver)
	go c.gossipLoop()
	return c, nil
}

// Index returns the resource for crdt[self]; other indices are errors.
func (c *CRDT) Index(idx tla.Value) (Resource, error) {
	if !tla.Equal(idx, c.self) {
		return nil, fmt.Errorf("crdt[%v]: only this replica's state, crdt[%v], can be used", idx, c.self)
	}
	return c.rep, nil
}

// Value returns the value of the replica's committed state.
func (c *CRDT) Value() tla.Value {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Value()
}

// State returns a copy of the replica's committed state.
func (c *CRDT) State() CRDTState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Clone()
}

// Wait blocks until ok holds of the replica's value (checked now and
// after every change), or ctx ends.
func (c *CRDT) Wait(ctx context.Context, ok func(tla.Value) bool) error {
	for {
		c.mu.Lock()
		v, ch := c.state.Value(), c.changed
		c.mu.Unlock()
		if ok(v) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Dropped is the number of received messages that did not decode (or
// held another kind of CRDT).
func (c *CRDT) Dropped() uint64 { return c.dropped.Load() }

// Merged is the number of received states merged.
func (c *CRDT) Merged() uint64 { return c.merged.Load() }

// Close stops gossiping and waits for the gossip goroutine; it does not
// close the node. The replica's state stays readable.
func (c *CRDT) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}

// GossipNow sends the state to every peer at once (the loop does so
// every Interval).
func (c *CRDT) GossipNow() {
	c.mu.Lock()
	msg := c.state.AppendBinary([]byte{msgGossip})
	c.mu.Unlock()
	for _, p := range c.peers {
		// Best effort: a peer that misses this state gets a later one.
		_ = c.node.Send(p, msg)
	}
}

func (c *CRDT) gossipLoop() {
	defer close(c.done)
	t := time.NewTicker(c.opt.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.GossipNow()
		}
	}
}

// deliver is the node's OnDeliver: join a peer's state.
func (c *CRDT) deliver(_ stack.Addr, body []byte) {
	if len(body) == 0 || body[0] != msgGossip {
		c.dropped.Add(1)
		return
	}
	st, err := DecodeCRDTState(body[1:])
	if err != nil {
		c.dropped.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.state.Join(st); err != nil { // another kind of CRDT
		c.dropped.Add(1)
		return
	}
	c.merged.Add(1)
	c.notifyLocked()
}

// notifyLocked wakes Wait. Caller holds c.mu.
func (c *CRDT) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// save writes st to the Path durably: a temporary file, synced, renamed
// over the old one, and the directory synced.
func (c *CRDT) save(st CRDTState) error {
	dir := filepath.Dir(c.opt.Path)
	f, err := os.CreateTemp(dir, filepath.Base(c.opt.Path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(st.AppendBinary(nil))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.opt.Path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// crdtReplica is crdt[self]: the section's writes, applied at commit.
type crdtReplica struct {
	c   *CRDT
	ops []tla.Value // this section's operations (archetype's goroutine)
}

func (r *crdtReplica) Read(context.Context) (tla.Value, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(r.ops) == 0 {
		return c.state.Value(), nil
	}
	st := c.state.Clone()
	for _, op := range r.ops {
		if err := st.Update(c.replica, op); err != nil {
			return tla.Value{}, err // checked at Write; not reached
		}
	}
	return st.Value(), nil
}

// Write checks the operation now, so that a malformed one stops the
// archetype at the statement that wrote it.
func (r *crdtReplica) Write(_ context.Context, op tla.Value) error {
	scratch, _ := NewCRDTState(r.c.kind) // kind was checked by NewCRDT
	if err := scratch.Update(r.c.replica, op); err != nil {
		return err
	}
	r.ops = append(r.ops, op)
	return nil
}

func (r *crdtReplica) PreCommit(context.Context) error { return nil }

// Commit applies the section's operations and, with a Path, makes them
// durable before they become visible. A failed save leaves the state as
// it was and stops the archetype (other resources may have committed).
func (r *crdtReplica) Commit(context.Context) error {
	if len(r.ops) == 0 {
		return nil
	}
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { r.ops = r.ops[:0] }()
	st := c.state.Clone()
	for _, op := range r.ops {
		if err := st.Update(c.replica, op); err != nil {
			return err
		}
	}
	if c.opt.Path != "" {
		if err := c.save(st); err != nil {
			return fmt.Errorf("crdt state %s: %w", c.opt.Path, err)
		}
	}
	c.state = st
	c.notifyLocked()
	return nil
}

func (r *crdtReplica) Abort() { r.ops = r.ops[:0] }
