package sim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"

	"strata/stack"
)

// maxTime is the end of virtual time; sums saturate there instead of
// wrapping to negative times, which would run callbacks "in the past".
const maxTime = time.Duration(math.MaxInt64)

// event is one scheduled callback. seq breaks ties between callbacks due
// at the same instant, so that equal times run in scheduling order rather
// than in whatever order the heap happens to leave them.
type event struct {
	at  time.Duration
	seq uint64
	f   func()
	idx int // position in the heap; -1 once run or stopped
}

// eventHeap is a min-heap on (at, seq) that keeps each event's index up to
// date, so a timer's stop function can remove it in O(log n) instead of
// leaving a tombstone that Run would have to skip (and that would make
// Pending lie).
type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *eventHeap) Push(x any) {
	e := x.(*event)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil // let the callback be collected
	*h = old[:len(old)-1]
	e.idx = -1
	return e
}

// Net is a simulated network and its virtual clock. The zero value is not
// usable; create one with New.
type Net struct {
	now     time.Duration
	seq     uint64
	q       eventHeap
	rng     *rand.Rand
	running bool

	mtu   int
	def   Link
	links map[pair]Link          // explicit per-link settings
	busy  map[pair]time.Duration // end of the current transmission per link
	eps   map[stack.Addr]*endpoint

	crashed map[stack.Addr]bool
	hooks   []func(addr stack.Addr, crashed bool)
	// group is the partition: addresses not in it share group 0. nil
	// means no partition.
	group map[stack.Addr]int

	stats Stats
}

// New returns an empty network at virtual time 0 whose random choices all
// come from a PCG generator seeded with seed. The default link is perfect
// (no delay, loss, duplication or reordering; unlimited bandwidth) and the
// MTU is 1400 bytes, stack.Config's default.
func New(seed uint64) *Net {
	return &Net{
		// Both PCG words from the seed: any fixed derivation would do, as
		// long as it never changes, or old seeds would replay differently.
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		mtu:     1400,
		links:   map[pair]Link{},
		busy:    map[pair]time.Duration{},
		eps:     map[stack.Addr]*endpoint{},
		crashed: map[stack.Addr]bool{},
	}
}

// Rand returns the network's generator, for harnesses that want their
// workload to be reproducible from the same seed. Drawing from it changes
// the network's later choices (deterministically).
func (n *Net) Rand() *rand.Rand { return n.rng }

// Now is the virtual time since New.
func (n *Net) Now() time.Duration { return n.now }

// Clock returns the network's virtual clock. Its callbacks run from Run,
// RunUntil and Step, interleaved with datagram deliveries in time order.
func (n *Net) Clock() stack.Clock { return clock{n} }

// clock adapts Net to stack.Clock without exposing AfterFunc on Net twice
// under two names.
type clock struct{ n *Net }

func (c clock) Now() time.Duration { return c.n.now }

func (c clock) AfterFunc(d time.Duration, f func()) func() bool {
	return c.n.AfterFunc(d, f)
}

// AfterFunc schedules f to run d after the current virtual time (a
// negative d counts as 0: the past is not schedulable). The returned stop
// function cancels f and reports whether it had not run yet; calling it
// again, or after f ran, returns false.
func (n *Net) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	e := n.at(addTime(n.now, d), f)
	return func() bool {
		if e.idx < 0 {
			return false
		}
		heap.Remove(&n.q, e.idx)
		e.idx, e.f = -1, nil
		return true
	}
}

// at schedules f at absolute virtual time t (not before now).
func (n *Net) at(t time.Duration, f func()) *event {
	if t < n.now {
		t = n.now
	}
	n.seq++
	e := &event{at: t, seq: n.seq, f: f}
	heap.Push(&n.q, e)
	return e
}

// Pending is the number of scheduled callbacks (timers and datagrams in
// flight).
func (n *Net) Pending() int { return len(n.q) }

// Step runs the earliest scheduled callback, advancing virtual time to its
// instant, and reports whether there was one.
func (n *Net) Step() bool {
	n.enter()
	defer n.leave()
	if len(n.q) == 0 {
		return false
	}
	n.runNext()
	return true
}

// Run runs, in time order, every callback due at or before now+limit,
// including those scheduled meanwhile, then sets the virtual time to
// now+limit. A negative limit counts as 0. Callbacks that keep scheduling
// work at the current instant make Run loop forever, as they would make a
// real event loop spin.
func (n *Net) Run(limit time.Duration) {
	n.enter()
	defer n.leave()
	end := addTime(n.now, limit)
	for len(n.q) > 0 && n.q[0].at <= end {
		n.runNext()
	}
	n.now = end
}

// RunUntil runs callbacks in time order until cond holds (checked before
// the first callback and after every one) or no callback is due at or
// before now+limit; in the second case the virtual time moves to
// now+limit. It returns cond(). When cond becomes true, the virtual time
// stays at the instant of the callback that made it true, so Now measures
// how long it took.
func (n *Net) RunUntil(cond func() bool, limit time.Duration) bool {
	n.enter()
	defer n.leave()
	end := addTime(n.now, limit)
	for !cond() {
		if len(n.q) == 0 || n.q[0].at > end {
			n.now = end
			return cond()
		}
		n.runNext()
	}
	return true
}

func (n *Net) runNext() {
	e := heap.Pop(&n.q).(*event)
	n.now = e.at
	f := e.f
	e.f = nil
	f()
}

// enter guards against a loop inside a callback: it would run later
// events before the current callback finished, breaking time order.
func (n *Net) enter() {
	if n.running {
		panic("sim: Run, RunUntil or Step called from inside a simulation callback")
	}
	n.running = true
}

func (n *Net) leave() { n.running = false }

// addTime is t+d, with d < 0 counted as 0 and the sum saturating at
// maxTime.
func addTime(t, d time.Duration) time.Duration {
	if d <= 0 {
		return t
	}
	if d > maxTime-t {
		return maxTime
	}
	return t + d
}
