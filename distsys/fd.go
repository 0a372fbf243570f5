package distsys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"strata/distsys/tla"
	"strata/stack"
	"strata/stack/layers"
)

// FailureDetector is the resource behind PGo's `ref fd[_]`: fd[p] reads
// TRUE once the node holding archetype instance p is suspected, FALSE
// before. Suspicions come from the stack's heartbeat failure detector
// (stack/layers Suspect, the FailureDetection property): every member of
// the node's view that sends no heartbeat for SuspectAfter is reported
// with an ESuspect, which this resource records. A suspicion is never
// withdrawn (the suspect layer reports each member once per view), so the
// detector fits the crash-stop model MPCal's fd abstracts: a suspected
// instance stays suspected.
//
// Guarantees are the suspect layer's: a peer whose node stops (closed,
// crashed, partitioned away) reads TRUE within SuspectAfter plus one
// heartbeat interval of its last heartbeat; a peer whose heartbeats keep
// arriving at least every SuspectAfter reads FALSE. A live but slow peer
// can be suspected by mistake (the detector is eventually accurate only if
// SuspectAfter exceeds every real delay), as with PGo's timeout-based
// detector.
//
// fd is read-only: a write fails the archetype. Reads are not buffered:
// a section that reads fd[p] twice may see FALSE, then TRUE. Await on it
// (`await fd[p]`) aborts and retries the section until p is suspected.
// Safe for concurrent use: several archetypes may share one detector.
type FailureDetector struct {
	addrs map[string]stack.Addr // by the encoding of the instance id; read-only after New

	mu        sync.Mutex
	suspected map[stack.Addr]time.Time // when the suspicion arrived
}

// NewFailureDetector makes the failure detector over node's suspicions
// for the instances at peers. It takes over node's OnEvent callback
// (Mailboxes use OnDeliver and HandleAsync, so both can share a node).
// The node's stack must provide FailureDetection with the peers' nodes
// in its view; NewSuspectingNode builds one.
func NewFailureDetector(node *stack.Node, peers []Peer) (*FailureDetector, error) {
	if node == nil {
		return nil, errors.New("distsys: failure detector needs a stack node")
	}
	f, err := newFD(peers)
	if err != nil {
		return nil, err
	}
	node.OnEvent(func(ev stack.Event) {
		if ev.Type == stack.ESuspect {
			f.Suspect(ev.Peer)
		}
	})
	return f, nil
}

func newFD(peers []Peer) (*FailureDetector, error) {
	f := &FailureDetector{addrs: map[string]stack.Addr{}, suspected: map[stack.Addr]time.Time{}}
	for _, p := range peers {
		k, err := p.ID.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("distsys: failure detector id %v: %w", p.ID, err)
		}
		if _, dup := f.addrs[string(k)]; dup {
			return nil, fmt.Errorf("distsys: failure detector: %v listed twice", p.ID)
		}
		f.addrs[string(k)] = p.Addr
	}
	return f, nil
}

// Suspect records that the node at a has failed, for suspicions from
// another source than the node's stack (a group's view that dropped a
// member, an operator). Suspecting an address no peer has is harmless.
func (f *FailureDetector) Suspect(a stack.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.suspected[a]; !ok {
		f.suspected[a] = time.Now()
	}
}

// SuspectedAt is when the node at a was first suspected (ok false: it is
// not suspected).
func (f *FailureDetector) SuspectedAt(a stack.Addr) (t time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok = f.suspected[a]
	return t, ok
}

// Index returns the read-only resource fd[idx].
func (f *FailureDetector) Index(idx tla.Value) (Resource, error) {
	k, err := idx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	a, ok := f.addrs[string(k)]
	if !ok {
		return nil, fmt.Errorf("failure detector: no instance %v among the peers", idx)
	}
	return fdEntry{f: f, addr: a}, nil
}

// fdEntry is fd[p]. A comparable value type: Index returns equal
// resources for equal indices, as the section loop needs.
type fdEntry struct {
	f    *FailureDetector
	addr stack.Addr
}

func (e fdEntry) Read(context.Context) (tla.Value, error) {
	_, ok := e.f.SuspectedAt(e.addr)
	return tla.Bool(ok), nil
}

func (e fdEntry) Write(context.Context, tla.Value) error {
	return fmt.Errorf("failure detector entry for %s: %w", e.addr, ErrReadOnly)
}

func (fdEntry) PreCommit(context.Context) error { return nil }
func (fdEntry) Commit(context.Context) error    { return nil }
func (fdEntry) Abort()                          {}

// SuspectOptions are the failure detector's timings for NewSuspectingNode.
type SuspectOptions struct {
	Heartbeat    time.Duration // interval between heartbeats (default 100 ms)
	SuspectAfter time.Duration // silence after which a member is suspected (default 2 s; at least two heartbeats)
}

// NewSuspectingNode runs, on the transport tr, the stack for props (for
// example "Reliable,FIFO,RPC", as the mailboxes need) with FailureDetection
// added, whose view is members (every node lists the same addresses; tr's
// own among them). The suspect layer sends heartbeats to the other members
// and reports the silent ones (NewFailureDetector).
func NewSuspectingNode(tr stack.Transport, props string, members []stack.Addr, o SuspectOptions) (*stack.Node, error) {
	if tr == nil {
		return nil, errors.New("distsys: suspecting node needs a transport")
	}
	cfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: min(tr.MTU(), 64000),
		Members: members, Heartbeat: o.Heartbeat, SuspectAfter: o.SuspectAfter}
	if d := cfg.WithDefaults(); o.Heartbeat < 0 || o.SuspectAfter < 0 || d.SuspectAfter < 2*d.Heartbeat {
		return nil, fmt.Errorf("distsys: suspicion window %v must be at least two heartbeats (%v each)", d.SuspectAfter, d.Heartbeat)
	}
	self := false
	for _, m := range members {
		self = self || m == tr.Local()
	}
	if !self {
		return nil, fmt.Errorf("distsys: members %v do not include this node (%s)", members, tr.Local())
	}
	ps, err := layers.ParseProps(strings.Join([]string{props, string(stack.FailureDetection)}, ","))
	if err != nil {
		return nil, fmt.Errorf("distsys: %w", err)
	}
	ch, err := layers.Configure(ps)
	if err != nil {
		return nil, fmt.Errorf("distsys: stack for %s: %w", props, err)
	}
	return stack.NewNode(tr, stack.NewRealClock(), layers.Build(ch.Specs, cfg), stack.NodeOptions{}), nil
}
