// Package sim is a deterministic simulated network for package stack: a
// virtual clock, an event-driven scheduler, datagram endpoints that
// implement stack.Transport, a per-link model (delay, jitter, loss,
// duplication, reordering, bandwidth), faults (partitions, crashes) and
// wide-area delays loaded from measured inter-region round-trip times.
//
// # Guarantees
//
//   - Determinism. A Net is a pure function of its seed and of the calls
//     made on it: the same seed and the same script give the same sequence
//     of callbacks at the same virtual times, hence the same delivery
//     trace. The seeded PCG generator (math/rand/v2) is the only source of
//     randomness; time comes only from the virtual clock; callbacks
//     scheduled for the same instant run in the order they were scheduled.
//     Nothing ranges over a Go map where the order could leak out.
//   - No real time. A Net starts no goroutine, reads no wall clock and
//     never sleeps. Virtual time jumps from one event to the next, so a
//     simulated hour of a 1 Hz timer costs 3600 callbacks, not an hour.
//     The one exception is opt-in: RealTime runs a Net on its own
//     goroutine with the virtual clock following the wall clock, for code
//     that blocks and uses wall-clock timeouts; it keeps the link model
//     and faults but gives up determinism (see RealTime).
//   - Single-threaded. Every callback (timers and datagram deliveries) runs
//     on the goroutine that calls Run, RunUntil or Step. A Net is not safe
//     for concurrent use: drive it, and the stacks attached to it, from one
//     goroutine. Calling Run, RunUntil or Step from inside a callback
//     panics, because the nested loop would run events out of order.
//   - FIFO links. With no Jitter and no Reorder on a link, and its Delay
//     left unchanged while datagrams are in flight, datagrams arrive in the
//     order they were sent (delivery times never decrease and ties run in
//     scheduling order). Jitter or Reorder break this on purpose.
//
// # Model
//
// Send copies the datagram at once (the caller may reuse its buffers) and
// decides its fate at send time, drawing from the generator in a fixed
// order: transmission starts when the directed link is free (bandwidth
// serialisation), then Loss may drop it, Dup may make a second copy, and
// each copy gets its own propagation delay (Delay, plus uniform Jitter,
// plus with probability Reorder an extra uniform delay below
// 2*Delay+Jitter+1ms, so that it can overtake or be overtaken). A lost
// datagram still occupied the link: it was lost on the wire, not at the
// sender. The duplicate shares the original's transmission: duplication
// happens inside the network.
//
// Faults are checked where a real network would notice them. The sender's
// crash, the destination's existence and partitions are checked at send
// time; a datagram that has left is in flight and is not recalled when a
// partition starts later (it already left the network card), nor dropped
// when the sender crashes later. The destination is resolved again at
// delivery time: if it is crashed then, or closed (and not re-created
// under the same address), the datagram is dropped; if it was restarted
// in the meantime, it receives the datagram, as a rebooted host would.
// Crash affects only the network: the crashed node's timers keep firing
// on the shared clock, so a harness that wants the node's stack to stop
// too registers a CrashHook.
//
// Every datagram copy is accounted for exactly once, so at any moment
//
//	Sent + Duplicated == Delivered + Lost + Dropped + InFlight
//
// (Stats). Send errors (closed endpoint, datagram over the MTU) are not
// counted as sent.
//
// # Wide-area delays
//
// LoadGeo reads the median inter-region latencies published with the
// Pando paper (Uluyol et al., "Near-Optimal Latency Versus Cost Tradeoffs
// in Geo-Distributed Storage", NSDI '20; repository uluyol/pando-pub,
// data/): loc-index-map.txt and net-only-latency.txt. Those numbers are
// round trips; ApplyGeo halves them for one-way link delays.
package sim
