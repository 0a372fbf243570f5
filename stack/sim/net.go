package sim

import (
	"errors"
	"fmt"
	"time"

	"strata/stack"
)

// Errors returned by endpoints and Endpoint.
var (
	ErrClosed    = errors.New("sim: endpoint closed")
	ErrTooBig    = errors.New("sim: datagram larger than the MTU")
	ErrDuplicate = errors.New("sim: address already in use")
)

// Link is the behaviour of one directed link. The zero Link is perfect:
// no delay, no loss, unlimited bandwidth.
type Link struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter adds a delay drawn uniformly from [0, Jitter) per datagram.
	Jitter time.Duration
	// Loss is the probability that a datagram is dropped.
	Loss float64
	// Dup is the probability that a datagram is delivered twice, the
	// second copy with its own delay.
	Dup float64
	// Reorder is the probability that a datagram gets an extra delay drawn
	// uniformly from [0, 2*Delay+Jitter+1ms), enough to let it fall behind
	// later datagrams even on a link without jitter.
	Reorder float64
	// Bandwidth in bytes per second; 0 means unlimited. Datagrams on a
	// link are serialised: each starts when the previous one has finished
	// and takes len/Bandwidth (rounded up to the nanosecond).
	Bandwidth int64
}

// Validate reports a Link whose fields are out of range.
func (l Link) Validate() error {
	switch {
	case l.Delay < 0 || l.Jitter < 0:
		return fmt.Errorf("sim: negative delay or jitter in %+v", l)
	case !isProb(l.Loss) || !isProb(l.Dup) || !isProb(l.Reorder):
		return fmt.Errorf("sim: Loss, Dup and Reorder must be probabilities in [0,1]: %+v", l)
	case l.Bandwidth < 0:
		return fmt.Errorf("sim: negative bandwidth in %+v", l)
	}
	return nil
}

func isProb(p float64) bool { return p >= 0 && p <= 1 } // false for NaN

// pair names a directed link.
type pair struct{ from, to stack.Addr }

// Stats counts datagrams. Every copy is accounted for exactly once:
// Sent + Duplicated == Delivered + Lost + Dropped + InFlight.
type Stats struct {
	Sent           uint64 // Send calls that returned nil
	Bytes          uint64 // bytes in those datagrams
	Delivered      uint64 // copies handed to a receiver
	DeliveredBytes uint64 // bytes in those copies
	Lost           uint64 // dropped by a link's Loss
	Duplicated     uint64 // extra copies made by a link's Dup
	InFlight       uint64 // copies scheduled for delivery, not yet arrived

	Dropped          uint64 // the sum of the four below
	DroppedPartition uint64 // sent across a partition
	DroppedCrash     uint64 // sent by a crashed endpoint, or arrived at one
	DroppedUnknown   uint64 // sent to an address with no endpoint
	DroppedClosed    uint64 // arrived after the endpoint closed, or with no receiver set
}

// Stats returns the counters so far.
func (n *Net) Stats() Stats { return n.stats }

// SetMTU sets the largest datagram every endpoint accepts (default 1400).
// It panics if mtu is not positive.
func (n *Net) SetMTU(mtu int) {
	if mtu <= 0 {
		panic(fmt.Sprintf("sim: MTU must be positive, got %d", mtu))
	}
	n.mtu = mtu
}

// SetDefault sets the behaviour of every directed link that has no
// setting of its own. It panics if l is invalid (see Link.Validate): a
// simulation script with impossible parameters is a bug to fix, not a
// condition to handle.
func (n *Net) SetDefault(l Link) {
	mustValid(l)
	n.def = l
}

// SetLink sets the behaviour of the directed link from → to, overriding
// the default. It panics if l is invalid. Changing a link's Delay while
// datagrams are in flight on it can reorder them.
func (n *Net) SetLink(from, to stack.Addr, l Link) {
	mustValid(l)
	n.links[pair{from, to}] = l
}

// LinkOf returns the behaviour of the directed link from → to: its own
// setting or the default.
func (n *Net) LinkOf(from, to stack.Addr) Link {
	if l, ok := n.links[pair{from, to}]; ok {
		return l
	}
	return n.def
}

func mustValid(l Link) {
	if err := l.Validate(); err != nil {
		panic(err)
	}
}

// Partition splits the network: endpoints can exchange datagrams only
// with endpoints of their own group. Addresses listed in no group
// (including endpoints created later) form one more group together.
// Partition replaces any previous partition; datagrams already in flight
// are still delivered. It panics if an address is listed twice.
func (n *Net) Partition(groups ...[]stack.Addr) {
	g := map[stack.Addr]int{}
	for i, grp := range groups {
		for _, a := range grp {
			if _, dup := g[a]; dup {
				panic(fmt.Sprintf("sim: address %q listed in two partition groups", a))
			}
			g[a] = i + 1 // 0 is the group of the unlisted
		}
	}
	n.group = g
}

// Heal ends the partition.
func (n *Net) Heal() { n.group = nil }

func (n *Net) connected(a, b stack.Addr) bool {
	return n.group == nil || n.group[a] == n.group[b]
}

// Crash makes addr fail: its sends are dropped and datagrams arriving for
// it are dropped, until Restart. The address need not have an endpoint
// yet. Crash hooks run if the state changed.
func (n *Net) Crash(addr stack.Addr) {
	if n.crashed[addr] {
		return
	}
	n.crashed[addr] = true
	for _, h := range n.hooks {
		h(addr, true)
	}
}

// Restart undoes Crash. Crash hooks run if the state changed.
func (n *Net) Restart(addr stack.Addr) {
	if !n.crashed[addr] {
		return
	}
	delete(n.crashed, addr)
	for _, h := range n.hooks {
		h(addr, false)
	}
}

// Crashed reports whether addr is crashed.
func (n *Net) Crashed(addr stack.Addr) bool { return n.crashed[addr] }

// CrashHook registers f to run, in registration order, whenever Crash or
// Restart changes an address's state, so a harness can stop and restart
// the node's stack and timers along with its network interface.
func (n *Net) CrashHook(f func(addr stack.Addr, crashed bool)) {
	n.hooks = append(n.hooks, f)
}

// Endpoint attaches a new endpoint at addr (for example "sim:a"). It fails
// if addr is empty or already has an open endpoint; after Close the
// address may be used again.
func (n *Net) Endpoint(addr stack.Addr) (stack.Transport, error) {
	if addr == "" {
		return nil, errors.New("sim: empty address")
	}
	if _, ok := n.eps[addr]; ok {
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, addr)
	}
	e := &endpoint{n: n, addr: addr}
	n.eps[addr] = e
	return e, nil
}

// endpoint implements stack.Transport on a Net.
type endpoint struct {
	n      *Net
	addr   stack.Addr
	recv   func(from stack.Addr, data []byte)
	closed bool
}

func (e *endpoint) Local() stack.Addr { return e.addr }

func (e *endpoint) MTU() int { return e.n.mtu }

// SetReceiver sets the function deliveries are handed to, from the
// simulation loop. Datagrams arriving while it is nil are dropped
// (DroppedClosed), like datagrams to a socket nobody reads.
func (e *endpoint) SetReceiver(f func(from stack.Addr, data []byte)) { e.recv = f }

// Close detaches the endpoint: datagrams still in flight to it are
// dropped on arrival unless a new endpoint takes the address first.
// Closing twice is harmless.
func (e *endpoint) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if e.n.eps[e.addr] == e {
		delete(e.n.eps, e.addr)
	}
	return nil
}

// Send copies vec into one datagram and schedules its delivery according
// to the link to `to`. It fails only for a closed endpoint or a datagram
// over the MTU; everything else the network does to the datagram (loss,
// partition, crash, unknown address) is silent, as with UDP, and shows in
// Stats.
func (e *endpoint) Send(to stack.Addr, vec [][]byte) error {
	if e.closed {
		return ErrClosed
	}
	n := e.n
	size := 0
	for _, v := range vec {
		size += len(v)
	}
	if size > n.mtu {
		return fmt.Errorf("%w: %d bytes, MTU %d", ErrTooBig, size, n.mtu)
	}
	n.stats.Sent++
	n.stats.Bytes += uint64(size)
	switch {
	case n.crashed[e.addr]:
		n.drop(&n.stats.DroppedCrash)
		return nil
	case n.eps[to] == nil:
		n.drop(&n.stats.DroppedUnknown)
		return nil
	case !n.connected(e.addr, to):
		n.drop(&n.stats.DroppedPartition)
		return nil
	}
	data := make([]byte, 0, size)
	for _, v := range vec {
		data = append(data, v...)
	}
	n.transmit(e.addr, to, data)
	return nil
}

// transmit puts data on the link from → to. The random draws happen in a
// fixed order (loss, dup, then per copy jitter and reorder), and only for
// features the link enables, so a script's randomness depends only on
// the seed and on the script.
func (n *Net) transmit(from, to stack.Addr, data []byte) {
	l := n.LinkOf(from, to)
	p := pair{from, to}
	end := n.now
	if l.Bandwidth > 0 {
		start := max(n.now, n.busy[p])
		end = addTime(start, serialisation(len(data), l.Bandwidth))
		n.busy[p] = end
	}
	if l.Loss > 0 && n.rng.Float64() < l.Loss {
		n.stats.Lost++
		return
	}
	copies := 1
	if l.Dup > 0 && n.rng.Float64() < l.Dup {
		copies = 2
		n.stats.Duplicated++
	}
	for i := range copies {
		at := addTime(end, l.Delay)
		if l.Jitter > 0 {
			at = addTime(at, time.Duration(n.rng.Int64N(int64(l.Jitter))))
		}
		if l.Reorder > 0 && n.rng.Float64() < l.Reorder {
			span := addTime(addTime(addTime(l.Delay, l.Delay), l.Jitter), time.Millisecond)
			at = addTime(at, time.Duration(n.rng.Int64N(int64(span))))
		}
		d := data
		if i > 0 {
			// The receiver owns what it is handed; each copy needs its own.
			d = append([]byte(nil), data...)
		}
		n.stats.InFlight++
		n.at(at, func() { n.deliver(from, to, d) })
	}
}

// serialisation is the time to put size bytes on a link of bw bytes/s,
// rounded up so that a non-empty datagram never takes zero time.
func serialisation(size int, bw int64) time.Duration {
	s := int64(size)
	if s > (int64(maxTime)-bw)/int64(time.Second) {
		return maxTime
	}
	return time.Duration((s*int64(time.Second) + bw - 1) / bw)
}

// deliver hands data to whatever endpoint holds the address now.
func (n *Net) deliver(from, to stack.Addr, data []byte) {
	n.stats.InFlight--
	e := n.eps[to]
	switch {
	case n.crashed[to]:
		n.drop(&n.stats.DroppedCrash)
	case e == nil || e.recv == nil:
		n.drop(&n.stats.DroppedClosed)
	default:
		n.stats.Delivered++
		n.stats.DeliveredBytes += uint64(len(data))
		e.recv(from, data)
	}
}

func (n *Net) drop(c *uint64) {
	*c++
	n.stats.Dropped++
}
