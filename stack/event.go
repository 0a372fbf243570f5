package stack

import (
	"fmt"
	"time"
)

// Addr names an endpoint: "sim:a", "udp:127.0.0.1:7000", "tcp:[::1]:7000".
type Addr string

// Dir is the direction an event travels.
type Dir uint8

const (
	// Down: towards the network.
	Down Dir = iota
	// Up: towards the application.
	Up
)

func (d Dir) String() string {
	if d == Down {
		return "down"
	}
	return "up"
}

// Type is an event's kind.
type Type uint8

// Event types. Down events first, then up events.
const (
	ESend     Type = iota + 1 // down: point-to-point message to Peer
	ECast                     // down: multicast to the group (membership layers)
	ELeave                    // down: leave the group / shut down
	ETimerReq                 // down: a layer asks for an ETimer at Time
	ECall                     // down: RPC request to Peer with correlation ID
	ECancel                   // down: abandon RPC ID
	EDeliver                  // up: a message from Peer
	ETimer                    // up: the clock reached Time
	EReply                    // up: RPC reply (or Err) for ID
	ESuspect                  // up: Peer seems to have failed
	EView                     // up: new group view
	EBlock                    // up: stop sending for a view change
	EStable                   // up: messages up to a point are stable
	EExit                     // up: the stack has shut down
	ERequest                  // up: RPC request from Peer (answer with EResponse)
	EResponse                 // down: RPC response to Peer for ID
	EElect                    // up: Peer coordinates the current view (the elect layer, after a suspicion or view)
	EFlush                    // down: the node is about to stop: send what is owed now (pt2pt's delayed acks)
)

var typeNames = [...]string{"", "Send", "Cast", "Leave", "TimerReq", "Call", "Cancel", "Deliver", "Timer",
	"Reply", "Suspect", "View", "Block", "Stable", "Exit", "Request", "Response", "Elect", "Flush"}

func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// Event is what layers exchange. Events are values; Msg is shared by
// reference and owned by whichever layer holds the event.
type Event struct {
	Type Type
	// Unreliable marks an ESend whose sender recovers losses itself (the
	// casts mnak fans out, its statuses and naks): the point-to-point
	// layers below pass it as it is, unnumbered, unacknowledged and
	// outside their flow control, as Ensemble's casts bypass pt2pt.
	// Fragments of a message too large for one datagram go reliably all
	// the same (frag needs its fragments complete and in order).
	// (Next to Type, in what would be padding: events are copied often.)
	Unreliable bool
	Peer       Addr
	Msg        *Msg
	Time       time.Duration // ETimer: now; ETimerReq: when; ECall: deadline
	Now        time.Duration // when the event entered the stack (stamped by the driver)
	ID         uint64        // RPC correlation id
	Err        error
	// Seq is set on the EDeliver of a cast: the origin's cast number (1,
	// 2, ...); 0 for point-to-point messages.
	Seq uint64
	// Stable is EStable's vector (Stability reads it): entry i counts the
	// casts of member i that every member has delivered; read-only (the
	// events of one update share it). A pointer: events are copied often,
	// and a slice here would make them 112 bytes, not 96.
	Stable *[]uint64
	// View is EView's new view. An EView going up with Peer set ends at
	// once: the member leaves it to rejoin the group through Peer (a merge
	// of partitions), and stays blocked until then.
	View *View
}

// View is a group membership view: every member that installs the view
// with this ID and By sees the same Members, in the same (rank) order; the
// first member coordinates and sequences. IDs grow along a line of views;
// By (the coordinator that made the view) tells apart views made at the
// same time on both sides of a partition.
type View struct {
	ID      uint64
	By      Addr
	Members []Addr
}

// Rank is a's position in the view, or -1.
func (v *View) Rank(a Addr) int {
	for i, m := range v.Members {
		if m == a {
			return i
		}
	}
	return -1
}

func (e Event) String() string {
	s := e.Type.String()
	if e.Peer != "" {
		s += " " + string(e.Peer)
	}
	if e.Msg != nil {
		s += fmt.Sprintf(" len=%d", e.Msg.Len())
	}
	if e.Type == ETimer || e.Type == ETimerReq {
		s += fmt.Sprintf(" t=%v", e.Time)
	}
	if e.ID != 0 {
		s += fmt.Sprintf(" id=%d", e.ID)
	}
	if e.Err != nil {
		s += " err=" + e.Err.Error()
	}
	return s
}

// drop clears ev's references (the rest is overwritten when the scratch
// event is next used), so that a scratch event does not keep a message,
// view or error alive.
func (ev *Event) drop() {
	ev.Peer, ev.Msg, ev.Err, ev.Stable, ev.View = "", nil, nil, nil, nil
}

// zero clears ev field by field (cheaper than assigning Event{} to an
// event on the heap, which copies with write barriers).
func (ev *Event) zero() {
	ev.Type, ev.Unreliable, ev.Peer, ev.Msg = 0, false, "", nil
	ev.Time, ev.Now, ev.ID, ev.Err, ev.Seq = 0, 0, 0, nil, 0
	ev.Stable, ev.View = nil, nil
}

// Stability returns EStable's vector, nil if the event has none.
func (ev *Event) Stability() []uint64 {
	if ev.Stable == nil {
		return nil
	}
	return *ev.Stable
}
