package layers

import (
	"encoding/binary"

	"strata/stack"
)

// Pt2ptw header: kind u8 (0 data, 1 credit, 2 pass), amount u32 (credit:
// bytes consumed since the last grant). Pass: an Unreliable send (mnak's
// casts, which mflow controls), neither counted nor held.
const (
	wData   = 0
	wCredit = 1
	wPass   = 2
	wHdr    = 5
)

// Pt2ptw is per-peer credit flow control: a sender may have at most
// Config.Credit bytes sent but not yet consumed by the receiver (plus one
// message, so a message larger than the credit still goes when nothing is
// outstanding). The receiver grants credit back in batches of a quarter of
// the window; a sender whose outstanding bytes are below that batch is
// never held, so it cannot wait for a grant that will not come.
type Pt2ptw struct {
	credit int
	pass   bool // Config.Unreliable: accept the pass kind
	peers  map[stack.Addr]*wPeer
	c      struct{ stalls, grantsSent, grantsRecv, queued, malformed uint64 }
}

type wPeer struct {
	outstanding int // sent, not yet granted back
	queue       []stack.Event
	consumed    int // received and passed up, not yet granted
}

// Pt2ptwSpec describes Pt2ptw.
var Pt2ptwSpec = stack.Spec{
	Name: "pt2ptw", Doc: "per-peer credit flow control",
	Requires: []stack.Prop{stack.Reliable, stack.FIFO},
	Provides: []stack.Prop{stack.Flow},
	New:      func(c stack.Config) stack.Layer { return NewPt2ptw(c) },
}

// NewPt2ptw builds the layer with cfg.Credit bytes of credit per peer.
func NewPt2ptw(cfg stack.Config) *Pt2ptw {
	cfg = cfg.WithDefaults()
	return &Pt2ptw{credit: cfg.Credit, pass: cfg.Unreliable, peers: map[stack.Addr]*wPeer{}}
}

func (w *Pt2ptw) peer(a stack.Addr) *wPeer {
	p := w.peers[a]
	if p == nil {
		p = &wPeer{}
		w.peers[a] = p
	}
	return p
}

func (w *Pt2ptw) allowed(p *wPeer, size int) bool {
	return p.outstanding < w.credit/4 || p.outstanding+size <= w.credit
}

func (w *Pt2ptw) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.ESend {
		out.Down(ev)
		return
	}
	if ev.Unreliable && w.pass { // as pt2pt: passed only where accepted
		putW(ev.Msg, wPass, 0)
		out.Down(ev)
		return
	}
	p := w.peer(ev.Peer)
	if len(p.queue) > 0 || !w.allowed(p, ev.Msg.Len()) {
		w.c.stalls++
		p.queue = append(p.queue, ev)
		return
	}
	w.send(p, ev, out)
}

func (w *Pt2ptw) send(p *wPeer, ev stack.Event, out stack.Emitter) {
	p.outstanding += ev.Msg.Len()
	putW(ev.Msg, wData, 0)
	out.Down(ev)
}

// putW pushes this layer's header onto m.
func putW(m *stack.Msg, kind byte, amount uint32) {
	h := m.Push(wHdr)
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], amount)
}

func (w *Pt2ptw) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.EDeliver {
		out.Up(ev)
		return
	}
	h, err := ev.Msg.Pop(wHdr)
	if err != nil || h[0] > wPass || h[0] == wPass && !w.pass {
		// (wPass only where a layer above sends Unreliable events.)
		w.c.malformed++
		ev.Msg.Free()
		return
	}
	if h[0] == wPass {
		out.Up(ev)
		return
	}
	p := w.peer(ev.Peer)
	if h[0] == wCredit {
		w.c.grantsRecv++
		p.outstanding = max(p.outstanding-int(binary.BigEndian.Uint32(h[1:])), 0)
		ev.Msg.Free()
		for len(p.queue) > 0 && w.allowed(p, p.queue[0].Msg.Len()) {
			next := p.queue[0]
			p.queue = p.queue[1:]
			w.send(p, next, out)
		}
		return
	}
	p.consumed += ev.Msg.Len()
	out.Up(ev)
	if p.consumed >= w.credit/4 {
		m := stack.NewMsg()
		putW(m, wCredit, uint32(p.consumed))
		p.consumed = 0
		w.c.grantsSent++
		out.Down(stack.Event{Type: stack.ESend, Peer: ev.Peer, Msg: m, Now: ev.Now})
	}
}

// Buffered reports the bytes a sender holds for peer a (queued here).
func (w *Pt2ptw) Buffered(a stack.Addr) (outstanding int, queued int) {
	p := w.peers[a]
	if p == nil {
		return 0, 0
	}
	for _, e := range p.queue {
		queued += e.Msg.Len()
	}
	return p.outstanding, queued
}

// Counters implements stack.Counted.
func (w *Pt2ptw) Counters() []stack.Counter {
	return []stack.Counter{stack.C("window_stalls", w.c.stalls), stack.C("grants_sent", w.c.grantsSent),
		stack.C("grants_received", w.c.grantsRecv), stack.C("malformed", w.c.malformed)}
}

var (
	wDataFields = []stack.Field{stack.Const("kind", 1, wData), stack.Const("amount", 4, 0)}
	wPassFields = []stack.Field{stack.Const("kind", 1, wPass), stack.Const("amount", 4, 0)}
)

// FastPath implements stack.Fast. CCP (down): nothing queued for the peer
// and the credit allows the message. CCP (up): passing the message up does
// not complete a grant. A cast's copies (Unreliable sends, below the
// multicast layer) pass.
func (w *Pt2ptw) FastPath(c stack.Case) *stack.Path {
	pass := &stack.Path{Hdr: wPassFields}
	if c == stack.SendDown || c == stack.CastDown {
		return &stack.Path{Hdr: wDataFields, Unrel: pass, CCP: w.fastSendCCP, Apply: w.fastSend}
	}
	return &stack.Path{Hdr: wDataFields, Unrel: pass, CCP: w.fastRecvCCP, Apply: w.fastRecv}
}

func (w *Pt2ptw) fastSendCCP(ev *stack.Event, f *stack.Frame) bool {
	p := w.peers[ev.Peer]
	return p != nil && len(p.queue) == 0 && w.allowed(p, f.Len())
}

func (w *Pt2ptw) fastSend(ev *stack.Event, f *stack.Frame) { w.peers[ev.Peer].outstanding += f.Len() }

func (w *Pt2ptw) fastRecvCCP(ev *stack.Event, f *stack.Frame) bool {
	p := w.peers[ev.Peer]
	return p != nil && p.consumed+f.Len()-wHdr < w.credit/4
}

func (w *Pt2ptw) fastRecv(ev *stack.Event, f *stack.Frame) {
	w.peers[ev.Peer].consumed += f.Len() - wHdr
}
