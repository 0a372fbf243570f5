package mpcalgo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/mpcal/testdata/gogen/echobench"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// Systems and mailbox modes, as the config and the ratio keys name them.
const (
	Generated   = "generated"
	Handwritten = "handwritten"
	Relaxed     = "relaxed"
	TwoPhase    = "two-phase"
	// LastAgent is two-phase with MailboxOptions.LastAgent: these
	// sections (one send, the rest locals and the inbox) commit in one
	// deliver round trip.
	LastAgent = "last-agent"
)

// Props is the stack both systems run on in a mode: the mailboxes'
// two-phase commit needs RPC, the relaxed mode does not.
func Props(mode string) string {
	if mode == TwoPhase || mode == LastAgent {
		return "Reliable,FIFO,RPC"
	}
	return "Reliable,FIFO"
}

var (
	serverID = tla.String("server")
	clientID = tla.String("client")
)

// echoOpts is what one echo run needs.
type echoOpts struct {
	mode     string
	n        int // measured round trips
	warmup   int // untimed round trips before them
	busyPoll time.Duration
}

// pair opens the server and client nodes on loopback UDP.
func pair(o echoOpts) (server, client *stack.Node, err error) {
	to := transport.Options{BusyPoll: o.busyPoll}
	server, err = layers.ListenOpts("udp:127.0.0.1:0", Props(o.mode), to)
	if err != nil {
		return nil, nil, fmt.Errorf("server node: %w", err)
	}
	client, err = layers.ListenOpts("udp:127.0.0.1:0", Props(o.mode), to)
	if err != nil {
		server.Close()
		return nil, nil, fmt.Errorf("client node: %w", err)
	}
	return server, client, nil
}

// lapRecorder is the generated client's `ref lap`: every committed write
// stamps the time, so the gap between two commits is one round trip of
// the client's loop (the request section, then the response section that
// reads and checks the reply). An aborted section stamps nothing.
type lapRecorder struct {
	stamps  []time.Time // preallocated: recording does not allocate
	pending bool
}

func (l *lapRecorder) Read(context.Context) (tla.Value, error) {
	return tla.Value{}, distsys.ErrWriteOnly
}
func (l *lapRecorder) Write(context.Context, tla.Value) error { l.pending = true; return nil }
func (l *lapRecorder) PreCommit(context.Context) error        { return nil }
func (l *lapRecorder) Commit(context.Context) error {
	if l.pending {
		l.stamps = append(l.stamps, time.Now())
		l.pending = false
	}
	return nil
}
func (l *lapRecorder) Abort() { l.pending = false }

// wireSize is the size of the generated client's request as the relaxed
// mailbox sends it (kind, count, length, the record's encoding): the
// hand-written echo sends messages of this size, so both put the same
// bytes on the wire per round trip.
func wireSize(n int) int {
	rec := tla.Record(tla.F("from", clientID), tla.F("n", tla.Int(int64(n))))
	b, err := rec.MarshalBinary()
	if err != nil {
		return 16
	}
	return 1 + 1 + len(binary.AppendUvarint(nil, uint64(len(b)))) + len(b)
}

// runGenerated runs the echo compiled from EchoBench.tla: the server and
// client archetypes on their nodes, the mailboxes in o.mode. It returns
// the per-round-trip times of the o.n measured round trips.
func runGenerated(ctx context.Context, o echoOpts) ([]time.Duration, distsysStats, error) {
	var st distsysStats
	total := o.warmup + o.n
	m, err := echobench.New(echobench.Constants{NumRequests: tla.Int(int64(total)), ServerID: serverID})
	if err != nil {
		return nil, st, err
	}
	sn, cn, err := pair(o)
	if err != nil {
		return nil, st, err
	}
	defer sn.Close()
	defer cn.Close()
	peers := []distsys.Peer{{ID: serverID, Addr: sn.Local()}, {ID: clientID, Addr: cn.Local()}}
	mo := distsys.MailboxOptions{Relaxed: o.mode == Relaxed, LastAgent: o.mode == LastAgent}
	smb, err := distsys.NewMailboxes(sn, serverID, peers, mo)
	if err != nil {
		return nil, st, err
	}
	cmb, err := distsys.NewMailboxes(cn, clientID, peers, mo)
	if err != nil {
		return nil, st, err
	}
	sc, err := distsys.NewContext(m.AServer(), serverID, distsys.BindIndexed("net", smb), distsys.WithSeed(1))
	if err != nil {
		return nil, st, err
	}
	laps := &lapRecorder{stamps: make([]time.Time, 0, total+1)}
	cc, err := distsys.NewContext(m.AClient(), clientID, distsys.BindIndexed("net", cmb), distsys.BindRef("lap", laps), distsys.WithSeed(2))
	if err != nil {
		return nil, st, err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	serr := make(chan error, 1)
	go func() { serr <- sc.Run(sctx) }()
	start := time.Now()
	cerr := cc.Run(ctx)
	stop()
	if err := <-serr; !errors.Is(err, context.Canceled) && err != nil {
		return nil, st, fmt.Errorf("generated server: %w", err)
	}
	if cerr != nil {
		return nil, st, fmt.Errorf("generated client: %w", cerr)
	}
	if len(laps.stamps) != total {
		return nil, st, fmt.Errorf("generated client: %d round trips recorded, want %d", len(laps.stamps), total)
	}
	st = distsysStats{ClientAborts: cc.Aborts(), ServerAborts: sc.Aborts(), Dropped: smb.Dropped() + cmb.Dropped()}
	return gaps(start, laps.stamps, o.warmup), st, nil
}

// distsysStats are the runtime's counters after a generated run.
type distsysStats struct {
	ClientAborts, ServerAborts, Dropped uint64
}

// gaps turns commit times into round-trip times, dropping the warm-up.
func gaps(start time.Time, stamps []time.Time, warmup int) []time.Duration {
	out := make([]time.Duration, 0, len(stamps)-warmup)
	prev := start
	for i, t := range stamps {
		if i >= warmup {
			out = append(out, t.Sub(prev))
		}
		prev = t
	}
	return out
}

// runHandwritten is the echo as one would write it in Go on the same
// nodes: the server's delivery callback sends each message back; the
// client sends a request of the generated request's size carrying its
// number, waits for the reply on a channel, checks the number and stamps
// the time.
func runHandwritten(ctx context.Context, o echoOpts) ([]time.Duration, error) {
	sn, cn, err := pair(o)
	if err != nil {
		return nil, err
	}
	defer sn.Close()
	defer cn.Close()
	sn.OnDeliver(func(from stack.Addr, body []byte) {
		_ = sn.Send(from, body) // an echo: the same bytes back
	})
	replies := make(chan uint64, 1)
	var bad sync.Once
	var badErr error
	cn.OnDeliver(func(_ stack.Addr, body []byte) {
		if len(body) < 8 {
			bad.Do(func() { badErr = fmt.Errorf("handwritten client: short reply of %d bytes", len(body)) })
			replies <- 0
			return
		}
		replies <- binary.LittleEndian.Uint64(body)
	})
	total := o.warmup + o.n
	size := max(wireSize(total/2), 8)
	stamps := make([]time.Time, 0, total)
	server := sn.Local()
	start := time.Now()
	for i := 1; i <= total; i++ {
		// A fresh buffer each time: the stack may keep a sent payload
		// (for retransmission) until it is acknowledged.
		req := make([]byte, size)
		binary.LittleEndian.PutUint64(req, uint64(i))
		if err := cn.Send(server, req); err != nil {
			return nil, fmt.Errorf("handwritten client: send %d: %w", i, err)
		}
		select {
		case got := <-replies:
			if got != uint64(i) {
				if badErr != nil {
					return nil, badErr
				}
				return nil, fmt.Errorf("handwritten client: reply %d to request %d", got, i)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		stamps = append(stamps, time.Now())
	}
	return gaps(start, stamps, o.warmup), nil
}
