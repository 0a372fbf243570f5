// Package wormlog is WormLog (WormSpace §4.2): a shared log over
// write-once registers, in the style of CORFU, using only the public
// wor.Client API, so it runs unchanged over the paxos and chain engines.
//
// A log is a range of WOR segments from Base, each of SegmentSize
// registers; position p is register p mod SegmentSize of segment
// Base + p / SegmentSize. Log servers (Server) run beside the wormservers;
// one of them is the sequencer. It allocates the log's segments in order,
// captures each whole segment ahead of need (SegCapture), and hands each
// appender a position with the capture's id as a token; the appender
// writes its entry to that register under the token (WriteWithToken), so
// an append is two round trips: one to the sequencer, which never sees
// the entry, and one write. Readers read the registers directly.
//
// Guarantees:
//   - Each position holds one value forever (a register is written once):
//     an entry, or junk (a hole filled). Append returns the position its
//     entry holds; the entry is nowhere else. An append whose context ends
//     mid-write returns ErrUnknown (it may or may not be in the log).
//   - The sequencer hands out each position once: a new sequencer takes a
//     fresh segment (Alloc arbitrates between servers racing to take
//     over), junk-fills the two segments before it (its captures preempt
//     the old sequencer's tokens; a half-written entry found there is
//     completed, not lost) and counts from its own segment. The sequencer
//     is soft state: a standby takes over when it has not answered for an
//     election timeout, and a restarted server named by the newest segment
//     takes over at once.
//   - A position the sequencer handed out but nobody wrote (a crashed
//     appender) is a hole: a reader waits HoleTimeout, then fills it with
//     junk (a capture then a write, which completes a half-written entry
//     instead). The slow appender's write then fails and it appends again
//     at a new position. Subscribers skip junk and see entries in
//     position order.
//   - Trim discards whole segments before a position.
//
// Assumptions: a majority of wormservers (paxos) or the whole chain is
// up for progress; servers of one log agree on Base and SegmentSize;
// appenders finish a write well within HoleTimeout when the system is
// healthy (a slower one costs a retry, never a duplicate or a loss).
package wormlog
