// Package stackbench measures Strata's protocol stacks: the code latency of
// a message down and up through the reliable point-to-point stack with no
// network (the paper's Table 1 measurement), and round trips over loopback
// sockets between two processes.
package stackbench

import (
	"runtime"
	"time"

	"strata/stack"
	"strata/stack/layers"
)

// CodeResult is the cost of one message through the stack, without I/O.
type CodeResult struct {
	Stack     string  `json:"stack"` // "pt2pt" (bottom, pt2pt, top), "mcast4" (top, mnak, pt2pt, bottom) or "vsync" (Total,Membership: 13 layers)
	Size      int     `json:"size"`
	Mode      string  `json:"mode"`          // "imperative", "functional", "bypass" (the imperative stack with Optimize's bypass) or "generic" (the same bypass without its generated code)
	DownNs    float64 `json:"down_ns"`       // sender: application to transport (the stack's code: Inject; wrapping the payload in a Msg and the copy onto the wire are not counted)
	UpNs      float64 `json:"up_ns"`         // a receiver: wire to application (Inject of the datagram, already wrapped in a Msg; vsync: to the total layer, which holds it for its order entry)
	AckNs     float64 `json:"ack_ns"`        // the rest, per message: acks (vsync: sequencing, order entries, acks at every member)
	Hits      float64 `json:"bypass_hits"`   // bypass: the fraction of fast-path cases that took it
	WireBytes int     `json:"wire_bytes"`    // the datagram of one message (payload and headers, compressed in bypass mode)
	AllocsOp  float64 `json:"allocs_per_op"` // everything per message, the harness's frame buffers included
	// Allocations per message in each step, by the stacks alone (the
	// harness's buffers for frames on the wire are set aside beforehand).
	DownAllocs float64 `json:"down_allocs"`
	UpAllocs   float64 `json:"up_allocs"`
	RestAllocs float64 `json:"rest_allocs"`
	Delivered  int     `json:"delivered"` // messages the receiver delivered in the measured loop
	// ClockNs is what reading the clock adds to each timed step, measured
	// in place every round; it is subtracted from DownNs, UpNs and AckNs.
	ClockNs float64 `json:"clock_ns"`
	BytesOp float64 `json:"bytes_per_op"`
}

// frameBoundary keeps the last frame a stack put on the wire: the message
// until take copies it (standing for the transport, outside the stack's
// code) into frame.
type frameBoundary struct {
	m     *stack.Msg
	frame []byte
	got   int
}

func (f *frameBoundary) take() {
	if f.m != nil {
		f.frame = f.m.AppendTo(f.frame[:0])
		f.m.Free()
		f.m = nil
	}
}

func (f *frameBoundary) Top(ev stack.Event)    { f.TopRef(&ev) }
func (f *frameBoundary) Bottom(ev stack.Event) { f.BottomRef(&ev) }

// TopRef and BottomRef implement stack.RefBoundary, as Node does.
func (f *frameBoundary) TopRef(ev *stack.Event) {
	if ev.Type == stack.EDeliver {
		f.got++
		ev.Msg.Free()
	}
}

func (f *frameBoundary) BottomRef(ev *stack.Event) {
	if ev.Type == stack.ESend {
		if f.m != nil {
			f.m.Free() // a second frame in one step: only the last is carried
		}
		f.m = ev.Msg
	}
}

// CodeLatency sends n messages of size bytes from one reliable
// point-to-point stack to another, by hand-carrying each frame (and each
// ack back), and reports the time per step and allocations per message.
func CodeLatency(size, n int, mode string) CodeResult {
	ch, err := layers.Configure([]stack.Prop{stack.Reliable, stack.FIFO})
	if err != nil {
		panic(err) // a fixed, valid property set
	}
	mk := func(b stack.Boundary, epoch uint64) stack.Runner {
		return runner(layers.Build(ch.Specs, stack.Config{Epoch: epoch, Window: 1 << 20}), b, mode)
	}
	fa, fb := &frameBoundary{}, &frameBoundary{}
	a, b := mk(fa, 1), mk(fb, 2)
	payload := make([]byte, size)
	rx := make([]byte, 0, size+256)
	wire := 0
	round := func(_ int, at func(step int)) {
		// The timed steps are the stacks' code alone: wrapping the payload
		// (the application's part) or a datagram (the transport's) in a
		// Msg comes before them.
		m := stack.NewMsg(payload)
		at(0)
		a.Inject(stack.Down, stack.Event{Type: stack.ESend, Peer: "b", Msg: m})
		at(1)
		fa.take()
		wire = len(fa.frame)
		rx = append(rx[:0], fa.frame...)
		m = stack.Received(rx)
		at(2)
		b.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: "a", Msg: m})
		at(3)
		fb.take()
		rx = append(rx[:0], fb.frame...)
		a.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: "b", Msg: stack.Received(rx)})
		at(4)
	}
	before := fb.got
	r := measure(n, round)
	r.Stack, r.Size, r.Mode, r.Delivered = "pt2pt", size, mode, fb.got-before-(n/10+100)-allocRounds(n) // less the warm-up and the allocation pass
	r.Hits, r.WireBytes = hitRate(a, b), wire
	return r
}

// Modes are the ways a stack can run: the two compositions, the bypass
// (with the generated code of fused_gen.go where the stack has it) and the
// bypass's generic loops alone.
var Modes = []string{"imperative", "functional", "bypass", "generic"}

// runner composes layers in a mode.
func runner(ls []stack.Layer, b stack.Boundary, mode string) stack.Runner {
	r, err := stack.NewRunner(ls, b, nil, mode == "functional", mode == "bypass" || mode == "generic")
	if err != nil {
		panic(err) // the layers' fast paths are checked by the equivalence tests
	}
	if mode == "generic" {
		r.Bypass().Unfuse()
	}
	return r
}

// hitRate is the fraction of bypass attempts that took the bypass.
func hitRate(rs ...stack.Runner) float64 {
	var hit, all uint64
	for _, r := range rs {
		if r.Bypass() == nil {
			continue
		}
		for _, c := range r.Bypass().Counters() {
			switch {
			case len(c.Name) > 5 && c.Name[len(c.Name)-5:] == "_hits":
				hit += c.Value
				all += c.Value
			case len(c.Name) > 7 && c.Name[len(c.Name)-7:] == "_misses":
				all += c.Value
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(hit) / float64(all)
}

// measure runs round n/10+100 times to warm up, then n times, and reports
// the mean time of each of its three steps (less what reading the clock
// costs) and the allocations per round; then allocRounds(n) more times,
// counting the allocations of each step. round calls at(0) .. at(4):
// down is at(0)..at(1), up at(2)..at(3), the rest at(3)..at(4); between
// at(1) and at(2) it copies the sender's frames as the transport would (in
// no count), and what it does before at(0) (setting buffers aside) is
// in neither count.
func measure(n int, round func(i int, at func(step int))) CodeResult {
	nop := func(int) {}
	for i := 0; i < n/10+100; i++ { // warm up pools and maps
		round(i, nop)
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	var ts [7]time.Time
	var sum [3]time.Duration
	var clock time.Duration
	at := func(k int) { ts[k] = time.Now() }
	for i := 0; i < n; i++ {
		// What the timing itself adds to a step, measured in place: two
		// readings through the same closure, with nothing between them,
		// before every round. (A tight loop of time.Now pairs, which this
		// replaced, costs about half as much as a pair here does: there
		// the clock's code and data stay hot.)
		at(5)
		at(6)
		round(i, at)
		sum[0] += ts[1].Sub(ts[0])
		sum[1] += ts[3].Sub(ts[2])
		sum[2] += ts[4].Sub(ts[3])
		clock += ts[6].Sub(ts[5])
	}
	runtime.ReadMemStats(&ms1)
	per := func(d time.Duration) float64 { return max(float64(d-clock)/float64(n), 0) }
	r := CodeResult{
		DownNs: per(sum[0]), UpNs: per(sum[1]), AckNs: per(sum[2]), ClockNs: float64(clock) / float64(n),
		AllocsOp: float64(ms1.Mallocs-ms0.Mallocs) / float64(n),
		BytesOp:  float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(n),
	}
	// The allocation pass: ReadMemStats at every boundary (it stops the
	// world, so not in the timed pass).
	na := allocRounds(n)
	var mallocs [5]uint64
	var allocs [3]uint64
	var ms runtime.MemStats
	count := func(k int) { runtime.ReadMemStats(&ms); mallocs[k] = ms.Mallocs }
	for i := 0; i < na; i++ {
		round(n+i, count)
		allocs[0] += mallocs[1] - mallocs[0]
		allocs[1] += mallocs[3] - mallocs[2]
		allocs[2] += mallocs[4] - mallocs[3]
	}
	r.DownAllocs = float64(allocs[0]) / float64(na)
	r.UpAllocs = float64(allocs[1]) / float64(na)
	r.RestAllocs = float64(allocs[2]) / float64(na)
	return r
}

// allocRounds is how many rounds measure's allocation pass runs.
func allocRounds(n int) int { return min(n, 2000) }
