package smr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"strata/wor"
)

// Campaigns: Alloc of the next log segment arbitrates between
// candidates; the winner junk-fills the log before its segment, then
// leads.

// takeoverPatience is how many election timeouts without progress an
// automatic campaign leaves a newer leader that is junk-filling the log.
const takeoverPatience = 8

func (r *replica) campaign(ctx context.Context) error { return r.campaignMode(ctx, false) }

// campaignAuto is the campaign a silent log starts: unlike Campaign, it
// stands down, for takeoverPatience election timeouts, for a newer leader
// that has allocated a segment but not yet written where this replica
// reads (it is taking over right now).
func (r *replica) campaignAuto(ctx context.Context) error { return r.campaignMode(ctx, true) }

func (r *replica) campaignMode(ctx context.Context, auto bool) error {
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return ErrClosed
	case r.role == leading:
		r.mu.Unlock()
		return nil
	}
	run := r.campaigning
	if run == nil {
		// The campaign runs on the replica's context: a caller that stops
		// waiting does not stop it half-way.
		run = &campaignRun{done: make(chan struct{})}
		r.campaigning = run
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			err := r.runCampaign(r.ctx, auto)
			r.mu.Lock()
			run.err = err
			r.campaigning = nil
			close(run.done)
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runCampaign is one campaign: allocate the next log segment, junk-fill
// the log before it, start leading.
func (r *replica) runCampaign(ctx context.Context, auto bool) error {
	r.mu.Lock()
	cur := r.cursor
	from := max(cur.seg, r.lead.seg)
	tailEpoch := uint64(0)
	if m, ok := r.segs[cur.seg]; ok {
		tailEpoch = m.epoch
	} else if m, ok := r.segs[cur.seg-min(cur.seg, 1)]; ok {
		tailEpoch = m.epoch
	}
	r.mu.Unlock()

	// 1. The last allocated log segment.
	last, lastMeta, any, err := r.lastAllocated(ctx, cur.seg, from)
	if err != nil {
		return err
	}
	if auto && any && lastMeta.epoch > tailEpoch {
		// A newer leader allocated a segment after the one we read in:
		// it is junk-filling the log right now, which can take several
		// election timeouts (two round trips, each with a disk write, per
		// fill batch; a slow link or a loaded machine; a new leader far
		// behind). Deposing it would only start another fill that the
		// next silent follower may depose in turn, so stand down until
		// the tail has not moved for takeoverPatience election timeouts
		// since we first saw its segment: each fill batch that reaches
		// our position moves it. Only a candidate that dies half-way
		// costs that long.
		now := time.Now()
		if last != r.newerSeg || cur != r.newerTail {
			r.newerSeg, r.newerTail, r.newerSince = last, cur, now
		}
		if now.Sub(r.newerSince) < takeoverPatience*r.cfg.ElectionTimeout {
			return fmt.Errorf("%w: leader %d (epoch %d) is taking over in segment %d", ErrNotLeader, lastMeta.leader, lastMeta.epoch, r.segID(last))
		}
	}
	newSeg := uint64(0)
	if any {
		newSeg = last + 1
	}
	if newSeg >= MaxLogSegments {
		return errors.New("smr: the group's log segments are used up")
	}
	// 2. Alloc arbitrates: one candidate wins the segment.
	r.mu.Lock()
	epoch := max(r.maxEpoch, lastMeta.epoch) + 1
	r.mu.Unlock()
	meta := logMeta{leader: r.cfg.ID, epoch: epoch, size: uint64(r.cfg.SegmentSize), addr: r.cfg.Addr}
	err = r.c.Alloc(ctx, r.segID(newSeg), encodeLogMeta(meta))
	var ae *wor.AllocatedError
	if errors.As(err, &ae) {
		om, derr := decodeLogMeta(ae.Metadata)
		r.mu.Lock()
		defer r.mu.Unlock()
		if derr == nil {
			r.noteSegLocked(newSeg, om)
		}
		if derr == nil && allocLost(lastMeta.epoch, om) {
			return r.notLeaderLocked()
		}
		return fmt.Errorf("%w: leader %d allocated segment %d itself, so it is alive", ErrNotLeader, om.leader, r.segID(newSeg))
	}
	if err != nil {
		return fmt.Errorf("smr: campaign: allocating segment %d: %w", r.segID(newSeg), err)
	}
	tctx, tcancel := context.WithCancel(r.ctx)
	t := &term{ctx: tctx, cancel: tcancel, epoch: epoch, first: newSeg, next: pos{newSeg, 0},
		kick: make(chan struct{}, 1), prep: make(chan struct{}, 1),
		caps: map[uint64][]segCapture{}, capEnd: map[uint64]uint64{}, allocated: map[uint64]bool{newSeg: true}}
	r.mu.Lock()
	r.noteSegLocked(newSeg, meta)
	// The newest segment names us now, from this incarnation: if this
	// campaign fails, the next is started by silence, as for any leader.
	r.everLed = true
	if r.closed {
		r.mu.Unlock()
		tcancel()
		return ErrClosed
	}
	if old := r.term; old != nil {
		r.stepDownLocked(old, "a newer campaign of its own")
	}
	r.term, r.role = t, candidate
	r.mu.Unlock()
	r.log.Info("smr: campaign won segment, junk-filling the log before it", "segment", r.segID(newSeg), "epoch", epoch, "from", cur.String())

	// 3. Junk-fill every register from the cursor to the end of the
	// segments before ours: afterwards the log before our segment is
	// decided, with no holes, and the old leader's captures are preempted.
	var sizes []uint64
	for s := cur.seg; s < newSeg; s++ {
		st, m, err := r.fetchMeta(ctx, s)
		if err == nil && st != segAllocated {
			err = fmt.Errorf("smr: campaign: log segment %d is %v", r.segID(s), map[segState]string{segTrimmed: "trimmed", segUnallocated: "not allocated"}[st])
		}
		if err != nil {
			r.stepDown(t, "campaign failed")
			return err
		}
		sizes = append(sizes, m.size)
	}
	for _, f := range fillPlan(cur, sizes) {
		if err := r.fill(t, f); err != nil {
			r.stepDown(t, "campaign failed")
			return err
		}
	}
	// 4. Lead: the writer starts with a no-op that announces the term.
	r.mu.Lock()
	if r.term != t {
		err := r.notLeaderLocked()
		r.mu.Unlock()
		return err
	}
	t.ready, r.role = true, leading
	r.st.Campaigns++
	t.queue = append([]*proposal{newProposal(nil, encodeNoop(r.cfg.ID, epoch))}, t.queue...)
	r.mu.Unlock()
	r.log.Info("smr: leading", "segment", r.segID(newSeg), "epoch", epoch)
	r.wg.Add(2)
	go r.writer(t)
	go r.prepare(t)
	kick(t.prep)
	kick(r.wake)
	return nil
}

// lastAllocated finds the last allocated log segment at or after `from`
// (cursor is the apply loop's segment, allocated unless the log is empty
// there). any is false if no log segment was ever allocated.
func (r *replica) lastAllocated(ctx context.Context, cursorSeg, from uint64) (last uint64, m logMeta, any bool, err error) {
	s := from
	st, m, err := r.fetchMeta(ctx, s)
	if err != nil {
		return 0, logMeta{}, false, err
	}
	switch st {
	case segTrimmed:
		return 0, logMeta{}, false, fmt.Errorf("smr: campaign: log segment %d is trimmed: catching up first", r.segID(s))
	case segUnallocated:
		if s == 0 {
			return 0, logMeta{}, false, nil
		}
		// The cursor's segment is the first unallocated one; the one
		// before it is the last.
		s = max(cursorSeg, 1) - 1
		if st, m, err = r.fetchMeta(ctx, s); err != nil {
			return 0, logMeta{}, false, err
		}
		if st != segAllocated {
			// Trimmed behind us: its epoch is in our cache if anywhere.
			r.mu.Lock()
			m = logMeta{epoch: r.maxEpoch}
			r.mu.Unlock()
		}
		return s, m, true, nil
	}
	for {
		st2, m2, err := r.fetchMeta(ctx, s+1)
		if err != nil {
			return 0, logMeta{}, false, err
		}
		if st2 != segAllocated {
			return s, m, true, nil
		}
		s, m = s+1, m2
	}
}

// fill junk-fills one range: SegCapture then SegWrite of junk. The values
// the registers then hold (junk, or an old leader's entry the capture
// found and completed) are the log. A preempted fill is retried unless a
// newer leader has allocated a segment after ours.
func (r *replica) fill(t *term, f fillRange) error {
	r.mu.Lock()
	var mine []pos
	for o := f.start; o < f.end; o++ {
		p := pos{f.seg, o}
		if !p.less(r.cursor) && !r.owned[p] {
			r.owned[p] = true
			mine = append(mine, p)
		}
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		for _, p := range mine {
			delete(r.owned, p)
		}
		r.mu.Unlock()
		kick(r.wake)
	}()
	n := f.end - f.start
	junk := make([][]byte, n)
	for i := range junk {
		junk[i] = junkEntry
	}
	var err error
	for attempt := 0; attempt < fillAttempts; attempt++ {
		var cid wor.CaptureID
		var held [][]byte
		cid, err = r.c.SegCapture(t.ctx, r.segID(f.seg), f.start, f.end)
		if err == nil {
			held, err = r.c.SegWrite(t.ctx, r.segID(f.seg), f.start, junk, cid)
		}
		if err == nil {
			for i, v := range held {
				r.learn(pos{f.seg, f.start + uint64(i)}, v)
			}
			return nil
		}
		if t.ctx.Err() != nil || errors.Is(err, wor.ErrTrimmed) {
			return err
		}
		if st, _, merr := r.fetchMeta(t.ctx, t.first+1); merr == nil && st == segAllocated {
			return fmt.Errorf("%w: a newer leader allocated segment %d", ErrNotLeader, r.segID(t.first+1))
		}
		if !sleep(t.ctx, backoff(attempt)) {
			return t.ctx.Err()
		}
	}
	return fmt.Errorf("smr: campaign: junk-filling segment %d [%d, %d): %w", r.segID(f.seg), f.start, f.end, err)
}
