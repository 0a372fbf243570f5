package layers

import (
	"cmp"
	"encoding/binary"
	"slices"

	"strata/stack"
)

// Total header: kind u8, then for kind 1 (data) the origin's message
// number u64; kind 2 (order) the view ID u64, the position in the view's
// order of its first entry u64 (1, 2, ...) and a body of entries, each
// origin rank u16 and message number u64, in the order the sequencer
// assigned. Order entries of another view are ignored (an order cast held
// back over a view change names messages the view change delivered).
//
// Total is total order with a fixed sequencer: the view's first member.
// Every member casts its messages to all (numbered per origin); the
// sequencer, as it delivers each one, casts an order entry naming it; every
// member delivers messages in the order of the entries, holding a message
// until its entry arrives and an entry until its message does.
//
// Order casts are applied by their position, not in the order they
// arrive: the sequencer's casts can leave it in another order than it
// made them. It makes the order entry for one of its own messages while
// that message comes back up to it (the local layer delivers it on its
// way down), and mflow below may have released that message together
// with other casts of the sequencer's, order casts among them, that have
// not gone further down yet: the new order cast, which finds the window
// open, overtakes them. Applied in arrival order, such an overtaking
// entry delivered a member's messages out of its cast order, at every
// member (until 2026-11-27; TestTotalFIFO).
//
// Guarantees: members deliver the same messages in the same order, and
// each origin's in its cast order. Assumes reliable FIFO multicast with
// self delivery below and a static view whose first member stays up (the
// membership layer moves the sequencer on a view change).
type Total struct {
	cfg     stack.Config
	view    uint64
	self    int
	members []stack.Addr
	rank    ranks
	next    uint64      // own message number
	blocked bool        // a view change is under way: the sequencer orders nothing more in this view
	held    []totalHeld // by origin rank: casts waiting for their order entry
	order   []totalKey  // assigned, in order; order[done:] not yet delivered
	done    int
	made    uint64                // order entries the sequencer made in this view
	applied uint64                // order entries of this view appended to order
	early   map[uint64][]totalKey // order casts that arrived before one made earlier, by position
	c       struct{ ordered, delivered, held, malformed, stale, early uint64 }
	arena   arena // order entries' bodies (scratch memory, not state)
}

type totalKey struct {
	origin int
	n      uint64
}

// totalHeld is one origin's held casts, by message number. Casts reach
// total in each origin's order and are ordered in it too, so puts append
// and takes pop the front: a queue whose array is reused (a map of events
// cost an insertion and a deletion per cast). Anything else still works,
// in time linear in what is held.
type totalHeld struct {
	ents []totalEnt // ents[head:] are held, by n
	head int
}

type totalEnt struct {
	n  uint64
	ev stack.Event
}

func (q *totalHeld) len() int { return len(q.ents) - q.head }

func byNumber(e totalEnt, n uint64) int { return cmp.Compare(e.n, n) }

func (q *totalHeld) put(n uint64, ev *stack.Event) {
	if q.head > 0 && len(q.ents) == cap(q.ents) {
		// Full: move the held casts to the front rather than grow (the
		// queue rarely empties under load, so head alone never resets).
		k := copy(q.ents, q.ents[q.head:])
		clear(q.ents[k:])
		q.ents, q.head = q.ents[:k], 0
	}
	i := len(q.ents)
	if q.len() > 0 && q.ents[i-1].n >= n {
		i, _ = slices.BinarySearchFunc(q.ents[q.head:], n, byNumber)
		i += q.head
		if i < len(q.ents) && q.ents[i].n == n {
			q.ents[i].ev = *ev // a duplicate number: the later cast replaces it, as a map would
			return
		}
	}
	if i == len(q.ents) {
		// Grown first, then filled in place: a composite literal is
		// assembled on the stack field by field and then copied out in
		// wider moves, which stall on the fields just stored.
		q.ents = append(q.ents, totalEnt{})
		e := &q.ents[i]
		e.n, e.ev = n, *ev
		return
	}
	q.ents = slices.Insert(q.ents, i, totalEnt{n, *ev})
}

func (q *totalHeld) take(n uint64) (stack.Event, bool) {
	live := q.ents[q.head:]
	i := 0
	if len(live) == 0 {
		return stack.Event{}, false
	}
	if live[0].n != n {
		var found bool
		if i, found = slices.BinarySearchFunc(live, n, byNumber); !found {
			return stack.Event{}, false
		}
	}
	ev := live[i].ev
	if i == 0 {
		q.ents[q.head] = totalEnt{}
		q.head++
	} else {
		q.ents = slices.Delete(q.ents, q.head+i, q.head+i+1)
	}
	if q.head == len(q.ents) {
		clear(q.ents)
		q.ents, q.head = q.ents[:0], 0
	}
	return ev, true
}

const (
	totalData    = 1
	totalOrder   = 2
	totalHdrData = 9
	totalEntry   = 10
	totalOrderHd = 16 // an order cast's view and position
)

// TotalSpec describes Total.
var TotalSpec = stack.Spec{
	Name: "total", Doc: "total order: a fixed sequencer (the view's first member) casts the order",
	Requires: []stack.Prop{stack.Multicast, stack.SelfDelivery},
	Provides: []stack.Prop{stack.Total},
	New:      func(c stack.Config) stack.Layer { return NewTotal(c) },
}

// NewTotal builds the layer for the initial view (cfg.Members, or just
// cfg.Local).
func NewTotal(cfg stack.Config) *Total {
	t := &Total{cfg: cfg}
	t.install(initialView(cfg))
	return t
}

// install starts view v: its first member sequences.
func (t *Total) install(v *stack.View) {
	t.view, t.self, t.members, t.rank = v.ID, -1, slices.Clone(v.Members), newRanks(v.Members)
	for i, a := range t.members {
		if a == t.cfg.Local {
			t.self = i
		}
	}
	// next is not reset: casts the membership layer held back during the
	// view change were numbered in the old view and are sent in this one.
	t.held, t.order, t.done, t.blocked = make([]totalHeld, len(t.members)), nil, 0, false
	t.made, t.applied, t.early = 0, 0, nil
}

func (t *Total) waiting() int {
	n := 0
	for i := range t.held {
		n += t.held[i].len()
	}
	return n
}

// endView delivers, at a view change, what the old view left: first in
// the sequencer's order as far as it goes, then the messages it never
// ordered, by origin rank and number. The membership layer has given
// every member that moves to the next view the same casts, so each
// delivers the same sequence.
func (t *Total) endView(out stack.Emitter) {
	t.drain(out)
	for o := range t.held {
		q := &t.held[o]
		for _, e := range q.ents[q.head:] {
			t.c.delivered++
			out.Up(e.ev)
		}
	}
}

func (t *Total) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.ECast {
		t.next++
		h := ev.Msg.Push(totalHdrData)
		h[0] = totalData
		binary.BigEndian.PutUint64(h[1:], t.next)
	}
	out.Down(ev)
}

func (t *Total) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.EView {
		t.endView(out)
		t.install(ev.View)
		out.Up(ev)
		return
	}
	if ev.Type == stack.EBlock {
		// Orders cast from now on could reach only part of the members;
		// what is left unordered is delivered by rank at the view change.
		t.blocked = true
		out.Up(ev)
		return
	}
	if ev.Type != stack.EDeliver || ev.Seq == 0 {
		out.Up(ev) // not a cast
		return
	}
	r, ok := t.rank.of(ev.Peer)
	kind, err := ev.Msg.Pop(1)
	if !ok || err != nil {
		t.c.malformed++
		ev.Msg.Free()
		return
	}
	switch kind[0] {
	case totalData:
		h, err := ev.Msg.Pop(totalHdrData - 1)
		if err != nil {
			t.c.malformed++
			ev.Msg.Free()
			return
		}
		k := totalKey{r, binary.BigEndian.Uint64(h)}
		t.held[r].put(k.n, &ev)
		t.c.held++
		// Deliver what this releases before emitting anything, so both
		// compositions emit in the same order.
		t.drain(out)
		if t.self == 0 && !t.blocked {
			t.sequence(k, ev, out)
		}
		return
	case totalOrder:
		body := ev.Msg.Body()
		ev.Msg.Free()
		if r != 0 || len(body) < totalOrderHd || (len(body)-totalOrderHd)%totalEntry != 0 {
			t.c.malformed++
			return
		}
		if binary.BigEndian.Uint64(body) != t.view {
			t.c.stale++
			return
		}
		pos := binary.BigEndian.Uint64(body[8:])
		body = body[totalOrderHd:]
		switch {
		case pos <= t.applied || pos-t.applied > maxAhead:
			// Applied already (mnak delivers each cast once), or not a
			// position the sequencer can have reached.
			t.c.malformed++
			return
		case pos > t.applied+1:
			if _, dup := t.early[pos]; dup {
				t.c.malformed++
				return
			}
			if t.early == nil {
				t.early = map[uint64][]totalKey{}
			}
			t.early[pos] = appendEntries(nil, body)
			t.c.early++
			return
		}
		t.order = appendEntries(t.order, body)
		t.applied += uint64(len(body) / totalEntry)
		for len(t.early) > 0 {
			ks, ok := t.early[t.applied+1]
			if !ok {
				break
			}
			delete(t.early, t.applied+1)
			t.order = append(t.order, ks...)
			t.applied += uint64(len(ks))
		}
	default:
		t.c.malformed++
		ev.Msg.Free()
		return
	}
	t.drain(out)
}

// appendEntries appends the order entries in body to ks.
func appendEntries(ks []totalKey, body []byte) []totalKey {
	for i := 0; i+totalEntry <= len(body); i += totalEntry {
		ks = append(ks, totalKey{int(binary.BigEndian.Uint16(body[i:])), binary.BigEndian.Uint64(body[i+2:])})
	}
	return ks
}

// sequence casts the order entry for k (the sequencer only).
func (t *Total) sequence(k totalKey, ev stack.Event, out stack.Emitter) {
	t.c.ordered++
	t.made++
	body := t.arena.take(totalOrderHd + totalEntry)
	binary.BigEndian.PutUint64(body, t.view)
	binary.BigEndian.PutUint64(body[8:], t.made)
	binary.BigEndian.PutUint16(body[totalOrderHd:], uint16(k.origin))
	binary.BigEndian.PutUint64(body[totalOrderHd+2:], k.n)
	msg := stack.NewMsg(body)
	msg.Push(1)[0] = totalOrder
	out.Down(stack.Event{Type: stack.ECast, Msg: msg, Now: ev.Now})
}

// drain delivers held messages in the assigned order.
func (t *Total) drain(out stack.Emitter) {
	for t.done < len(t.order) {
		k := t.order[t.done]
		if k.origin < 0 || k.origin >= len(t.held) {
			break // names no member: it waits for ever, as with the map this replaced
		}
		ev, ok := t.held[k.origin].take(k.n)
		if !ok {
			break
		}
		// Consumed before it goes up, so that the state is whole should
		// delivering it lead back here.
		t.done++
		t.c.delivered++
		out.Up(ev)
	}
	// Reuse the array (slicing off the front would reallocate it on every
	// order): empty it once drained, or move the rest to the front once
	// half of it is delivered.
	if t.done > 0 && t.done >= len(t.order)/2 {
		n := copy(t.order, t.order[t.done:])
		clear(t.order[n:])
		t.order, t.done = t.order[:n], 0
	}
}

// Counters implements stack.Counted.
func (t *Total) Counters() []stack.Counter {
	return []stack.Counter{stack.C("ordered", t.c.ordered), stack.C("delivered", t.c.delivered),
		stack.C("waiting", uint64(t.waiting())), stack.C("malformed", t.c.malformed), stack.C("other_view_orders", t.c.stale),
		stack.C("orders_early", t.c.early)}
}

var totalDataFields = []stack.Field{stack.Const("kind", 1, totalData), stack.Var("n", 8)}

// FastPath implements stack.Fast. A cast is numbered. A cast received by a
// member that is not sequencing (or has stopped: a view change is under
// way), with no order entry waiting, is held until its entry arrives
// (Absorb): order entries and the sequencer's own work take the full
// stack.
func (t *Total) FastPath(c stack.Case) *stack.Path {
	switch c {
	case stack.SendDown, stack.SendUp:
		return stack.Pass
	case stack.CastDown:
		return &stack.Path{Hdr: totalDataFields, Apply: t.fastCast}
	}
	return &stack.Path{Hdr: totalDataFields, Absorb: true, CCP: t.fastRecvCCP, Apply: t.fastRecv}
}

func (t *Total) fastCast(_ *stack.Event, f *stack.Frame) { t.next++; f.V[0] = t.next }

func (t *Total) fastRecvCCP(ev *stack.Event, _ *stack.Frame) bool {
	_, ok := t.rank.of(ev.Peer)
	return ok && ev.Seq > 0 && (t.self != 0 || t.blocked) && t.done == len(t.order)
}

func (t *Total) fastRecv(ev *stack.Event, f *stack.Frame) {
	r, _ := t.rank.of(ev.Peer)
	t.held[r].put(f.V[0], ev)
	t.c.held++
}
