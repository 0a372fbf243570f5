package wor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"strata/stack"
)

// Reconfigure replaces partition part's replica set by servers, while
// clients keep running (WormSpace §3.1, along the lines of Vertical
// Paxos):
//
//  1. decide the next epoch's configuration in the directory (a register
//     write: of racing reconfigurations one wins, and the others complete
//     the winner's);
//  2. seal the current epoch at a majority of its servers: they refuse
//     its requests from now on (clients fetch the new configuration);
//  3. read the sealed majority's acceptor state and merge it, per
//     register, keeping the highest promise and the value accepted at the
//     highest ballot (a chosen value was accepted by a majority, which
//     meets the sealed one, and every higher-ballot acceptance carries the
//     same value, so it survives);
//  4. install the merged state on the new servers and activate the new
//     epoch there (at least a majority; servers that miss it stay
//     inactive and are treated as failed).
//
// Replace at most a minority per step, so that the sealed majority of the
// old set can answer. New servers must be started with Join (`strata wor
// serve --join`), so that they serve nothing before step 4. The chain
// engine is not reconfigured this way (its writes need every server).
// Calling Reconfigure again after a failure completes the decided change.
func (c *Cluster) Reconfigure(ctx context.Context, part uint32, servers []string) (epoch uint32, err error) {
	switch c.engine {
	case "chain":
		return 0, errors.New("wor: reconfigure: the chain engine cannot be reconfigured (yet)")
	case "ec":
		// The state transfer merges whole acceptor states from the old
		// servers into every new one; an ec server's state is its own
		// split, which another server must not receive.
		return 0, errors.New("wor: reconfigure: the ec engine cannot be reconfigured (yet): each server holds its own split")
	}
	if int(part) >= len(c.routes) {
		return 0, fmt.Errorf("wor: reconfigure: no partition %d", part)
	}
	if len(servers) == 0 {
		return 0, errors.New("wor: reconfigure: empty replica set")
	}
	if err := distinct("new replica set", servers); err != nil {
		return 0, err
	}
	if err := c.do(ctx, func(cb func(error)) { c.refresh(part, cb) }); err != nil {
		return 0, fmt.Errorf("wor: reconfigure: %w", err)
	}
	c.mu.Lock()
	old := c.routes[part].cfg
	c.mu.Unlock()
	next := partConfig{Epoch: old.Epoch + 1, Servers: servers}
	decided, err := c.decide(ctx, part, next)
	if err != nil {
		return 0, err
	}
	if err := c.transfer(ctx, part, old, decided); err != nil {
		return 0, fmt.Errorf("wor: reconfigure partition %d to epoch %d: %w", part, decided.Epoch, err)
	}
	c.mu.Lock()
	if c.routes[part].cfg.Epoch < decided.Epoch {
		c.routes[part] = c.newRoute(part, decided)
	}
	c.mu.Unlock()
	if !slices.Equal(decided.Servers, servers) {
		return decided.Epoch, fmt.Errorf("wor: reconfigure: epoch %d was decided as %v by another reconfiguration (completed)", decided.Epoch, decided.Servers)
	}
	return decided.Epoch, nil
}

func (c *Cluster) do(ctx context.Context, start func(func(error))) error {
	_, err := wait(ctx, func(cb func(struct{}, error)) { start(func(err error) { cb(struct{}{}, err) }) })
	return err
}

// decide writes next into the directory, or returns what is there.
func (c *Cluster) decide(ctx context.Context, part uint32, next partConfig) (partConfig, error) {
	addr := Addr(DirSegment(part), uint64(next.Epoch))
	v, err := json.Marshal(next)
	if err != nil {
		return partConfig{}, err
	}
	for attempt := 0; ; attempt++ {
		cid, err := wait(ctx, func(cb func(CaptureID, error)) { c.dir.Capture(addr, cb) })
		if err == nil {
			err = c.do(ctx, func(cb func(error)) { c.dir.Write(addr, v, cid, cb) })
		}
		var we *WrittenError
		switch {
		case err == nil:
			return next, nil
		case errors.As(err, &we):
			var got partConfig
			if jerr := json.Unmarshal(we.Value, &got); jerr != nil || got.Epoch != next.Epoch {
				return partConfig{}, fmt.Errorf("wor: directory entry for partition %d epoch %d is malformed", part, next.Epoch)
			}
			return got, nil
		case errors.Is(err, ErrPreempted) && attempt < 8:
			continue
		default:
			return partConfig{}, fmt.Errorf("wor: reconfigure: write the directory: %w", err)
		}
	}
}

// call sends one request to one server and decodes the reply.
func (c *Cluster) call(ctx context.Context, to stack.Addr, req request) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout) // one dead server must not use up the caller's whole deadline
	defer cancel()
	b, err := c.node.Call(ctx, to, req.encode(), c.timeout)
	if err != nil {
		return response{}, fmt.Errorf("%s: %w", to, err)
	}
	r, err := decodeResponse(b)
	if err = statusErr(err, r.Status); err != nil {
		return r, fmt.Errorf("%s: %w", to, err)
	}
	return r, nil
}

// each runs f on every server concurrently and returns the servers it
// succeeded on, and the errors of the others.
func each(servers []string, f func(stack.Addr) error) (ok []string, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f(stack.Addr(s))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				ok = append(ok, s)
			}
		}()
	}
	wg.Wait()
	slices.Sort(ok)
	return ok, errs
}

// transfer seals old at next's epoch, merges the sealed majority's state
// and installs and activates it on next's servers.
func (c *Cluster) transfer(ctx context.Context, part uint32, old, next partConfig) error {
	maj := len(old.Servers)/2 + 1
	sealed, errs := each(old.Servers, func(s stack.Addr) error {
		_, err := c.call(ctx, s, request{Op: opSeal, Part: part, Epoch: next.Epoch})
		return err
	})
	if len(sealed) < maj {
		return fmt.Errorf("seal: %d of %d servers of epoch %d answered: %w", len(sealed), len(old.Servers), old.Epoch, errors.Join(errs...))
	}
	merged := map[uint64]acceptor{}
	var mmu sync.Mutex
	_, errs = each(sealed, func(s stack.Addr) error {
		recs, err := c.dumpAll(ctx, s, part)
		if err != nil {
			return err
		}
		mmu.Lock()
		defer mmu.Unlock()
		for _, r := range recs {
			merged[r.addr] = mergeAcceptor(merged[r.addr], r.a)
		}
		return nil
	})
	if len(errs) > 0 {
		return fmt.Errorf("read the sealed servers' state: %w", errors.Join(errs...))
	}
	recs := make([]record, 0, len(merged))
	for addr, a := range merged {
		recs = append(recs, record{addr: addr, a: a})
	}
	slices.SortFunc(recs, func(a, b record) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
	nmaj := len(next.Servers)/2 + 1
	installed, errs := each(next.Servers, func(s stack.Addr) error {
		for i := 0; i == 0 || i < len(recs); i += dumpPage {
			page := recs[i:min(i+dumpPage, len(recs))]
			if _, err := c.call(ctx, s, request{Op: opInstall, Part: part, Epoch: next.Epoch, Value: encodeRecords(page)}); err != nil {
				return fmt.Errorf("install: %w", err)
			}
		}
		if _, err := c.call(ctx, s, request{Op: opActivate, Part: part, Epoch: next.Epoch}); err != nil {
			if errors.Is(err, ErrSealed) {
				return nil // already active at this epoch, or later: another reconfigurer was first
			}
			return fmt.Errorf("activate: %w", err)
		}
		return nil
	})
	if len(installed) < nmaj {
		return fmt.Errorf("install: %d of %d new servers: %w", len(installed), len(next.Servers), errors.Join(errs...))
	}
	return nil
}

// mergeAcceptor combines two servers' states of one register: the higher
// promise; the value accepted at the higher ballot. A trim mark wins.
func mergeAcceptor(a, b acceptor) acceptor {
	if a.promised == trimMark || b.promised == trimMark {
		return acceptor{promised: trimMark, accBallot: trimMark, has: true, part: b.part}
	}
	out := a
	out.part = b.part
	out.promised = max(a.promised, b.promised)
	if b.has && (!a.has || b.accBallot > a.accBallot) {
		out.has, out.accBallot, out.value, out.chosen = true, b.accBallot, b.value, b.chosen
	}
	return out
}

// dumpAll pages through a server's state for part.
func (c *Cluster) dumpAll(ctx context.Context, s stack.Addr, part uint32) ([]record, error) {
	var all []record
	cursor, started := uint64(0), uint64(0)
	for {
		r, err := c.call(ctx, s, request{Op: opDump, Part: part, Addr: cursor, Ballot: started})
		if err != nil {
			return nil, fmt.Errorf("dump: %w", err)
		}
		recs, err := decodeRecords(r.Value)
		if err != nil {
			return nil, fmt.Errorf("dump from %s: %w", s, err)
		}
		all = append(all, recs...)
		if r.Promised != 1 || len(recs) == 0 {
			return all, nil
		}
		cursor, started = recs[len(recs)-1].addr, 1
	}
}
