package layers

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"

	"strata/stack"
)

// Gms header: kind u8, then a body per kind.
//
//	0 pass     casts and other layers' messages, unchanged
//	1          (unused: heartbeats belong to the suspect layer below)
//	2 join     a process asks to join (body: its address, a zero byte, the
//	           group's name); a member that is not the coordinator forwards
//	           it to the coordinator; a join for another group is refused
//	3 leave    a member asks to leave
//	4 flush    coordinator to the members that stay: flush ID, and the ID
//	           and maker of the view it ends (a member in another view
//	           ignores it)
//	5 ok       member to coordinator: flush ID, then per member of the old
//	           view the number of its casts delivered and the casts kept
//	           (not yet stable)
//	6 install  coordinator to every member of the new view (and those
//	           leaving): the view, the coordinator to rejoin through after
//	           it ("" but for a merge), then casts the member has to
//	           deliver before it
//	7 probe    coordinator to processes it once shared a view with and
//	           that are not in its view (body: the group's name)
//
// Gms is group membership with virtual synchrony (Isis/Ensemble style).
// It sits above mnak and local (so it sees its own casts come back up) and
// keeps a copy of every cast delivered in the current view until the
// stable layer reports it delivered everywhere.
// The suspect layer below reports failed members (ESuspect) and the elect
// layer below names the coordinator (EElect; after a view, its first
// member). The coordinator changes the view when a member is suspected,
// asks to leave, or a process asks to join: it sends a flush to the
// members that stay; each raises EBlock (the sync layer above then holds
// the casts made from then on until the next view), stops delivering casts
// of the old view and answers with what it delivered and what it keeps;
// the coordinator computes, per origin, the union of what any of them
// delivered and sends each member the new view with the casts it lacks. A
// member delivers those, then the view (EView down, which renumbers local
// and mnak, then EView up, which moves the layers above and releases the
// held casts).
//
// Partitions merge: a coordinator probes the processes it once shared a
// view with; when two coordinators of the same group meet, the one with
// the larger address dissolves its view into the other's: it runs a view
// change to the same members (so they end the old view with the same
// casts) whose install tells every member to rejoin through the other
// coordinator, which takes them in as joiners.
//
// Guarantees: members that install a view with the same ID see the same
// members in the same order; members that install two consecutive views
// together delivered the same casts in the first (virtual synchrony); each
// origin's casts in its order; no duplicates. Assumes reliable FIFO
// point-to-point messages below (pt2pt) for its own messages, and the sync
// layer above it: a cast that reaches gms while it flushes, or before it
// is in a view, cannot be sent in any view and is dropped and counted
// (casts_refused). A member suspected by mistake is left out; it goes on
// in views of its own until the merge brings it back.
type Gms struct {
	cfg     stack.Config
	view    *stack.View
	rank    ranks // the view's members' ranks (the fast path's lookups)
	self    int
	joined  bool // false for a joiner until its first install
	exited  bool
	leaving bool
	contact stack.Addr          // where to ask to join while not joined
	coord   stack.Addr          // the coordinator: the view's first member, or as elect names it
	known   map[stack.Addr]bool // every process ever in a view with this one
	merge   stack.Addr          // coordinator to dissolve this view into
	probed  map[stack.Addr]int  // probes sent since last hearing from it
	ticks   int

	// suspected members of the current view (from ESuspect)
	suspects map[stack.Addr]bool
	timer    periodic

	// casts of the current view, per origin rank
	delivered []uint64
	base      []uint64    // casts up to base are stable and dropped
	kept      [][]gmsKept // kept[o][i] is cast base[o]+1+i
	arena     arena       // where kept casts' headers are written (scratch memory, not state)

	// view change
	blocked  bool   // EBlock raised in this view
	answered uint64 // highest flush ID answered in this view (0: none): its deliveries stop
	maxID    uint64

	// coordinator
	joins    map[stack.Addr]bool
	leaves   map[stack.Addr]bool
	proposal *gmsProposal

	c struct{ views, flushes, suspicions, dropped, malformed, refused, merges, castsRefused uint64 }
}

type gmsProposal struct {
	id      uint64
	members []stack.Addr // the new view
	stay    []stack.Addr // members of the old view in the new one
	leave   []stack.Addr // leaving members, told to exit
	oks     map[stack.Addr]gmsReport
	rejoin  stack.Addr // a merge: every member rejoins through it afterwards
}

// gmsKept is a cast kept for flushes: the bytes above this layer, hdr
// followed by body (the fast path keeps a member's own cast as the
// headers and payload mnak kept, without copying them).
//
// A cast received on the bypass is kept as its compressed datagram, hdr,
// and def, which writes it out in full (body is nil): it is needed whole
// only for a flush, and writing the headers of the layers above on every
// cast cost about a fifth of the cast-up fast path.
type gmsKept struct {
	hdr, body []byte
	def       *stack.Deferred
}

// keep appends an empty entry to origin o's kept casts and returns it, for
// the caller to fill in place (cheaper than appending a literal, which is
// assembled on the stack and copied out).
func (g *Gms) keep(o int) *gmsKept {
	g.kept[o] = append(g.kept[o], gmsKept{})
	return &g.kept[o][len(g.kept[o])-1]
}

func (k gmsKept) len() int {
	if k.def != nil {
		return k.def.Len(k.hdr)
	}
	return len(k.hdr) + len(k.body)
}

// appendTo appends the kept bytes (the headers above gms, the payload).
func (k gmsKept) appendTo(b []byte) []byte {
	if k.def != nil {
		return k.def.AppendTo(b, k.hdr)
	}
	return append(append(b, k.hdr...), k.body...)
}

type gmsReport struct {
	delivered []uint64
	base      []uint64
	kept      [][][]byte
}

const (
	gmsPass    = 0
	_          = 1 // formerly heartbeats
	gmsJoin    = 2
	gmsLeave   = 3
	gmsFlush   = 4
	gmsOK      = 5
	gmsInstall = 6
	gmsProbe   = 7
	probeEvery = 10  // heartbeats between merge probes
	maxProbes  = 100 // unanswered probes before a process is forgotten
)

var errGms = errors.New("gms: malformed message")

// GmsSpec describes Gms.
var GmsSpec = stack.Spec{
	Name: "gms", Doc: "membership: join/leave/merge, flush giving the members that stay the same casts",
	Requires: []stack.Prop{stack.Multicast, stack.SelfDelivery, stack.Reliable, stack.FailureDetection, stack.Election},
	Provides: []stack.Prop{stack.Membership},
	New:      func(c stack.Config) stack.Layer { return NewGms(c) },
}

// NewGms builds the layer. With Config.Contact set the process joins the
// group through it (and is in no view until then); otherwise the view is
// Config.Members (ID 1), or just Config.Local.
func NewGms(cfg stack.Config) *Gms {
	cfg = cfg.WithDefaults()
	g := &Gms{cfg: cfg, suspects: map[stack.Addr]bool{},
		joins: map[stack.Addr]bool{}, leaves: map[stack.Addr]bool{}, known: map[stack.Addr]bool{}, probed: map[stack.Addr]int{}, contact: cfg.Contact}
	g.setView(initialView(cfg), 0)
	g.joined = cfg.Contact == ""
	return g
}

func (g *Gms) setView(v *stack.View, now time.Duration) {
	g.view, g.self, g.rank = v, v.Rank(g.cfg.Local), newRanks(v.Members)
	g.coord = v.Members[0] // until elect names another
	n := len(v.Members)
	g.delivered, g.base, g.kept = make([]uint64, n), make([]uint64, n), make([][]gmsKept, n)
	g.maxID = max(g.maxID, v.ID)
	for a := range g.suspects {
		if v.Rank(a) < 0 {
			delete(g.suspects, a)
		}
	}
	for a := range g.joins {
		if v.Rank(a) >= 0 {
			delete(g.joins, a)
		}
	}
	for a := range g.leaves {
		if v.Rank(a) < 0 {
			delete(g.leaves, a)
		}
	}
	for _, m := range v.Members {
		g.known[m] = true
	}
	g.blocked, g.proposal, g.answered = false, nil, 0
}

func (g *Gms) send(to stack.Addr, kind byte, body []byte, now time.Duration, out stack.Emitter) {
	msg := stack.NewMsg(body)
	msg.Push(1)[0] = kind
	out.Down(stack.Event{Type: stack.ESend, Peer: to, Msg: msg, Now: now})
}

func (g *Gms) arm(now time.Duration, out stack.Emitter) { g.timer.arm(now, g.cfg.Heartbeat, out) }

func (g *Gms) Down(ev stack.Event, out stack.Emitter) {
	if g.exited {
		if ev.Msg != nil {
			ev.Msg.Free()
		}
		return
	}
	g.arm(ev.Now, out)
	switch ev.Type {
	case stack.ECast:
		if g.blocked || !g.joined || g.self < 0 {
			// No view to send it in: sync above holds casts until there
			// is one, so this stack lacks it.
			g.c.castsRefused++
			ev.Msg.Free()
			return
		}
		ev.Msg.Push(1)[0] = gmsPass
		out.Down(ev)
	case stack.ESend:
		ev.Msg.Push(1)[0] = gmsPass
		out.Down(ev)
	case stack.EStable:
		for o, s := range ev.Stability() {
			if o >= len(g.kept) {
				break
			}
			// Drop the stable casts by moving the rest to the front, so
			// that the array is reused by the appends that follow rather
			// than reallocated whenever its tail runs out.
			k := g.kept[o]
			drop := int(min(s-min(g.base[o], s), uint64(len(k))))
			if drop == 0 {
				continue
			}
			n := copy(k, k[drop:])
			clear(k[n:])
			g.kept[o] = k[:n]
			g.base[o] += uint64(drop)
		}
		out.Down(ev)
	case stack.ELeave:
		g.leaving = true
		if g.coord == g.cfg.Local {
			g.leaves[g.cfg.Local] = true
			g.maybeChange(ev.Now, out)
		} else {
			g.send(g.coord, gmsLeave, nil, ev.Now, out)
		}
	default:
		out.Down(ev)
	}
}

func (g *Gms) Up(ev stack.Event, out stack.Emitter) {
	if g.exited {
		if ev.Msg != nil {
			ev.Msg.Free()
		}
		return
	}
	switch ev.Type {
	case stack.ETimer:
		switch {
		case g.timer.due(ev, out):
			g.tick(ev.Time, out)
		case !g.timer.on:
			g.arm(ev.Time, out) // the node's first event: start heartbeating (or joining)
		}
		out.Up(ev)
		return
	case stack.EElect:
		g.coord = ev.Peer
		return
	case stack.ESuspect:
		if g.joined && g.view.Rank(ev.Peer) >= 0 && !g.suspects[ev.Peer] {
			g.suspects[ev.Peer] = true
			g.c.suspicions++
			g.maybeChange(ev.Now, out)
		}
		out.Up(ev)
		return
	case stack.EDeliver:
	default:
		out.Up(ev)
		return
	}
	g.heard(ev.Peer)
	h, err := ev.Msg.Pop(1)
	if err != nil {
		g.c.malformed++
		ev.Msg.Free()
		return
	}
	if h[0] == gmsPass {
		if ev.Seq > 0 {
			g.cast(ev, out)
			return
		}
		out.Up(ev)
		return
	}
	body := ev.Msg.Body()
	ev.Msg.Free()
	if err := g.control(h[0], ev.Peer, body, ev.Now, out); err != nil {
		g.c.malformed++
	}
}

// cast handles a cast of the current view delivered by mnak.
func (g *Gms) cast(ev stack.Event, out stack.Emitter) {
	o := g.view.Rank(ev.Peer)
	if g.answered != 0 || o < 0 || ev.Seq != g.delivered[o]+1 {
		// Flushing (the coordinator's install brings what is still
		// due), or not this view's: drop.
		g.c.dropped++
		ev.Msg.Free()
		return
	}
	g.delivered[o]++
	var k gmsKept
	if len(ev.Msg.Payload) == 1 {
		// A member's own cast (delivered by local): its headers into the
		// arena, its payload by reference (the sender does not change it
		// once cast; see Node.Cast).
		k = gmsKept{hdr: g.arena.copy(ev.Msg.Headers()), body: ev.Msg.Payload[0]}
	} else {
		k = gmsKept{hdr: ev.Msg.Keep()}
	}
	g.kept[o] = append(g.kept[o], k)
	out.Up(ev)
}

func (g *Gms) control(kind byte, from stack.Addr, body []byte, now time.Duration, out stack.Emitter) error {
	switch kind {
	case gmsJoin:
		addr, group, ok := strings.Cut(string(body), "\x00")
		who := stack.Addr(addr)
		if who == "" || !ok {
			return errGms
		}
		if group != g.cfg.Group {
			g.c.refused++
			return nil
		}
		if c := g.coord; c != g.cfg.Local {
			g.send(c, gmsJoin, body, now, out)
			return nil
		}
		// A join from a member is a late copy of the request that let it
		// in, or comes from a member that lost this view in a merge: it
		// stops heartbeating, is suspected and removed, and its next
		// request brings it back.
		if g.view.Rank(who) < 0 {
			g.joins[who] = true
		}
		g.maybeChange(now, out)
		return nil
	case gmsLeave:
		if g.view.Rank(from) >= 0 {
			g.leaves[from] = true
			g.maybeChange(now, out)
		}
		return nil
	case gmsFlush:
		rd := reader{b: body}
		id, viewID, viewBy := rd.u64(), rd.u64(), stack.Addr(rd.bytes())
		if rd.err != nil || len(rd.b) != 0 {
			return errGms
		}
		g.maxID = max(g.maxID, id)
		if id <= g.answered || id <= g.view.ID || viewID != g.view.ID || viewBy != g.view.By {
			// Stale, or a flush of a view this member is not in (a
			// coordinator on the other side of a healed partition).
			return nil
		}
		if g.proposal != nil && g.proposal.id < id {
			g.proposal = nil // another coordinator's flush supersedes ours
		}
		g.answered = id
		report := g.report(id)
		wasBlocked := g.blocked
		g.blocked = true
		if !wasBlocked {
			out.Up(stack.Event{Type: stack.EBlock, Now: now})
		}
		if from == g.cfg.Local {
			return g.ok(from, report, now, out)
		}
		g.send(from, gmsOK, report, now, out)
		return nil
	case gmsOK:
		return g.ok(from, body, now, out)
	case gmsProbe:
		if string(body) != g.cfg.Group || !g.joined || g.coord != g.cfg.Local || g.view.Rank(from) >= 0 {
			return nil
		}
		g.known[from] = true
		if from < g.cfg.Local {
			// The other view absorbs this one.
			if g.merge == "" {
				g.merge = from
				g.c.merges++
				g.maybeChange(now, out)
			}
			return nil
		}
		g.send(from, gmsProbe, []byte(g.cfg.Group), now, out) // so that it dissolves into this view
		return nil
	case gmsInstall:
		return g.install(body, now, out)
	}
	return errGms
}

// report encodes this member's flush answer.
func (g *Gms) report(id uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, id)
	b = binary.BigEndian.AppendUint32(b, uint32(len(g.view.Members)))
	for o := range g.view.Members {
		b = binary.BigEndian.AppendUint64(b, g.delivered[o])
		b = binary.BigEndian.AppendUint64(b, g.base[o])
		b = binary.BigEndian.AppendUint32(b, uint32(len(g.kept[o])))
		for _, c := range g.kept[o] {
			b = binary.BigEndian.AppendUint32(b, uint32(c.len()))
			b = c.appendTo(b)
		}
	}
	return b
}

func decodeReport(b []byte) (id uint64, r gmsReport, err error) {
	rd := reader{b: b}
	id = rd.u64()
	n := int(rd.u32())
	if rd.err != nil || n > 1<<16 {
		return 0, r, errGms
	}
	r.delivered, r.base, r.kept = make([]uint64, n), make([]uint64, n), make([][][]byte, n)
	for o := 0; o < n; o++ {
		r.delivered[o], r.base[o] = rd.u64(), rd.u64()
		k := int(rd.u32())
		if rd.err != nil || k > len(rd.b) || r.base[o]+uint64(k) != r.delivered[o] {
			return 0, r, errGms
		}
		for i := 0; i < k; i++ {
			r.kept[o] = append(r.kept[o], rd.bytes())
		}
	}
	if rd.err != nil || len(rd.b) != 0 {
		return 0, r, errGms
	}
	return id, r, nil
}

// ok collects a flush answer (coordinator).
func (g *Gms) ok(from stack.Addr, body []byte, now time.Duration, out stack.Emitter) error {
	id, r, err := decodeReport(body)
	if err != nil {
		return err
	}
	p := g.proposal
	if p == nil || id != p.id || !slices.Contains(p.stay, from) || len(r.delivered) != len(g.view.Members) {
		return nil
	}
	p.oks[from] = r
	if len(p.oks) < len(p.stay) {
		return nil
	}
	// Every member that stays answered: give each what it lacks.
	n := len(g.view.Members)
	target := make([]uint64, n)
	union := make([]map[uint64][]byte, n)
	for o := range union {
		union[o] = map[uint64][]byte{}
	}
	for _, rep := range p.oks {
		for o := 0; o < n; o++ {
			target[o] = max(target[o], rep.delivered[o])
			for i, c := range rep.kept[o] {
				union[o][rep.base[o]+1+uint64(i)] = c
			}
		}
	}
	view := &stack.View{ID: p.id, By: g.cfg.Local, Members: p.members}
	g.proposal = nil
	for _, m := range append(slices.Clone(p.stay), p.leave...) {
		var missing [][3]any
		if rep, ok := p.oks[m]; ok {
			for o := 0; o < n; o++ {
				for s := rep.delivered[o] + 1; s <= target[o]; s++ {
					missing = append(missing, [3]any{o, s, union[o][s]})
				}
			}
		}
		msg := encodeInstall(view, p.rejoin, missing)
		if m == g.cfg.Local {
			defer g.install(msg, now, out) // after the others are sent
			continue
		}
		g.send(m, gmsInstall, msg, now, out)
	}
	for _, m := range p.members {
		if g.view.Rank(m) < 0 { // a joiner
			g.send(m, gmsInstall, encodeInstall(view, "", nil), now, out)
		}
	}
	return nil
}

func encodeInstall(v *stack.View, rejoin stack.Addr, casts [][3]any) []byte {
	b := binary.BigEndian.AppendUint64(nil, v.ID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(v.By)))
	b = append(b, v.By...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(rejoin)))
	b = append(b, rejoin...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(v.Members)))
	for _, m := range v.Members {
		b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
		b = append(b, m...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(casts)))
	for _, c := range casts {
		b = binary.BigEndian.AppendUint32(b, uint32(c[0].(int)))
		b = binary.BigEndian.AppendUint64(b, c[1].(uint64))
		data := c[2].([]byte)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		b = append(b, data...)
	}
	return b
}

// install delivers what the old view still owes this member, then the new
// view.
func (g *Gms) install(body []byte, now time.Duration, out stack.Emitter) error {
	rd := reader{b: body}
	id := rd.u64()
	by := stack.Addr(rd.bytes())
	rejoin := stack.Addr(rd.bytes())
	n := int(rd.u32())
	if rd.err != nil || n > 1<<16 || n > len(rd.b) {
		return errGms
	}
	members := make([]stack.Addr, n)
	for i := range members {
		members[i] = stack.Addr(rd.bytes())
	}
	k := int(rd.u32())
	if rd.err != nil || k > len(rd.b) {
		return errGms
	}
	type due struct {
		o    int
		s    uint64
		data []byte
	}
	casts := make([]due, k)
	for i := range casts {
		casts[i].o, casts[i].s = int(rd.u32()), rd.u64()
		casts[i].data = rd.bytes()
	}
	if rd.err != nil || len(rd.b) != 0 {
		return errGms
	}
	if g.joined && id != g.answered && !g.leaving {
		// Not the end of a flush this member answered: stale, or a
		// coordinator taking in a late copy of this process's join
		// request while it already belongs to another view.
		return nil
	}
	old := g.view
	// Settle the new state before emitting anything.
	var deliveries []stack.Event
	for _, c := range casts {
		if c.o < 0 || c.o >= len(old.Members) || !g.joined {
			continue
		}
		deliveries = append(deliveries, stack.Event{Type: stack.EDeliver, Peer: old.Members[c.o], Seq: c.s, Msg: stack.Received(c.data), Now: now})
	}
	view := &stack.View{ID: id, By: by, Members: members}
	g.setView(view, now)
	g.joined = true
	g.c.views++
	exit := g.self < 0
	g.exited = exit
	for _, d := range deliveries {
		out.Up(d)
	}
	// The layers below first, so that whatever the layers above send when
	// they see the new view (sync releases the casts it held) is numbered
	// in it.
	out.Down(stack.Event{Type: stack.EView, View: view, Now: now})
	up := stack.Event{Type: stack.EView, View: view, Now: now}
	if rejoin != "" && !exit {
		up.Peer = rejoin // this view ends at once: sync stays blocked
	}
	out.Up(up)
	if exit {
		out.Up(stack.Event{Type: stack.EExit, Now: now})
		return nil
	}
	if rejoin != "" {
		// A merge: this view ends here; join the other side's.
		g.joined, g.contact, g.merge = false, rejoin, ""
		g.send(rejoin, gmsJoin, g.joinBody(), now, out)
	}
	return nil
}

// maybeChange starts a view change if this member coordinates and the
// membership should change.
func (g *Gms) maybeChange(now time.Duration, out stack.Emitter) {
	if g.coord != g.cfg.Local || !g.joined || g.exited {
		return
	}
	if g.leaving {
		// Asked to leave before this member coordinated (its request
		// went to a coordinator that failed or left meanwhile): it now
		// decides its own leave.
		g.leaves[g.cfg.Local] = true
	}
	var stay, leave []stack.Addr
	for _, m := range g.view.Members {
		switch {
		case g.suspects[m]:
		case g.leaves[m]:
			leave = append(leave, m)
		default:
			stay = append(stay, m)
		}
	}
	var joins []stack.Addr
	for a := range g.joins {
		joins = append(joins, a)
	}
	slices.Sort(joins)
	if len(stay) == 0 && (len(leave) > 1 || len(joins) > 0) {
		// Everyone leaves, this member too: the others first, told by a
		// view of this member alone, as any leaver is (were it to exit
		// at once, they would wait for a view that never comes); and
		// processes waiting to join are let in before it goes (a flush
		// that no member answers would never end). It leaves that view
		// in a change of its own.
		leave = slices.DeleteFunc(leave, func(m stack.Addr) bool { return m == g.cfg.Local })
		stay = []stack.Addr{g.cfg.Local}
	}
	members := append(slices.Clone(stay), joins...)
	rejoin := g.merge
	if rejoin != "" {
		members = stay // end this view as it is; everyone rejoins over there
	}
	if len(stay) == len(g.view.Members) && len(joins) == 0 && rejoin == "" {
		return // nothing changes
	}
	if p := g.proposal; p != nil && slices.Equal(p.members, members) && p.rejoin == rejoin {
		return // already under way
	}
	if len(members) == 0 {
		// The last member leaves.
		g.exited = true
		out.Up(stack.Event{Type: stack.EExit, Now: now})
		return
	}
	g.maxID++
	g.c.flushes++
	p := &gmsProposal{id: g.maxID, members: members, stay: stay, leave: leave, oks: map[stack.Addr]gmsReport{}, rejoin: rejoin}
	g.proposal = p
	for _, m := range stay {
		body := binary.BigEndian.AppendUint64(nil, p.id)
		body = binary.BigEndian.AppendUint64(body, g.view.ID)
		body = binary.BigEndian.AppendUint32(body, uint32(len(g.view.By)))
		body = append(body, g.view.By...)
		if m == g.cfg.Local {
			defer g.control(gmsFlush, m, body, now, out)
			continue
		}
		g.send(m, gmsFlush, body, now, out)
	}
}

func (g *Gms) tick(now time.Duration, out stack.Emitter) {
	g.arm(now, out)
	if !g.joined {
		if g.contact != "" {
			g.send(g.contact, gmsJoin, g.joinBody(), now, out)
		}
		return
	}
	g.ticks++
	if g.ticks%probeEvery == 0 && g.coord == g.cfg.Local {
		for _, a := range sortedAddrs(g.known) {
			if g.view.Rank(a) >= 0 {
				continue
			}
			if g.probed[a] >= maxProbes {
				// Silent for maxProbes probes: crashed, most likely.
				// Forget it rather than pile up messages to it.
				delete(g.known, a)
				delete(g.probed, a)
				continue
			}
			g.probed[a]++
			g.send(a, gmsProbe, []byte(g.cfg.Group), now, out)
		}
	}
	if g.leaving && g.coord != g.cfg.Local {
		g.send(g.coord, gmsLeave, nil, now, out)
	}
	if p := g.proposal; p != nil {
		for _, m := range p.stay {
			if g.suspects[m] {
				g.proposal = nil // a member that should answer failed: start again
				break
			}
		}
	}
	g.maybeChange(now, out)
}

// joinBody is a join request: this process's address and the group.
func (g *Gms) joinBody() []byte {
	return []byte(string(g.cfg.Local) + "\x00" + g.cfg.Group)
}

func sortedAddrs(m map[stack.Addr]bool) []stack.Addr {
	out := make([]stack.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// View is the current view (for tests and the group API).
func (g *Gms) View() *stack.View { return g.view }

// Counters implements stack.Counted.
func (g *Gms) Counters() []stack.Counter {
	return []stack.Counter{stack.C("views", g.c.views), stack.C("flushes", g.c.flushes), stack.C("suspicions", g.c.suspicions),
		stack.C("dropped_while_flushing", g.c.dropped), stack.C("malformed", g.c.malformed), stack.C("joins_refused", g.c.refused), stack.C("merges", g.c.merges), stack.C("view_id", g.view.ID), stack.C("casts_refused", g.c.castsRefused)}
}

// reader decodes the big-endian bodies of gms messages; errors stick.
type reader struct {
	b   []byte
	err error
}

func (r *reader) u64() uint64 {
	if len(r.b) < 8 {
		r.err = errGms
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.err = errGms
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) bytes() []byte {
	n := int(r.u32())
	if r.err != nil || n > len(r.b) {
		r.err = errGms
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

var gmsPassFields = []stack.Field{stack.Const("kind", 1, gmsPass)}

// FastPath implements stack.Fast. CCP (down): the heartbeat timer is
// pending and, for a cast, the member is in a view and not changing it.
// CCP (cast up): not flushing, and the cast is the next of a member of the
// view; it is kept until stable.
func (g *Gms) FastPath(c stack.Case) *stack.Path {
	switch c {
	case stack.SendDown:
		return &stack.Path{Hdr: gmsPassFields, CCP: g.fastSendCCP}
	case stack.CastDown:
		return &stack.Path{Hdr: gmsPassFields, CCP: g.fastCastCCP}
	case stack.SendUp:
		return &stack.Path{Hdr: gmsPassFields, CCP: g.fastRecvSendCCP, Apply: g.fastRecvSend}
	}
	return &stack.Path{Hdr: gmsPassFields, CCP: g.fastRecvCastCCP, Apply: g.fastRecvCast}
}

func (g *Gms) fastSendCCP(*stack.Event, *stack.Frame) bool { return !g.exited && g.timer.on }

func (g *Gms) fastCastCCP(*stack.Event, *stack.Frame) bool {
	return !g.exited && g.timer.on && !g.blocked && g.joined && g.self >= 0
}

func (g *Gms) fastRecvSendCCP(*stack.Event, *stack.Frame) bool { return !g.exited }
func (g *Gms) fastRecvSend(ev *stack.Event, _ *stack.Frame)    { g.heard(ev.Peer) }

func (g *Gms) fastRecvCastCCP(ev *stack.Event, _ *stack.Frame) bool {
	if g.exited || g.answered != 0 {
		return false
	}
	o, ok := g.rank.of(ev.Peer)
	return ok && ev.Seq == g.delivered[o]+1
}

func (g *Gms) fastRecvCast(ev *stack.Event, f *stack.Frame) {
	g.heard(ev.Peer)
	o, _ := g.rank.of(ev.Peer)
	g.delivered[o]++
	if data, d, ok := f.Defer(1); ok {
		k := g.keep(o)
		k.hdr, k.def = data, d
		return
	}
	h, b := f.Shared(1)
	if h == nil && b == nil {
		// The headers above do not fit where the datagram's compressed
		// header was: write them into the arena and keep the payload
		// where it is (the stack owns it).
		h = g.arena.take(f.HeaderLen(1))
		h = f.AppendHeaders(h[:0], 1)
		b = ev.Msg.Body()
	}
	k := g.keep(o)
	k.hdr, k.body = h, b
}

// heard notes that a is alive: its unanswered probes are forgotten (the
// map is almost always empty, and a lookup still hashes the address).
func (g *Gms) heard(a stack.Addr) {
	if len(g.probed) > 0 {
		delete(g.probed, a)
	}
}
