package stack

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Prop is a property a layer provides to the layers above it, or requires
// from the layers below it.
type Prop string

// Properties of point-to-point stacks (group properties come with the
// membership layers).
const (
	Datagram Prop = "Datagram" // datagrams to a peer, maybe lost, duplicated, reordered
	Reliable Prop = "Reliable" // every message to a live peer arrives exactly once
	FIFO     Prop = "FIFO"     // in the order sent, per peer
	Fragment Prop = "Fragment" // messages larger than the transport's datagram
	Flow     Prop = "Flow"     // bounded buffering per peer (credit window)
	RPC      Prop = "RPC"      // request/response with correlation ids and timeouts
	App      Prop = "App"      // the application interface (top of every stack)

	// Group properties.
	Multicast        Prop = "Multicast"        // every cast reaches every member of the view once, in its origin's order
	Stability        Prop = "Stability"        // the stack learns which casts every member delivered (EStable); buffers are collected
	SelfDelivery     Prop = "SelfDelivery"     // a member's own casts are delivered to it too
	Total            Prop = "Total"            // every member delivers the casts in one and the same order
	CastFlow         Prop = "CastFlow"         // a member's unstable casts are bounded (multicast flow control)
	Membership       Prop = "Membership"       // views: members join, leave and are removed when they fail (EView)
	Election         Prop = "Election"         // the coordinator of the view is named (EElect): its first member not suspected
	FailureDetection Prop = "FailureDetection" // members of the view that stop answering are reported (ESuspect)
	Vsync            Prop = "Vsync"            // virtual synchrony: members that move together from a view to the next delivered the same casts in it
)

// Emitter passes events out of a layer: Down to the layer below, Up to
// the layer above.
type Emitter interface {
	Down(Event)
	Up(Event)
}

// Layer is one micro-protocol. Handlers never block, do no I/O and take
// time only from events (ETimer carries the current time).
type Layer interface {
	Down(ev Event, out Emitter) // an event from the layer above
	Up(ev Event, out Emitter)   // an event from the layer below
}

// Counter is one named count a layer keeps (messages, retransmissions,
// drops, window stalls, ...).
type Counter struct {
	Name  string
	Value uint64
}

// Counted is implemented by layers that keep counters.
type Counted interface {
	Counters() []Counter
}

// Config holds every layer's parameters; zero fields take defaults.
type Config struct {
	Local  Addr
	Epoch  uint64        // incarnation: must grow across restarts of Local (e.g. start time)
	MTU    int           // largest datagram the transport carries (bytes)
	Window int           // pt2pt: messages in flight per peer
	RTO    time.Duration // pt2pt: first retransmission timeout
	MaxRTO time.Duration // pt2pt: backoff cap
	// AckDelay (pt2pt): how long an ack may wait for data to ride on
	// (<0: never wait). Default 5 ms, a quarter of the default RTO: long
	// enough that a request/response exchange rarely wakes the timer only
	// to find the ack already piggybacked (at 1 ms, each such wake-up and
	// re-arm cost both ends of a loopback RPC 1-2 µs per call on one
	// core), short enough that an unanswered message is acknowledged well
	// before the sender retransmits.
	AckDelay time.Duration
	// PeerTimeout (pt2pt): a peer that acknowledges nothing for this long
	// while messages to it are unacknowledged is given up on (they are
	// dropped and counted); one silent for twice as long with nothing in
	// flight either way is forgotten. <0: never.
	PeerTimeout time.Duration
	// Unreliable: a layer of the stack sends Unreliable events (Spec.
	// SendsUnreliable: a multicast layer's casts), so the point-to-point
	// layers below accept the unnumbered datagrams they pass them as;
	// without it such a datagram is malformed (from a peer running another
	// stack). Build sets it.
	Unreliable bool
	Credit     int           // pt2ptw: bytes a sender may have unconsumed at a peer
	RPCTimeout time.Duration // rpc: default when the caller's context has no deadline
	// Group layers.
	Members     []Addr        // the view: every member lists the same addresses in the same order
	StatusEvery time.Duration // mnak: status and nak interval
	GossipEvery time.Duration // stable: delivery-vector gossip interval
	CastWindow  int           // mflow: own casts that may be unstable at once
	CastBytes   int           // mflow: their bytes (payload and headers above mflow; plus one cast)
	// Membership (gms).
	Group        string        // the group's name: joins for another name are refused
	Contact      Addr          // a member to ask to join through; "" starts a group (Members, or just Local)
	Heartbeat    time.Duration // gms: heartbeat interval
	SuspectAfter time.Duration // gms: silence after which a member is suspected (and removed)
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.MTU == 0 {
		c.MTU = 1400
	}
	if c.Window == 0 {
		c.Window = 1024
	}
	if c.RTO == 0 {
		c.RTO = 20 * time.Millisecond
	}
	if c.MaxRTO == 0 {
		c.MaxRTO = time.Second
	}
	if c.AckDelay == 0 {
		c.AckDelay = 5 * time.Millisecond
	}
	if c.PeerTimeout == 0 {
		c.PeerTimeout = time.Minute
	}
	if c.Credit == 0 {
		c.Credit = 256 << 10
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = 10 * time.Second
	}
	if c.StatusEvery == 0 {
		c.StatusEvery = 20 * time.Millisecond
	}
	if c.GossipEvery == 0 {
		c.GossipEvery = 50 * time.Millisecond
	}
	// Cast flow control returns credit only as casts become stable
	// (every member delivered them and said so in its gossip), so the
	// window must cover that whole loop; each turn of it also costs
	// gossip, stability events and casts that wait and take the full
	// stack, paid per window. With 256 casts (the default until
	// 2026-11-27) three members casting 1 KiB on two loopback CPUs
	// reached 0.6x the throughput of a 2,000-cast window at 1.5x the CPU
	// per delivery (bench mcast). Now the window is counted in bytes as
	// well, which bounds what members keep whatever the casts' size:
	// 4 MB measured ~10% more than 2 MB (JGroups' MFC credits) with
	// 4-16 KiB casts and the same with 1 KiB (8 MB no better); 4096
	// casts bound the bookkeeping of small ones (16,384 no better with
	// 100-byte casts). See docs/stack.md.
	if c.CastWindow == 0 {
		c.CastWindow = 4096
	}
	if c.CastBytes == 0 {
		c.CastBytes = 4_000_000
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 100 * time.Millisecond
	}
	if c.SuspectAfter == 0 {
		c.SuspectAfter = 2 * time.Second
	}
	return c
}

// Spec describes a layer kind: what it needs below, what it adds above,
// and how to build one.
type Spec struct {
	Name     string
	Doc      string
	Requires []Prop
	Provides []Prop
	// Keeps lists properties from below that stay true above this layer;
	// any other property from below is hidden (e.g. a layer that reorders
	// would not keep FIFO). Nil means all are kept.
	Keeps []Prop
	// SendsUnreliable: the layer sends ESends marked Unreliable (see
	// Config.Unreliable).
	SendsUnreliable bool
	New             func(Config) Layer
}

// Validate checks a stack given bottom first: each layer's requirements
// must be provided by the layers beneath it. It returns the properties the
// whole stack provides, or an error naming the layer and what it lacks.
func Validate(specs []Spec) ([]Prop, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("stack: empty stack")
	}
	have := map[Prop]bool{}
	for i, s := range specs {
		var missing []string
		for _, r := range s.Requires {
			if !have[r] {
				missing = append(missing, string(r))
			}
		}
		if len(missing) > 0 {
			below := "nothing"
			if i > 0 {
				below = joinProps(props(have))
			}
			return nil, fmt.Errorf("stack: layer %q (position %d from the bottom) requires %s, but the layers below it provide only %s",
				s.Name, i, strings.Join(missing, ", "), below)
		}
		if s.Keeps != nil {
			kept := map[Prop]bool{}
			for _, k := range s.Keeps {
				if have[k] {
					kept[k] = true
				}
			}
			have = kept
		}
		for _, p := range s.Provides {
			have[p] = true
		}
	}
	return props(have), nil
}

func props(m map[Prop]bool) []Prop {
	var out []Prop
	for p, ok := range m {
		if ok {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func joinProps(ps []Prop) string {
	if len(ps) == 0 {
		return "nothing"
	}
	ss := make([]string, len(ps))
	for i, p := range ps {
		ss[i] = string(p)
	}
	return strings.Join(ss, ", ")
}

// C builds a Counter.
func C(name string, v uint64) Counter { return Counter{Name: name, Value: v} }
