package stack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
)

// The bypass (Ensemble §3, "Optimizing layered protocols"): each layer
// declares, for the four fundamental cases, a common-case predicate (CCP)
// over its state and the event, the header it pushes or pops on that path
// (which fields the CCP fixes and which vary), and the state update the path
// makes. Optimize composes the paths of a stack into one bypass per case,
// guarded by the conjunction of the CCPs; a message sent through it carries
// a compressed header: a short path identifier and the varying fields only.
// When a CCP is false the event takes the full layered path, so the bypass
// changes speed, never behaviour (the equivalence tests in stack/layers
// check exactly that, state and outputs, against the full stack).

// Case is one of the four fundamental paths through a stack.
type Case uint8

const (
	SendDown Case = iota // ESend (and, in RPC stacks, ECall and EResponse) to the network
	CastDown             // ECast from the application to the network
	SendUp               // EDeliver of a point-to-point message
	CastUp               // EDeliver of a cast
	numCases
)

func (c Case) String() string {
	return [...]string{"send-down", "cast-down", "send-up", "cast-up"}[c]
}

func (c Case) down() bool { return c == SendDown || c == CastDown }

// Field is one field of a layer's header on a fast path, as the full stack
// writes it: Size bytes, big-endian. A Const field has the same Value on
// every message that takes the path (its CCP fixes it) and is dropped from
// the compressed header; a varying field travels in a prefix varint (putVar).
type Field struct {
	Name  string
	Size  int // 1, 2, 4 or 8
	Const bool
	Value uint64
}

// Const is a field the CCP fixes to v.
func Const(name string, size int, v uint64) Field {
	return Field{Name: name, Size: size, Const: true, Value: v}
}

// Var is a field that varies from message to message.
func Var(name string, size int) Field { return Field{Name: name, Size: size} }

// Path is a layer's fast path for one case. The layer's header on the path
// is Hdr in wire order; the down and up paths of one kind (send or cast)
// must declare the same Hdr. CCP must not change anything; Apply makes the
// state change and output the full handler makes when the CCP holds: a
// down Apply fills the layer's varying fields (Frame.V, in Hdr order), an
// up Apply reads them. Nil CCP means always; nil Apply, no state change.
type Path struct {
	Hdr   []Field
	CCP   func(ev *Event, f *Frame) bool
	Apply func(ev *Event, f *Frame)
	// Fanout (CastDown): the cast leaves this layer as one ESend per
	// address, marked Unreliable (the multicast layer recovers losses
	// itself), each continuing down the layers' SendDown paths (their
	// Unrel paths where they have one). Apply
	// returns, in Frame.KeepHdr and Frame.KeepBody, what the layer keeps
	// of the message: the full-format headers of the layers above and the
	// payload; the ESends carry the payload.
	Fanout func(ev *Event) []Addr
	// Loop (CastDown): after the cast went down, the layer delivers a copy
	// up (self delivery); Loop fills up, zero, with that event (without
	// Msg). The copy
	// goes up the CastUp paths of the layers above, or, where one of their
	// CCPs is false, the full stack from there.
	Loop func(ev, up *Event)
	// Absorb (up): the layer keeps the event; nothing goes further up.
	Absorb bool
	// Unrel (SendDown, SendUp): the path of a cast's copy, an ESend
	// marked Unreliable that a multicast layer above fans out, where it
	// differs from the send path (the point-to-point layers pass such a
	// copy unnumbered); nil: the same.
	Unrel *Path
	// Calls (SendDown): the layer takes ECall and EResponse on this path
	// too. A layer with a header turns them into the ESend its full
	// handler emits (an RPC layer); one without passes them on unchanged,
	// as its full handler does. The bypass takes them only where the
	// layers above the highest one with a header all pass them and that
	// one turns them into sends; the CCPs of the layers below see them
	// before that Apply runs.
	Calls bool
	// Mark (up) sets ev.Seq as the layer does on the path, without
	// changing state: the CCPs of the layers above see the event as the
	// full stack would hand it to them. It runs again before the layer's
	// Apply. (Seq is the one field a layer below sets that the layers
	// above test; Mark may set no other, so that evaluating the CCPs
	// needs to save and restore only Seq.)
	Mark func(ev *Event, f *Frame)
}

// Fast is implemented by layers that have fast paths. FastPath returns the
// layer's path for c, or nil: then no stack containing the layer has a
// bypass for c. It is called once, by Optimize; the functions it returns
// act on the layer's state.
type Fast interface {
	FastPath(c Case) *Path
}

// Pass is the path of a layer that neither pushes a header nor changes
// state for the case.
var Pass = &Path{}

// Frame is what a layer's CCP and Apply see of the composed path besides
// the event: its own varying fields and the full-format sizes and bytes of
// the headers above it.
type Frame struct {
	V []uint64 // the layer's varying fields, in Hdr order
	// Fanout: set by Apply to what the layer keeps (headers above, payload)
	KeepHdr, KeepBody []byte
	p                 *composed
	vars              []uint64
	layer             int
	plen              int // the payload's length
	// keepHdr, keepBody: what a multicast layer (keepAbove) kept of this
	// cast, shared read-only (loop only; kept says they are set)
	keepHdr, keepBody []byte
	kept              bool
	keepAbove         int
	// rx: a received datagram taking the up path, which the stack owns;
	// rxHdr is the length of its header (compressed, or rxFull: the full
	// format)
	rx     []byte
	rxHdr  int
	rxFull bool
}

// reset readies f for a path of p. Its vars are the bypass's, set once
// (Optimize). The other fields are left as those
// who set them leave them: V is set for each layer (Enter), KeepHdr and
// KeepBody are taken by down, the loop's fields cleared after loopUp and
// the received datagram's after receive (clearLoop, clearRx). (Field by
// field: assigning a whole Frame, or an Event, to the bypass's scratch
// costs a bulk copy with write barriers, a measurable part of a fast
// path.)
func (f *Frame) reset(p *composed, plen int) {
	f.p, f.layer, f.plen = p, 0, plen
}

// Calls reports whether calls and responses take the send paths
// (Path.Calls). An RPC layer's up CCP admits requests and responses only
// then: elsewhere a layer above it pushes its header on sends but not on
// calls, so a request arrives without the headers the up path would pop.
func (f *Frame) Calls() bool { return f.p.calls }

func (f *Frame) clearLoop() { f.keepHdr, f.keepBody, f.kept, f.keepAbove = nil, nil, false, 0 }
func (f *Frame) clearRx()   { f.rx, f.rxHdr, f.rxFull = nil, 0, false }

// Len is ev.Msg.Len() on entry to the layer in the full stack: going down,
// the payload and the headers of the layers above; going up, also the
// layer's own header.
func (f *Frame) Len() int {
	if f.p.c.down() {
		return f.plen + f.p.headerLen(f.layer+1)
	}
	return f.plen + f.p.headerLen(f.layer)
}

// HeaderLen is the full-format length of the headers of the layers from
// `from` up (relative to the current layer, as for AppendHeaders).
func (f *Frame) HeaderLen(from int) int { return f.p.headerLen(f.layer + from) }

// AppendHeaders appends the full-format headers of the layers from `from`
// up (outermost first) to b; from is relative to the current layer (0: its
// own header, 1: the layers above it).
func (f *Frame) AppendHeaders(b []byte, from int) []byte {
	i := f.layer + from
	if i >= len(f.p.suf) {
		return b
	}
	at := len(b)
	b = append(b, f.p.suf[i]...)
	h := b[at:]
	for _, sv := range f.p.sufVars[i] {
		putN(h[sv.off:], sv.size, f.vars[sv.idx])
	}
	return b
}

// Shared returns, read-only, the full-format headers of the layers from
// `from` up (relative to the current layer) followed by the payload, if
// the bypass already holds them, as hdr followed by body (either may be
// empty): a cast delivered back to its sender shares what the multicast
// layer kept, its headers and the sender's payload. Otherwise both are
// nil. A layer that keeps a message can keep these instead of a copy.
//
// A received datagram is such a buffer too (the transport hands it over):
// in full format the headers are there already; a compressed one gets the
// full-format headers of the layers from `from` up written where its
// compressed header was, if they fit. It comes back whole, as hdr.
func (f *Frame) Shared(from int) (hdr, body []byte) {
	lo := f.layer + from
	switch {
	case f.kept:
		if lo <= f.keepAbove {
			return nil, nil
		}
		return f.keepHdr[f.p.headerLen(f.keepAbove+1)-f.p.headerLen(lo):], f.keepBody
	case f.rx == nil:
		return nil, nil
	case f.rxFull:
		return f.rx[f.p.headerLen(0)-f.p.headerLen(lo):], nil
	}
	need := f.p.headerLen(lo)
	if need > f.rxHdr {
		return nil, nil
	}
	at := f.rxHdr - need
	saved := f.layer
	f.layer = lo
	f.AppendHeaders(f.rx[at:at], 0)
	f.layer = saved
	return f.rx[at:], nil
}

// Defer is Shared for a layer that keeps a received message it will
// rarely need whole (gms keeps every cast until it is stable, for a flush
// that seldom comes): if the event is a compressed datagram taking the
// whole up path, it returns the datagram (read-only: the stack owns it)
// and d, which writes the full-format bytes of the layers from `from` up
// (relative to the current layer) and the payload only when asked
// (Deferred.AppendTo). Otherwise ok is false: use Shared.
func (f *Frame) Defer(from int) (data []byte, d *Deferred, ok bool) {
	if f.rx == nil || f.rxFull {
		return nil, nil, false
	}
	return f.rx, f.p.deferred[f.layer+from], true
}

// Deferred expands the datagrams Frame.Defer returns (one per path and
// layer, made by Optimize).
type Deferred struct {
	p    *composed
	from int
}

// Len is the length of what AppendTo appends for data. (Neither can fail
// on a datagram Defer returned, which decoded on receipt; on any other
// that does not decode, Len is 0 and AppendTo appends nothing.)
func (d *Deferred) Len(data []byte) int {
	n, err := d.p.decodeVars(data, nil)
	if err != nil {
		return 0
	}
	return d.p.headerLen(d.from) + len(data) - n
}

// AppendTo appends to b the full-format headers of the layers from d's up
// and the payload of data, a datagram Defer returned with d.
func (d *Deferred) AppendTo(b, data []byte) []byte {
	// The fields in a buffer on the stack: a flush writes out every cast
	// gms kept, and some group paths have more varying fields than a
	// make of variable length keeps off the heap (32 bytes: four).
	var buf [16]uint64
	var vars []uint64
	if d.p.nvar <= len(buf) {
		vars = buf[:d.p.nvar]
	} else {
		vars = make([]uint64, d.p.nvar)
	}
	n, err := d.p.decodeVars(data, vars)
	if err != nil {
		return b
	}
	f := Frame{p: d.p, vars: vars, layer: d.from}
	return append(f.AppendHeaders(b, 0), data[n:]...)
}

// composed is the bypass of one case: a path per layer, bottom first.
type composed struct {
	c       Case
	id      uint32
	paths   []*Path
	off     []int // first varying field of each layer in vars
	nv      []int // varying fields of each layer
	nvar    int
	suf     [][]byte   // suf[i]: the full-format headers of layers i.., constants filled in
	sufVars [][]sufVar // the varying fields in suf[i]
	vsize   []int      // each varying field's size, in order
	vs      [][]uint64 // vs[i]: layer i's varying fields in the bypass's vars (set by Optimize)
	// consts: the constant fields of the full-format headers, the top
	// layer's first (they tell kinds of message apart: a datagram of
	// another kind fails at once); vars: the varying fields, in order
	consts, vars []fieldAt
	mcast        int  // the Fanout layer (cast cases), else -1
	calls        bool // send paths: calls and responses take them (Path.Calls)
	loop         int  // the Loop layer (CastDown), else -1
	up           *composed
	deferred     []*Deferred // up paths: Frame.Defer's expanders, by layer
	key          string      // signature (see fused.go)
	chain        Chain       // generated code for the path, or nil: the generic loops
}

type sufVar struct{ off, size, idx int }

// fieldAt is a field of the full-format headers: its offset and size, and
// a constant field's value.
type fieldAt struct {
	off, size int
	value     uint64
}

func putN(b []byte, size int, x uint64) {
	switch size {
	case 1:
		b[0] = byte(x)
	case 2:
		binary.BigEndian.PutUint16(b, uint16(x))
	case 4:
		binary.BigEndian.PutUint32(b, uint32(x))
	default:
		binary.BigEndian.PutUint64(b, x)
	}
}

// getN reads what putN writes.
func getN(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	default:
		return binary.BigEndian.Uint64(b)
	}
}

// prepare precomputes the templates and offsets of p's fields.
func (p *composed) prepare() {
	n := len(p.paths)
	p.nv = make([]int, n)
	p.suf, p.sufVars = make([][]byte, n), make([][]sufVar, n)
	for i := n - 1; i >= 0; i-- {
		// Layer i's header, then (already built) those above it.
		var h []byte
		var vs []sufVar
		for _, fd := range p.paths[i].Hdr {
			if !fd.Const {
				vs = append(vs, sufVar{off: len(h), size: fd.Size, idx: p.off[i] + p.nv[i]})
				p.nv[i]++
			}
			h = append(h, make([]byte, fd.Size)...)
			putN(h[len(h)-fd.Size:], fd.Size, fd.Value)
		}
		if i+1 < n {
			for _, sv := range p.sufVars[i+1] {
				vs = append(vs, sufVar{off: len(h) + sv.off, size: sv.size, idx: sv.idx})
			}
			h = append(h, p.suf[i+1]...)
		}
		p.suf[i], p.sufVars[i] = h, vs
	}
	p.consts, p.vars = nil, nil
	at := 0
	for i := range p.paths {
		var cs []fieldAt
		for _, fd := range p.paths[i].Hdr {
			if fd.Const {
				cs = append(cs, fieldAt{off: at, size: fd.Size, value: fd.Value})
			} else {
				p.vars = append(p.vars, fieldAt{off: at, size: fd.Size})
			}
			at += fd.Size
		}
		p.consts = append(cs, p.consts...)
	}
	p.vsize = p.vsize[:0]
	if n == 0 {
		return
	}
	for _, sv := range p.sufVars[0] {
		p.vsize = append(p.vsize, sv.size)
	}
}

// Compressed header: magic 'C', version 2, path id u32, then the varying
// fields, bottom layer first, each in a prefix varint (putVar). Never
// confused with a bundle ('B') or a full-format datagram (its bottom
// layer's magic).
const (
	compMagic   = 'C'
	compVersion = 2
	compPrefix  = 6
)

// The varying fields' encoding: the first byte's top bits give the length,
// so that a field is read or written with a load or store or two instead
// of a byte-by-byte loop (a uvarint of an incarnation number, a timestamp
// in nanoseconds, takes nine rounds; pt2pt sends two per message). Up to
// 28 bits it is as long as a uvarint. Big-endian after the tag bits:
//
//	0xxxxxxx                        7 bits
//	10xxxxxx + 1 byte              14 bits
//	110xxxxx + 2 bytes             21 bits
//	1110xxxx + 3 bytes             28 bits
//	11110000 + 8 bytes             64 bits
const (
	var2Tag = 0x80
	var3Tag = 0xc0
	var4Tag = 0xe0
	var9Tag = 0xf0
)

// varLen is how many bytes putVar writes for v.
func varLen(v uint64) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	case v < 1<<28:
		return 4
	}
	return 9
}

// putVar writes v at the start of b, which has room for varLen(v) bytes,
// and returns that length.
func putVar(b []byte, v uint64) int {
	switch {
	case v < 1<<7:
		b[0] = byte(v)
		return 1
	case v < 1<<14:
		binary.BigEndian.PutUint16(b, uint16(v)|var2Tag<<8)
		return 2
	case v < 1<<21:
		_ = b[2]
		b[0] = byte(v>>16) | var3Tag
		binary.BigEndian.PutUint16(b[1:], uint16(v))
		return 3
	case v < 1<<28:
		binary.BigEndian.PutUint32(b, uint32(v)|var4Tag<<24)
		return 4
	}
	_ = b[8]
	b[0] = var9Tag
	binary.BigEndian.PutUint64(b[1:], v)
	return 9
}

// getVar reads what putVar writes; n is 0 if b is too short, the tag is
// unknown, or the value has a shorter form (putVar writes each value one
// way only, so a datagram's compressed header is canonical: what decodes
// re-encodes to the same bytes).
func getVar(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch t := b[0]; {
	case t < var2Tag:
		return uint64(t), 1
	case t < var3Tag:
		if len(b) < 2 {
			return 0, 0
		}
		v, n = uint64(binary.BigEndian.Uint16(b)&0x3fff), 2
	case t < var4Tag:
		if len(b) < 3 {
			return 0, 0
		}
		v, n = uint64(t&0x1f)<<16|uint64(binary.BigEndian.Uint16(b[1:])), 3
	case t < var9Tag:
		if len(b) < 4 {
			return 0, 0
		}
		v, n = uint64(binary.BigEndian.Uint32(b)&0x0fffffff), 4
	case t == var9Tag:
		if len(b) < 9 {
			return 0, 0
		}
		v, n = binary.BigEndian.Uint64(b[1:]), 9
	default:
		return 0, 0
	}
	if varLen(v) != n {
		return 0, 0 // overlong
	}
	return v, n
}

// ErrCompressed is returned for a compressed header that does not decode:
// unknown path, truncated, or a field out of range.
var ErrCompressed = errors.New("stack: malformed compressed header")

// Bypass is the optimized form of a stack: one composed path per case that
// every layer supports. It is attached to a Scheduler or Composed (Attach)
// which it hands every event its CCPs reject.
type Bypass struct {
	paths   [numCases]*composed
	byID    map[uint32]*composed // up paths by id
	lastUp  *composed            // the last one decode found (a cache)
	enabled bool
	s       *base
	rb      RefBoundary // the runner's boundary, if it takes events by reference
	full    func(layer int, dir Dir, ev Event)
	// scratch (the bypass is never re-entered: the runner queues
	// injections made while it runs); events live here so that taking
	// their address for the layers' functions does not allocate
	vars   []uint64
	frame  Frame
	evs    []Event
	cur    Event
	loopEv Event
	c      struct {
		hit, miss                            [numCases]uint64
		decompressed, partial, bad, loopMiss uint64
		// missAt[c][i]: misses of case c because layer i's CCP was false
		// (loop misses count under CastUp)
		missAt [numCases][]uint64
	}
	names []string // the layers' names, bottom first
}

// Optimize composes the fast paths of layers (bottom first) into a bypass.
// Cases some layer has no path for are left to the full stack; an error
// reports paths that are inconsistent (down and up headers that differ).
func Optimize(layers []Layer) (*Bypass, error) {
	bp := &Bypass{enabled: true, byID: map[uint32]*composed{}}
	for _, l := range layers {
		bp.names = append(bp.names, layerName(l))
	}
	for c := range numCases {
		bp.c.missAt[c] = make([]uint64, len(layers))
	}
	get := func(i int, c Case) *Path {
		if f, ok := layers[i].(Fast); ok {
			return f.FastPath(c)
		}
		return nil
	}
	n := len(layers)
	for _, kind := range []struct{ down, up, sdown, sup Case }{{SendDown, SendUp, SendDown, SendUp}, {CastDown, CastUp, SendDown, SendUp}} {
		mk := func(c, below Case) *composed {
			p := &composed{c: c, paths: make([]*Path, n), off: make([]int, n), mcast: -1, loop: -1}
			if c == CastDown || c == CastUp {
				// The multicast layer is the highest with a Fanout down path.
				for i := n - 1; i >= 0; i-- {
					if q := get(i, CastDown); q != nil && q.Fanout != nil {
						p.mcast = i
						break
					}
				}
				if p.mcast < 0 {
					return nil
				}
			}
			for i := 0; i < n; i++ {
				cc := c
				if i < p.mcast {
					cc = below
				}
				q := get(i, cc)
				if q == nil {
					return nil
				}
				if i < p.mcast && q.Unrel != nil {
					q = q.Unrel
				}
				p.paths[i] = q
				p.off[i] = p.nvar
				for _, fd := range q.Hdr {
					if !fd.Const {
						p.nvar++
					}
				}
				if q.Loop != nil {
					p.loop = i
				}
			}
			return p
		}
		down, up := mk(kind.down, kind.sdown), mk(kind.up, kind.sup)
		if down == nil || up == nil {
			continue
		}
		if kind.down == SendDown {
			down.calls = takesCalls(down.paths)
			up.calls = down.calls
		}
		h := fnv.New32a()
		fmt.Fprint(h, kind.down.String())
		for i := range n {
			if !reflect.DeepEqual(down.paths[i].Hdr, up.paths[i].Hdr) {
				return nil, fmt.Errorf("stack: layer %d (%s): %s and %s headers differ", i, layerName(layers[i]), kind.down, kind.up)
			}
			fmt.Fprintf(h, "|%s", layerName(layers[i]))
			for _, fd := range down.paths[i].Hdr {
				fmt.Fprintf(h, ",%s:%d:%v:%d", fd.Name, fd.Size, fd.Const, fd.Value)
			}
		}
		down.id, up.id = h.Sum32(), h.Sum32()
		down.prepare()
		up.prepare()
		down.up = up
		bp.paths[kind.down], bp.paths[kind.up] = down, up
		bp.byID[up.id] = up
		bp.vars = make([]uint64, max(len(bp.vars), up.nvar))
	}
	// Each layer's slice of the shared field array, made once (vars no
	// longer moves).
	bp.frame.vars = bp.vars
	for _, p := range bp.paths {
		if p == nil {
			continue
		}
		if !p.c.down() {
			p.deferred = make([]*Deferred, len(p.paths)+1)
			for i := range p.deferred {
				p.deferred[i] = &Deferred{p: p, from: i}
			}
		}
		p.vs = make([][]uint64, len(p.paths))
		for i := range p.paths {
			p.vs[i] = bp.vars[p.off[i] : p.off[i]+p.nv[i] : p.off[i]+p.nv[i]]
		}
		p.key = p.signature(layers)
		if mk := lookupChain(p.key); mk != nil {
			p.chain = mk(layers, p.paths)
		}
	}
	return bp, nil
}

// takesCalls reports whether a SendDown path takes ECall and EResponse
// (Path.Calls): the layers from the top down to the first with a header
// all take them, and that one makes them sends.
func takesCalls(paths []*Path) bool {
	for i := len(paths) - 1; i >= 0; i-- {
		if q := paths[i]; !q.Calls {
			return false
		} else if len(q.Hdr) > 0 {
			return true
		}
	}
	return false
}

func layerName(l Layer) string {
	t := reflect.TypeOf(l)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.ToLower(t.Name())
}

// SetEnabled turns the fast paths on or off. Off, every event takes the
// full stack; compressed datagrams from optimized peers are still
// accepted (decompressed in front of it).
func (bp *Bypass) SetEnabled(on bool) { bp.enabled = on }

// Counters implements Counted: hits and misses per case.
func (bp *Bypass) Counters() []Counter {
	var cs []Counter
	for c := range numCases {
		if bp.paths[c] != nil {
			cs = append(cs, C(c.String()+"_hits", bp.c.hit[c]), C(c.String()+"_misses", bp.c.miss[c]))
		}
	}
	// Which layer's CCP sent each miss to the full stack (only those that
	// did: a stack of n layers would otherwise list 4n zeros).
	for c := range numCases {
		for i, v := range bp.c.missAt[c] {
			if v > 0 {
				cs = append(cs, C(c.String()+"_misses_at_"+bp.names[i], v))
			}
		}
	}
	fused := 0
	for _, p := range bp.paths {
		if p != nil && p.chain != nil {
			fused++
		}
	}
	cs = append(cs, C("fused_paths", uint64(fused)))
	return append(cs, C("loop_misses", bp.c.loopMiss), C("partial", bp.c.partial), C("decompressed", bp.c.decompressed), C("malformed", bp.c.bad))
}

// try runs ev through the bypass if its case has one and every CCP holds.
// It reports whether it took the event (the full stack must not).
func (bp *Bypass) try(dir Dir, ev *Event) bool {
	if dir == Down {
		if !bp.enabled {
			return false
		}
		var p *composed
		switch ev.Type {
		case ESend:
			p = bp.paths[SendDown]
		case ECall, EResponse:
			// Sends with an RPC header, in a stack with an RPC layer.
			if p = bp.paths[SendDown]; p != nil && !p.calls {
				p = nil
			}
		case ECast:
			p = bp.paths[CastDown]
		}
		if p == nil {
			return false
		}
		bp.cur = *ev
		ok := bp.down(p, &bp.cur)
		bp.cur.drop()
		return ok
	}
	if ev.Type != EDeliver || ev.Msg == nil {
		return false
	}
	bp.cur = *ev
	ok := bp.receive(&bp.cur)
	bp.cur.drop()
	bp.frame.clearRx()
	return ok
}

// frameFor readies the scratch frame for layer i of p.
func (bp *Bypass) frameFor(p *composed, i int) *Frame {
	f := &bp.frame
	f.layer = i
	f.V = p.vs[i]
	return f
}

func (bp *Bypass) down(p *composed, ev *Event) bool {
	n := len(p.paths)
	plen := ev.Msg.Len()
	f := &bp.frame
	f.reset(p, plen)
	lo := 0
	if p.mcast >= 0 {
		lo = p.mcast
	}
	if i := bp.ccpDown(p, n-1, lo, ev); i >= 0 {
		bp.c.miss[p.c]++
		bp.c.missAt[p.c][i]++
		return false
	}
	if p.mcast < 0 {
		bp.c.hit[p.c]++
		bp.applyDown(p, n-1, 0, ev)
		bp.emit(p, ev)
		return true
	}
	// A cast: the fan-out's destinations must all pass the layers below.
	m := p.paths[p.mcast]
	dests := m.Fanout(ev)
	if cap(bp.evs) < len(dests) {
		bp.evs = make([]Event, len(dests))
	}
	bp.evs = bp.evs[:len(dests)]
	for k, a := range dests {
		e := &bp.evs[k]
		e.zero()
		e.Type, e.Peer, e.Now, e.Unreliable = ESend, a, ev.Now, true
	}
	for k := range bp.evs {
		if i := bp.ccpBelow(p, p.mcast, &bp.evs[k]); i >= 0 {
			bp.c.miss[p.c]++
			bp.c.missAt[p.c][i]++
			return false
		}
	}
	bp.c.hit[p.c]++
	bp.applyDown(p, n-1, p.mcast, ev)
	if p.loop >= 0 {
		bp.loopEv.zero()
		p.paths[p.loop].Loop(ev, &bp.loopEv)
	}
	keepHdr, payload := f.KeepHdr, f.KeepBody
	f.KeepHdr, f.KeepBody = nil, nil
	// The layers above the multicast layer pushed nothing in this form:
	// their headers are in keepHdr, and in the compressed header. So the
	// cast's message, the payload alone, serves as the first copy (its
	// bytes are payload's: the multicast layer keeps the payload, joined
	// if it came in parts).
	first := ev.Msg
	ev.Msg = nil
	evs := bp.evs
	if len(evs) == 0 {
		first.Free()
	}
	if p.off[p.mcast] == 0 {
		// No layer below the multicast layer has a varying field (the
		// copies pass the point-to-point layers unnumbered): every copy
		// is the same datagram, so they share one message, encoded once
		// (Msg.share). The layers below update their state for each copy
		// before it is encoded, as they see a copy of its own.
		for k := range evs {
			evs[k].Msg = first
			bp.applyDown(p, p.mcast-1, 0, &evs[k])
		}
		if len(evs) > 0 {
			bp.encode(p, first)
			first.share(len(evs) - 1)
		}
		for k := range evs {
			bp.exit(Down, &evs[k])
			evs[k].drop()
		}
	} else {
		for k := range evs {
			e := &evs[k]
			if k == 0 {
				e.Msg = first
			} else {
				e.Msg = NewMsg(payload)
			}
			bp.applyDown(p, p.mcast-1, 0, e)
			bp.emit(p, e)
			e.drop()
		}
	}
	if p.loop >= 0 {
		bp.loopUp(p, &bp.loopEv, payload, keepHdr)
		bp.loopEv.drop()
		bp.frame.clearLoop()
	}
	return true
}

// ccpBelow evaluates the CCPs of layers [0, hi) for ev; it returns the
// first layer whose CCP is false, or -1.
func (bp *Bypass) ccpBelow(p *composed, hi int, ev *Event) int { return bp.ccpDown(p, hi-1, 0, ev) }

// ccpDown evaluates the CCPs of layers hi down to lo for ev; it returns
// the first layer whose CCP is false, or -1.
func (bp *Bypass) ccpDown(p *composed, hi, lo int, ev *Event) int {
	if p.chain != nil {
		return p.chain.CCPDown(hi, lo, ev, &bp.frame)
	}
	for i := hi; i >= lo; i-- {
		if q := p.paths[i]; q.CCP != nil && !q.CCP(ev, bp.frameFor(p, i)) {
			return i
		}
	}
	return -1
}

// applyDown applies layers hi down to lo.
func (bp *Bypass) applyDown(p *composed, hi, lo int, ev *Event) {
	if p.chain != nil {
		p.chain.ApplyDown(hi, lo, ev, &bp.frame)
		return
	}
	for i := hi; i >= lo; i-- {
		if q := p.paths[i]; q.Apply != nil {
			q.Apply(ev, bp.frameFor(p, i))
		}
	}
}

// emit encodes the compressed header in front of ev.Msg and hands the
// datagram to the boundary below.
func (bp *Bypass) emit(p *composed, ev *Event) {
	bp.encode(p, ev.Msg)
	bp.exit(Down, ev)
}

// encode pushes the compressed header in front of m.
func (bp *Bypass) encode(p *composed, m *Msg) {
	vars := bp.vars[:p.nvar]
	n := compPrefix
	for _, v := range vars {
		n += varLen(v)
	}
	h := m.Push(n)
	h[0], h[1] = compMagic, compVersion
	binary.BigEndian.PutUint32(h[2:], p.id)
	at := compPrefix
	for _, v := range vars {
		at += putVar(h[at:], v)
	}
}

// exit hands one of the bypass's scratch events to the boundary: by
// reference if it takes them so (no tracer: a tracer sees every event
// by value), else through the runner's exitRef.
func (bp *Bypass) exit(dir Dir, ev *Event) {
	if bp.rb != nil && bp.s.trace == nil {
		if dir == Down {
			bp.rb.BottomRef(ev)
		} else {
			bp.rb.TopRef(ev)
		}
		return
	}
	i := -1
	if dir == Up {
		i = len(bp.s.layers)
	}
	bp.s.exitRef(i, dir, ev)
}

// loopUp carries the self-delivered copy of a cast up from the loop layer.
//
// The copy shares what the multicast layer keeps (keepHdr: the headers
// above it; the payload, the sender's own buffer) instead of copying it:
// neither is written after the cast, and the layers above that keep the
// cast (gms, for flushes) take their part of them through Frame.Shared.
// The application must not modify a delivered body (see Node.OnDeliver).
func (bp *Bypass) loopUp(p *composed, ev *Event, payload, keepHdr []byte) {
	up := p.up
	f := &bp.frame
	f.reset(up, len(payload))
	f.keepHdr, f.keepBody, f.kept, f.keepAbove = keepHdr, payload, true, p.mcast
	if i := bp.ccpUp(up, p.loop+1, ev); i >= 0 {
		bp.c.loopMiss++
		bp.c.missAt[CastUp][i]++
		ev.Msg = Received(up.fullFormat(bp.vars, p.loop+1, payload))
		bp.full(p.loop+1, Up, *ev)
		return
	}
	ev.Msg = receivedLoop(payload)
	bp.applyUp(up, p.loop+1, ev)
}

// applyUp applies layers lo.. of p to ev and passes the result to the top
// unless a layer absorbs it.
func (bp *Bypass) applyUp(p *composed, lo int, ev *Event) {
	if !bp.applyUpTo(p, lo, len(p.paths), ev) {
		bp.exit(Up, ev)
	}
}

// applyUpTo marks and updates layers lo..hi-1 of p for ev, whose CCPs
// held, and reports whether one of them absorbed it.
func (bp *Bypass) applyUpTo(p *composed, lo, hi int, ev *Event) bool {
	if p.chain != nil {
		return p.chain.ApplyUp(lo, hi, ev, &bp.frame)
	}
	for i := lo; i < hi; i++ {
		q := p.paths[i]
		if q.Mark != nil {
			q.Mark(ev, bp.frameFor(p, i))
		}
		if q.Apply != nil {
			q.Apply(ev, bp.frameFor(p, i))
		}
		if q.Absorb {
			return true
		}
	}
	return false
}

// receive takes a datagram: compressed (decoded here; if a CCP is false,
// decompressed and handed to the full stack) or in full format (taken if
// it parses as a fast path and every CCP holds).
func (bp *Bypass) receive(ev *Event) bool {
	data := ev.Msg.rest()
	if len(data) > 0 && data[0] == compMagic {
		p, hlen, err := bp.decode(data)
		if err != nil {
			bp.c.bad++
			ev.Msg.Free()
			return true
		}
		fail := 0
		if bp.enabled {
			fail = bp.upCCP(p, ev, len(data)-hlen)
		}
		if fail < 0 {
			bp.c.hit[p.c]++
			ev.Msg.head += hlen
			bp.frame.rx, bp.frame.rxHdr = data, hlen
			bp.applyUp(p, 0, ev)
			return true
		}
		bp.c.miss[p.c]++
		if bp.enabled {
			bp.c.missAt[p.c][fail]++ // disabled, no CCP failed
		}
		if need := p.headerLen(fail); fail > 0 && need <= hlen {
			// The layers below fail take the fast path; the full headers
			// of the others fit where the compressed header was.
			bp.c.partial++
			ev.Msg.head += hlen
			bp.applyUpTo(p, 0, fail, ev)
			bp.frame.layer = fail
			bp.frame.AppendHeaders(data[hlen-need:hlen-need], 0)
			ev.Msg.head -= need
			bp.full(fail, Up, *ev)
			return true
		}
		bp.c.decompressed++
		if b := p.fullFormatInPlace(bp.vars, data, hlen); b != nil {
			ev.Msg.buf, ev.Msg.head = b, 0
		} else {
			b := p.fullFormat(bp.vars, 0, data[hlen:])
			ev.Msg.Free()
			ev.Msg = Received(b)
		}
		bp.full(0, Up, *ev)
		return true
	}
	if !bp.enabled {
		return false
	}
	for _, c := range [...]Case{SendUp, CastUp} {
		p := bp.paths[c]
		if p == nil || !bp.parseFull(p, data) {
			continue
		}
		fail := bp.upCCP(p, ev, len(data)-p.headerLen(0))
		if fail == 0 {
			bp.c.miss[c]++
			bp.c.missAt[c][0]++
			return false
		}
		if fail > 0 {
			// The layers below fail take the fast path; the rest of the
			// datagram is already in full format.
			bp.c.miss[c]++
			bp.c.missAt[c][fail]++
			bp.c.partial++
			// (Their updates see the payload alone, as on the fast path.)
			ev.Msg.head += p.headerLen(0)
			bp.applyUpTo(p, 0, fail, ev)
			ev.Msg.head -= p.headerLen(fail)
			bp.full(fail, Up, *ev)
			return true
		}
		bp.c.hit[c]++
		ev.Msg.head += p.headerLen(0)
		bp.frame.rx, bp.frame.rxHdr, bp.frame.rxFull = data, p.headerLen(0), true
		bp.applyUp(p, 0, ev)
		return true
	}
	return false
}

// fullFormat returns, in a new buffer, the full-format headers of layers
// from.. (with the varying fields in vars) followed by payload.
func (p *composed) fullFormat(vars []uint64, from int, payload []byte) []byte {
	f := Frame{p: p, vars: vars, layer: from}
	b := f.AppendHeaders(make([]byte, 0, p.headerLen(from)+len(payload)), 0)
	return append(b, payload...)
}

// fullFormatInPlace rewrites a received compressed datagram (its header
// hlen bytes long) into full format in its own buffer, moving the payload
// into the spare capacity behind it if the full headers are longer (the
// transports leave RxSpare); nil if they do not fit.
func (p *composed) fullFormatInPlace(vars []uint64, data []byte, hlen int) []byte {
	need := p.headerLen(0)
	grow := need - hlen
	if grow > cap(data)-len(data) {
		return nil
	}
	var b []byte
	if grow <= 0 {
		b = data[-grow:]
	} else {
		b = data[:len(data)+grow]
		copy(b[need:], data[hlen:]) // overlapping: copy moves
	}
	f := Frame{p: p, vars: vars}
	f.AppendHeaders(b[:0], 0)
	return b
}

// RxSpare is the spare capacity transports leave behind a received
// datagram, so that a compressed one taking the full stack is expanded in
// its own buffer instead of a copy.
const RxSpare = 128

// headerLen is the full-format length of the headers of layers from..
func (p *composed) headerLen(from int) int {
	if from >= len(p.suf) {
		return 0
	}
	return len(p.suf[from])
}

// upCCP evaluates the CCPs of p for ev; it returns the first layer whose
// CCP is false, or -1 if all hold.
func (bp *Bypass) upCCP(p *composed, ev *Event, plen int) int {
	bp.frame.reset(p, plen)
	return bp.ccpUp(p, 0, ev)
}

// ccpUp evaluates the CCPs of layers lo.. of p for ev, marked layer by
// layer as it would reach each (and then unmarked: the Marks set only
// Seq, see Path.Mark); it returns the first layer whose CCP is false, or
// -1.
func (bp *Bypass) ccpUp(p *composed, lo int, ev *Event) int {
	seq := ev.Seq
	fail := -1
	if p.chain != nil {
		fail = p.chain.CCPUp(lo, ev, &bp.frame)
	} else {
		for i := lo; i < len(p.paths); i++ {
			q := p.paths[i]
			if q.CCP != nil && !q.CCP(ev, bp.frameFor(p, i)) {
				fail = i
				break
			}
			if q.Absorb {
				break
			}
			if q.Mark != nil {
				q.Mark(ev, bp.frameFor(p, i))
			}
		}
	}
	ev.Seq = seq
	return fail
}

// decode reads a compressed header into bp.vars.
func (bp *Bypass) decode(data []byte) (*composed, int, error) {
	if len(data) < compPrefix || data[1] != compVersion {
		return nil, 0, ErrCompressed
	}
	id := binary.BigEndian.Uint32(data[2:])
	p := bp.lastUp
	if p == nil || p.id != id {
		p = bp.byID[id]
		if p != nil {
			bp.lastUp = p
		}
	}
	if p == nil {
		return nil, 0, fmt.Errorf("%w: unknown path %08x", ErrCompressed, id)
	}
	at, err := p.decodeVars(data, bp.vars)
	if err != nil {
		return nil, 0, err
	}
	return p, at, nil
}

// decodeVars reads the varying fields of data, a compressed datagram of
// path p, into vars (unless nil: only checking them) and returns the
// compressed header's length.
func (p *composed) decodeVars(data []byte, vars []uint64) (int, error) {
	at := compPrefix
	if len(data) < at || binary.BigEndian.Uint32(data[2:]) != p.id {
		return 0, ErrCompressed
	}
	for k, size := range p.vsize {
		v, n := getVar(data[at:])
		if n == 0 || (size < 8 && v>>(8*size) != 0) {
			return 0, ErrCompressed
		}
		if vars != nil {
			vars[k] = v
		}
		at += n
	}
	return at, nil
}

// parseFull reads a full-format datagram as path p: every constant field
// must match.
func (bp *Bypass) parseFull(p *composed, data []byte) bool {
	if len(data) < p.headerLen(0) {
		return false
	}
	for _, c := range p.consts {
		if getN(data[c.off:], c.size) != c.value {
			return false
		}
	}
	for k, v := range p.vars {
		bp.vars[k] = getN(data[v.off:], v.size)
	}
	return true
}

// Decompress turns a datagram the bypass of layers compressed back into the
// full-format datagram the full stack would have sent; other datagrams are
// returned unchanged.
func (bp *Bypass) Decompress(data []byte) ([]byte, error) {
	if len(data) == 0 || data[0] != compMagic {
		return data, nil
	}
	p, hlen, err := bp.decode(data)
	if err != nil {
		return nil, err
	}
	return p.fullFormat(bp.vars, 0, data[hlen:]), nil
}
