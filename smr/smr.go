// Package smr is WormPaxos (WormSpace §4.1): state machine replication
// over write-once registers, using only the public wor.Client API, so it
// runs unchanged over every WOR engine (paxos, chain, a Cluster).
//
// A group of replicas shares one log: a sequence of log segments in the
// WOR address space, each register holding one entry (a batch of
// commands, a no-op, junk, or a snapshot pointer). Every replica reads
// the log in order and applies the commands to its StateMachine, so all
// replicas apply the same commands in the same order.
//
// # Guarantees
//
//   - Agreement: every replica applies the same sequence of commands, with
//     the same indexes (1, 2, 3, ...); a restarted or new replica that
//     starts from a snapshot continues the same sequence.
//   - At most once: a proposal is written into one register only, so it is
//     applied at most once. Propose reports its outcome: the result (it was
//     applied), an ErrNotLeader error (it was not applied and never will
//     be: retry it, at the leader), or, only where the replica cannot
//     learn it (ctx ended, Close, or a snapshot skipped its register),
//     ctx.Err(), ErrClosed or ErrUnknown: the outcome is unknown, so retry
//     only if the command is idempotent or deduplicated (the KV service
//     deduplicates by client id and sequence number).
//   - Linearizable reads: Read(ctx, Linearizable, fn) runs fn on a state
//     that includes every Propose that completed before Read was called.
//     Sequential reads see a prefix of the log that only grows.
//
// # Assumptions
//
// Replicas of a group have distinct nonzero IDs, and the wor.Client of each
// has its own client id (its ballots must differ from the others'). The
// group owns the segment range [Config.Log, Config.Log+GroupSpan): nobody
// else allocates there. Progress needs the WOR space to be reachable (a
// majority of each paxos partition) and, for writes, one replica that can
// reach it; safety needs nothing more than the WOR guarantees. Liveness
// information (heartbeats, leadership) travels only through the WOR space:
// replicas never talk to each other directly.
//
// # Threads
//
// StateMachine's Apply, Snapshot and Restore are called from one goroutine
// only (the replica's apply loop), never concurrently with each other or
// with a Read's fn. See docs/smr.md for the segment layout, failover,
// batching, snapshots and reads.
package smr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"strata/wor"
)

// StateMachine is the replicated state. Apply, Snapshot and Restore are
// called from one goroutine only, never concurrently with each other or
// with a Read's fn.
type StateMachine interface {
	// Apply applies the command decided at log index (1, 2, 3, ...
	// strictly increasing across Apply calls, no gaps except that
	// junk/no-op entries are skipped, and after Restore(index) the next is
	// index+1) and returns its result; it must be deterministic.
	Apply(index uint64, cmd []byte) []byte
	// Snapshot returns the state as of the last applied index.
	Snapshot() ([]byte, error)
	// Restore replaces the state with a snapshot taken at index. snap
	// is the machine's to keep: the replica never changes or reuses it.
	Restore(index uint64, snap []byte) error
}

// Capturer is a StateMachine whose snapshots are taken in two steps;
// replicas use it instead of Snapshot when the state machine has it.
// CaptureSnapshot is called like Snapshot (on the apply goroutine) and
// only captures the state as of the last applied index, cheaply (a
// copy-on-write clone); the function it returns encodes that captured
// state and is called once, on another goroutine, concurrently with later
// Apply calls. A large state then does not stall the apply loop (and
// every read and write waiting on it) while it is encoded.
type Capturer interface {
	CaptureSnapshot() func() ([]byte, error)
}

// Consistency is what a Read sees.
type Consistency int

const (
	// Linearizable: the state includes every write that completed before
	// Read was called (a tail probe of the log, then waiting until it is
	// applied here).
	Linearizable Consistency = iota
	// Sequential: the replica's local state at once; every replica's
	// state is a prefix of the same log, growing over time.
	Sequential
)

func (c Consistency) String() string {
	switch c {
	case Linearizable:
		return "linearizable"
	case Sequential:
		return "sequential"
	}
	return fmt.Sprintf("Consistency(%d)", int(c))
}

// Layout of a group's segment range (see docs/smr.md): log segment i is
// segment Log+i, for i below MaxLogSegments; snapshot k is stored in
// segment Log+MaxLogSegments+k.
const (
	// GroupSpan is how many segment ids a group owns from Config.Log on.
	GroupSpan = 1 << 32
	// MaxLogSegments bounds the log segments of a group; the snapshot
	// segments follow them.
	MaxLogSegments = GroupSpan / 2
)

// Defaults of Config.
const (
	// DefaultSegmentSize: one SegCapture captures a whole log segment,
	// and a failover junk-fills at most the rest of the old leader's
	// segment and the next one it may have allocated (about 320 registers
	// at most: each is a journal slot written on a persistent server).
	DefaultSegmentSize = 256
	// DefaultSnapshotEvery is the applied commands between snapshots.
	DefaultSnapshotEvery = 10000
	// DefaultSnapshotRate is the pace of snapshot writes, bytes a second.
	DefaultSnapshotRate = 8 << 20
	// DefaultHeartbeat: an idle leader writes a no-op this often.
	DefaultHeartbeat = 50 * time.Millisecond
	// DefaultElectionTimeout: a follower campaigns when the log's tail has
	// not moved for a random time in [ElectionTimeout, 2*ElectionTimeout).
	DefaultElectionTimeout = 500 * time.Millisecond
	// DefaultMaxEntry is the largest register value the log writes: what
	// a persistent wormserver stores (larger values are refused there).
	DefaultMaxEntry = wor.MaxPersistentValue
	// DefaultPipeline is how many log write requests a leader keeps in
	// flight.
	DefaultPipeline = 8
	// DefaultMaxCommand is the largest command a replica accepts (at most
	// what MaxParts entries of MaxEntry bytes hold).
	DefaultMaxCommand = 1 << 20
)

// Config configures a replica.
type Config struct {
	Client *wor.Client
	// ID is the replica id, unique in the group, nonzero.
	ID uint64
	// Addr is the opaque service address of this replica (the KV server's
	// RPC address), stored as the leader's address in segment metadata so
	// other replicas can forward to it.
	Addr string
	// Log is the first segment id of this group's address range: the
	// group owns [Log, Log+GroupSpan).
	Log uint64
	// SegmentSize is the registers per log segment a leader allocates
	// (default DefaultSegmentSize; at most wor.MaxOffset). Readers take
	// each segment's size from its metadata, so replicas configured
	// differently still agree.
	SegmentSize int
	// SnapshotRate bounds how fast a snapshot is written, in bytes a
	// second (default DefaultSnapshotRate, negative: no limit), raised
	// to twice the rate the log grew at since the last snapshot when
	// that is more, so that snapshots keep up with the writes.
	SnapshotRate int
	// SnapshotEvery is the applied commands between snapshots (default
	// DefaultSnapshotEvery). A snapshot is also taken when the log since
	// the last one holds 3,072 entries (heartbeats alone fill the log),
	// but not before the log since the last snapshot is at least as large
	// as that snapshot (so a large state is not rewritten for a few small
	// commands), and always once it holds 8,192 entries. The leader takes
	// and stores snapshots; see docs/smr.md.
	SnapshotEvery uint64
	// Heartbeat is how often an idle leader writes a no-op (default
	// DefaultHeartbeat); ElectionTimeout is how long the log's tail must
	// stay still before a follower campaigns (randomized up to twice that;
	// default DefaultElectionTimeout). ElectionTimeout should be several
	// Heartbeats.
	Heartbeat, ElectionTimeout time.Duration
	// MaxEntry bounds a register's value: a batch of commands, a snapshot
	// chunk (default DefaultMaxEntry). A command larger than one entry
	// holds is written as parts in consecutive entries.
	MaxEntry int
	// MaxCommand bounds a command (default DefaultMaxCommand, or what
	// MaxParts entries hold if that is less); Propose refuses larger ones
	// with ErrTooLarge.
	MaxCommand int
	// Pipeline is how many log write requests the leader keeps in flight
	// (default DefaultPipeline); proposals that arrive while that many are
	// in flight are batched: into one entry as far as MaxEntry allows, and
	// several entries into one SegWrite of consecutive registers.
	Pipeline int
	Logger   *slog.Logger
}

// Errors callers act on.
var (
	// ErrNotLeader: this replica is not the leader; the proposal was not
	// applied and never will be. Matched by *NotLeaderError.
	ErrNotLeader = errors.New("smr: not the leader")
	// ErrClosed: the replica was closed. A proposal in flight then has an
	// unknown outcome.
	ErrClosed = errors.New("smr: replica closed")
	// ErrUnknown: the proposal was written but this replica cannot learn
	// whether it was chosen (a snapshot covered its register before this
	// replica read it). Retry only if the command is deduplicated.
	ErrUnknown = errors.New("smr: proposal outcome unknown")
	// ErrTooLarge: the command is larger than Config.MaxCommand.
	ErrTooLarge = errors.New("smr: command too large")
)

// NotLeaderError says who the leader is, as far as this replica knows
// (LeaderID 0: unknown).
type NotLeaderError struct {
	LeaderID   uint64
	LeaderAddr string
	Epoch      uint64
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == 0 {
		return "smr: not the leader (leader unknown)"
	}
	return fmt.Sprintf("smr: not the leader (leader %d at %q, epoch %d)", e.LeaderID, e.LeaderAddr, e.Epoch)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// withDefaults fills in defaults and checks cfg.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("smr: Config.Client is nil")
	}
	if cfg.ID == 0 {
		return cfg, errors.New("smr: Config.ID must be nonzero")
	}
	if cfg.Log > wor.MaxDataSegment-GroupSpan+1 {
		return cfg, fmt.Errorf("smr: Config.Log %d leaves no room for the group's %d segments below %d", cfg.Log, uint64(GroupSpan), uint64(wor.MaxDataSegment))
	}
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = DefaultSegmentSize
	}
	if cfg.SegmentSize < 2 || cfg.SegmentSize > wor.MaxOffset {
		return cfg, fmt.Errorf("smr: Config.SegmentSize %d out of range [2, %d]", cfg.SegmentSize, wor.MaxOffset)
	}
	if cfg.SnapshotEvery == 0 {
		cfg.SnapshotEvery = DefaultSnapshotEvery
	}
	if cfg.SnapshotRate == 0 {
		cfg.SnapshotRate = DefaultSnapshotRate
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = DefaultElectionTimeout
	}
	if cfg.Heartbeat < 0 || cfg.ElectionTimeout < 2*cfg.Heartbeat {
		return cfg, fmt.Errorf("smr: Heartbeat %v and ElectionTimeout %v: want a positive heartbeat and an election timeout of at least two", cfg.Heartbeat, cfg.ElectionTimeout)
	}
	if cfg.MaxEntry == 0 {
		cfg.MaxEntry = DefaultMaxEntry
	}
	if cfg.MaxEntry < 64 || cfg.MaxEntry > wor.MaxValue {
		return cfg, fmt.Errorf("smr: Config.MaxEntry %d out of range [64, %d]", cfg.MaxEntry, wor.MaxValue)
	}
	if limit := MaxParts * (cfg.MaxEntry - partOverhead); cfg.MaxCommand == 0 {
		cfg.MaxCommand = min(DefaultMaxCommand, limit)
	} else if cfg.MaxCommand < 0 || cfg.MaxCommand > limit {
		return cfg, fmt.Errorf("smr: Config.MaxCommand %d out of range [1, %d] (MaxParts entries of MaxEntry %d)", cfg.MaxCommand, limit, cfg.MaxEntry)
	}
	if cfg.Pipeline == 0 {
		cfg.Pipeline = DefaultPipeline
	}
	if cfg.Pipeline < 1 {
		return cfg, fmt.Errorf("smr: Config.Pipeline %d must be positive", cfg.Pipeline)
	}
	if len(cfg.Addr) > maxAddr {
		return cfg, fmt.Errorf("smr: Config.Addr of %d bytes (at most %d)", len(cfg.Addr), maxAddr)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// Replica is one member of a replication group. Its methods are safe for
// concurrent use.
type Replica struct {
	r *replica
}

// Start catches up (the latest snapshot, then the log after it) and then
// runs the replica: it follows the log, and campaigns when the leader is
// silent. sm must hold the initial (empty) state.
func Start(ctx context.Context, cfg Config, sm StateMachine) (*Replica, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r, err := start(ctx, cfg, sm)
	if err != nil {
		return nil, err
	}
	return &Replica{r: r}, nil
}

// Propose submits cmd. At the leader it returns the command's Apply result
// once applied at this replica; elsewhere a *NotLeaderError. See the
// package comment for what each error says about the outcome.
func (r *Replica) Propose(ctx context.Context, cmd []byte) ([]byte, error) {
	return r.r.propose(ctx, cmd)
}

// Read runs fn on the replica's state. Linearizable: it locates the slot
// after every completed write (a tail probe: read forward until an
// unwritten register, crossing into later segments as the leader moves),
// waits until the replica applied up to it, then runs fn. Sequential: it
// runs fn on the local state at once. fn never runs concurrently with
// Apply.
func (r *Replica) Read(ctx context.Context, c Consistency, fn func()) error {
	return r.r.read(ctx, c, fn)
}

// Leader returns the leader as this replica knows it (ok false: none
// known yet).
func (r *Replica) Leader() (id uint64, addr string, epoch uint64, ok bool) {
	return r.r.leader()
}

// Applied is the index of the last command applied at this replica.
func (r *Replica) Applied() uint64 { return r.r.appliedIndex() }

// Campaign tries to become leader now: it allocates the next log segment
// (of racing candidates exactly one wins it), junk-fills the rest of the
// log before it and starts leading. It returns nil once this replica
// leads, or an error (a *NotLeaderError if another replica won). If ctx
// ends first, Campaign returns its error and the campaign goes on.
func (r *Replica) Campaign(ctx context.Context) error { return r.r.campaign(ctx) }

// Stats counts what the replica did since it started.
type Stats struct {
	Commands     uint64 // commands this replica wrote as leader in batches (each in one entry)
	PartCommands uint64 // commands it wrote as parts (too large for one entry)
	DroppedParts uint64 // partial commands the apply loop dropped (a deposed leader's; never applied anywhere)
	Entries      uint64 // log entries (registers) it wrote as leader, no-ops included
	SegWrites    uint64 // requests that wrote several consecutive entries at once
	Settled      uint64 // entries whose write failed and was settled by reading the register
	Applied      uint64 // log entries the apply loop applied (junk and no-ops included)
	Campaigns    uint64 // campaigns that won their segment
	Snapshots    uint64 // snapshots it stored in the WOR space
	Restores     uint64 // snapshots it restored
	Reads        uint64 // linearizable reads
	Probes       uint64 // tail probes they shared
}

// Stats returns the replica's counters.
func (r *Replica) Stats() Stats { return r.r.stats() }

// Close stops the replica. Proposals in flight fail with ErrClosed.
func (r *Replica) Close() error { return r.r.close() }
