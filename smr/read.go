package smr

import (
	"context"
	"errors"
	"fmt"

	"strata/wor"
)

// Reads: sequential at once; linearizable after a (shared) tail probe.

func (r *replica) read(ctx context.Context, c Consistency, fn func()) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	switch c {
	case Sequential:
	case Linearizable:
		r.mu.Lock()
		r.st.Reads++
		r.mu.Unlock()
		tail, err := r.sharedProbe(ctx)
		if err != nil {
			return err
		}
		if err := r.waitApplied(ctx, tail); err != nil {
			return err
		}
	default:
		return fmt.Errorf("smr: unknown consistency %v", c)
	}
	r.smMu.Lock()
	defer r.smMu.Unlock()
	fn()
	return nil
}

// probeBatch is one tail probe shared by the linearizable reads that
// arrived before it started.
type probeBatch struct {
	done chan struct{}
	tail pos   // set before done is closed
	err  error // likewise
}

// sharedProbe returns the log's tail as found by a probe that started
// after the call: concurrent linearizable reads share one probe (a read
// that arrives while a probe runs waits for the next one, which starts
// after it arrived), so a burst of reads costs one register read, not
// one each.
func (r *replica) sharedProbe(ctx context.Context) (pos, error) {
	r.probeMu.Lock()
	b := r.probeNext
	if b == nil {
		b = &probeBatch{done: make(chan struct{})}
		r.probeNext = b
	}
	if !r.probing {
		r.mu.Lock() // lock order: probeMu, then mu
		closed := r.closed
		if !closed {
			r.wg.Add(1) // before Close waits (it sets closed first)
		}
		r.mu.Unlock()
		if closed {
			r.probeMu.Unlock()
			return pos{}, ErrClosed
		}
		r.probing = true
		go r.prober()
	}
	r.probeMu.Unlock()
	select {
	case <-b.done:
		return b.tail, b.err
	case <-ctx.Done():
		return pos{}, ctx.Err()
	}
}

// prober runs probes while reads wait for them.
func (r *replica) prober() {
	defer r.wg.Done()
	for {
		r.probeMu.Lock()
		b := r.probeNext
		r.probeNext = nil
		if b == nil {
			r.probing = false
			r.probeMu.Unlock()
			return
		}
		r.probeMu.Unlock()
		r.mu.Lock()
		start := r.cursor
		if t := r.term; t != nil && t.ready && start.less(t.next) {
			// Our own writes before t.next are in flight; a newer leader
			// junk-fills t.next before writing anything, so the probe
			// starts there.
			start = t.next
		}
		r.st.Probes++
		r.mu.Unlock()
		b.tail, b.err = r.probe(r.ctx, start)
		if b.err != nil && r.ctx.Err() != nil {
			b.err = ErrClosed
		}
		close(b.done)
	}
}

// probe finds the log's tail from p: the first unwritten register,
// reading forward (in parallel windows) and crossing into later segments.
// Every write that completed before the probe started is before it.
func (r *replica) probe(ctx context.Context, p pos) (pos, error) {
	w := uint64(1)
	attempt := 0
	retry := func(err error) error {
		// A WOR call that failed (no majority in time, ...) is retried
		// until ctx ends.
		if !sleep(ctx, backoff(attempt)) {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		attempt++
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return pos{}, err
		}
		st, m, err := r.fetchMeta(ctx, p.seg)
		if err != nil {
			if err := retry(err); err != nil {
				return pos{}, err
			}
			continue
		}
		switch st {
		case segUnallocated:
			return pos{p.seg, 0}, nil
		case segTrimmed:
			// The apply loop is behind a snapshot; it recovers, and the
			// probe continues from where it then is.
			r.mu.Lock()
			ch := r.progress
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return pos{}, ctx.Err()
			case <-r.ctx.Done():
				return pos{}, ErrClosed
			}
			r.mu.Lock()
			if p.less(r.cursor) {
				p = r.cursor
			}
			r.mu.Unlock()
			continue
		}
		if p.off >= m.size {
			p = pos{p.seg + 1, 0}
			continue
		}
		n := min(w, m.size-p.off)
		res := r.readRange(ctx, r.segID(p.seg), p.off, n)
		var failed error
		for i, x := range res {
			q := pos{p.seg, p.off + uint64(i)}
			switch {
			case x.err == nil:
				r.learn(q, x.v)
			case errors.Is(x.err, wor.ErrUnwritten):
				return q, nil
			case errors.Is(x.err, wor.ErrTrimmed):
				r.forgetTrimmed(q.seg)
				n = uint64(i) // handled at the top of the next round
			default:
				n, failed = uint64(i), x.err
			}
			if x.err != nil {
				break
			}
		}
		p.off += n
		if failed != nil {
			w = 1
			if err := retry(failed); err != nil {
				return pos{}, err
			}
			continue
		}
		w = min(2*w, maxReadWindow)
	}
}

// waitApplied waits until the apply loop has applied everything before
// tail.
func (r *replica) waitApplied(ctx context.Context, tail pos) error {
	for {
		r.mu.Lock()
		done := !r.cursor.less(tail)
		ch := r.progress
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.ctx.Done():
			return ErrClosed
		}
	}
}
