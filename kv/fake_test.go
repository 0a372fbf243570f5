package kv

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"strata/smr"
)

// fakeLog is a replicated log without replication, for testing the
// server and client apart from smr: one shared command list, a leader
// chosen by the test, replicas that apply it to their machines in order
// (the proposer at once, the others on reads and every few milliseconds).
type fakeLog struct {
	mu     sync.Mutex // guards everything below
	cmds   [][]byte
	leader int // index into reps of the leader, -1: none
	epoch  uint64
	reps   []*fakeReplica
}

type fakeReplica struct {
	log  *fakeLog
	i    int
	addr string
	m    *Machine

	mu      sync.Mutex // guards applied and results; held while applying
	applied uint64
	// stall: Propose appends and applies, then waits for its context
	// instead of returning (a leader whose reply is lost).
	stall  atomic.Bool
	closed chan struct{}
	once   sync.Once
}

func newFakeLog(addrs []string, opts MachineOptions) *fakeLog {
	l := &fakeLog{leader: 0, epoch: 1}
	for i, a := range addrs {
		r := &fakeReplica{log: l, i: i, addr: a, m: NewMachine(opts), closed: make(chan struct{})}
		l.reps = append(l.reps, r)
		go func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-r.closed:
					return
				case <-t.C:
					r.catchUp(0)
				}
			}
		}()
	}
	return l
}

func (l *fakeLog) setLeader(i int) {
	l.mu.Lock()
	l.leader = i
	l.epoch++
	l.mu.Unlock()
}

// catchUp applies the log up to its end and returns the result at index
// want (if it applied it now).
func (r *fakeReplica) catchUp(want uint64) []byte {
	r.log.mu.Lock()
	cmds := r.log.cmds
	r.log.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	var res []byte
	for r.applied < uint64(len(cmds)) {
		r.applied++
		out := r.m.Apply(r.applied, cmds[r.applied-1])
		if r.applied == want {
			res = out
		}
	}
	return res
}

func (r *fakeReplica) notLeader() error {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	if r.log.leader < 0 {
		return &smr.NotLeaderError{}
	}
	l := r.log.reps[r.log.leader]
	return &smr.NotLeaderError{LeaderID: uint64(l.i + 1), LeaderAddr: l.addr, Epoch: r.log.epoch}
}

func (r *fakeReplica) Propose(ctx context.Context, cmd []byte) ([]byte, error) {
	select {
	case <-r.closed:
		return nil, smr.ErrClosed
	default:
	}
	r.log.mu.Lock()
	if r.log.leader != r.i {
		r.log.mu.Unlock()
		return nil, r.notLeader()
	}
	r.log.cmds = append(r.log.cmds, append([]byte(nil), cmd...))
	index := uint64(len(r.log.cmds))
	r.log.mu.Unlock()
	res := r.catchUp(index)
	if r.stall.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return res, nil
}

func (r *fakeReplica) Read(ctx context.Context, c smr.Consistency, fn func()) error {
	if c == smr.Linearizable {
		r.catchUp(0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
	return nil
}

func (r *fakeReplica) Leader() (uint64, string, uint64, bool) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	if r.log.leader < 0 {
		return 0, "", 0, false
	}
	l := r.log.reps[r.log.leader]
	return uint64(l.i + 1), l.addr, r.log.epoch, true
}

func (r *fakeReplica) Applied() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

func (r *fakeReplica) Close() error {
	r.once.Do(func() { close(r.closed) })
	return nil
}
