package wormlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"strata/internal/segsearch"
	"strata/stack"
	"strata/wor"
)

// Errors callers act on.
var (
	// ErrNotAppended: the position is beyond the log's tail.
	ErrNotAppended = errors.New("wormlog: nothing appended at that position yet")
	// ErrTrimmed: the position is in a trimmed prefix of the log.
	ErrTrimmed = errors.New("wormlog: position trimmed")
	// ErrUnknown: the call ended (its context) while an append's write
	// was in flight; the entry may or may not be in the log.
	ErrUnknown = errors.New("wormlog: append outcome unknown")
	// ErrUnavailable: no log server handed out a position in time.
	ErrUnavailable = errors.New("wormlog: no sequencer answered")
	// ErrTooLarge: an entry larger than MaxEntry.
	ErrTooLarge = errors.New("wormlog: entry too large")
)

// MaxEntry is the largest entry Append takes: one register of a
// persistent wormserver, less the entry's tag.
const MaxEntry = wor.MaxPersistentValue - 1

// DefaultHoleTimeout is how long a reader waits for a position the
// sequencer handed out to be written before it fills it with junk.
const DefaultHoleTimeout = time.Second

// ClientConfig configures a log client.
type ClientConfig struct {
	// Node carries the requests to the log servers; WOR is the client of
	// the log's wormservers (appends and reads go there directly).
	Node *stack.Node
	WOR  *wor.Client
	// Servers are the log's servers (any of them may be the sequencer).
	Servers []stack.Addr
	// Base and SegmentSize as the servers' (default DefaultSegmentSize).
	Base, SegmentSize uint64
	// HoleTimeout (default DefaultHoleTimeout) is how long a reader waits
	// for a handed-out position before filling it with junk; a writer
	// slower than that loses the position and appends again elsewhere.
	HoleTimeout time.Duration
	// RequestTimeout bounds one request to a log server (default 1 s).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// Entry is one position of the log: an appended entry, or junk (a hole
// that a reader or a new sequencer filled: no entry is there).
type Entry struct {
	Pos  uint64
	Data []byte
	Junk bool
}

// Client appends to and reads a log. Safe for concurrent use.
type Client struct {
	cfg ClientConfig
	w   *wor.Client
	log *slog.Logger

	mu sync.Mutex
	// Guarded by mu.
	preferred int    // index of the server believed to be the sequencer
	answered  bool   // preferred last answered as the sequencer
	tailSeen  uint64 // the highest tail a sequencer reported
}

// NewClient returns a client of the log that cfg names.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Node == nil || cfg.WOR == nil || len(cfg.Servers) == 0 {
		return nil, errors.New("wormlog: ClientConfig needs Node, WOR and Servers")
	}
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = DefaultSegmentSize
	}
	if cfg.SegmentSize > wor.MaxSegBatch {
		return nil, fmt.Errorf("wormlog: segment size %d: at most %d", cfg.SegmentSize, wor.MaxSegBatch)
	}
	if cfg.HoleTimeout <= 0 {
		cfg.HoleTimeout = DefaultHoleTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Client{cfg: cfg, w: cfg.WOR, log: cfg.Logger}, nil
}

func (c *Client) where(pos uint64) (seg, off uint64) {
	return c.cfg.Base + pos/c.cfg.SegmentSize, pos % c.cfg.SegmentSize
}

// call sends one request to the sequencer, following redirects and
// trying every server in turn, until ctx ends.
func (c *Client) call(ctx context.Context, r request) (response, error) {
	var last error
	for try := 0; ; try++ {
		c.mu.Lock()
		i := c.preferred
		c.mu.Unlock()
		srv := c.cfg.Servers[i]
		tctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
		out, err := c.cfg.Node.Call(tctx, srv, encodeRequest(r), c.cfg.RequestTimeout)
		cancel()
		var resp response
		if err == nil {
			resp, err = decodeResponse(out)
		}
		next := (i + 1) % len(c.cfg.Servers)
		if err == nil {
			switch resp.status {
			case stOK:
				c.mu.Lock()
				c.preferred, c.answered = i, true
				c.tailSeen = max(c.tailSeen, resp.pos+resp.count) // a tail has count 0
				c.mu.Unlock()
				return resp, nil
			case stBadRequest:
				return response{}, fmt.Errorf("wormlog: %s refused the %s request: %s", srv, r.op, resp.msg)
			case stNotSeq:
				err = fmt.Errorf("%s is not the sequencer", srv)
				for j, a := range c.cfg.Servers {
					if string(a) == resp.leader {
						next = j
					}
				}
			case stUnavailable:
				err = fmt.Errorf("%s: %s", srv, resp.msg)
				next = i
			}
		}
		last = err
		c.log.Debug("wormlog: request failed", "server", srv, "op", r.op, "err", err)
		c.mu.Lock()
		if c.preferred == i {
			c.preferred, c.answered = next, false
		}
		c.mu.Unlock()
		pause := time.Duration(0)
		if next == i {
			pause = 5 * time.Millisecond
		}
		if (try+1)%len(c.cfg.Servers) == 0 {
			pause = max(pause, min(20*time.Millisecond<<min(try/len(c.cfg.Servers), 5), 500*time.Millisecond))
		}
		if ctx.Err() != nil || (pause > 0 && !sleep(ctx, pause)) {
			return response{}, fmt.Errorf("%w: %s: %w (last error: %v)", ErrUnavailable, r.op, ctx.Err(), last)
		}
	}
}

// Append appends data to the log and returns its position: a token from
// the sequencer (a position and the capture it pre-made), then one write
// to the wormservers. A position lost to a reader's junk fill (the write
// came later than the hole timeout) or to a new sequencer is retried at
// a new one; an entry is in the log once, at the position returned. If
// ctx ends while a write is in flight the error is ErrUnknown.
func (c *Client) Append(ctx context.Context, data []byte) (uint64, error) {
	if len(data) > MaxEntry {
		return 0, fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLarge, len(data), MaxEntry)
	}
	v := encodeData(data)
	stale := uint64(0)
	for {
		tok, err := c.call(ctx, request{op: opToken, count: 1, stale: stale})
		if err != nil {
			return 0, err
		}
		seg, off := c.where(tok.pos)
		err = c.w.WriteWithToken(ctx, seg, off, v, wor.CaptureID(tok.cid))
		mine, err := c.settle(ctx, seg, off, v, err)
		if mine {
			return tok.pos, nil
		}
		if err != nil {
			return 0, err
		}
		stale = tok.epoch
	}
}

// settle decides the outcome of a write of v at (seg, off) that returned
// err: mine is true if v is the register's value. Another value means the
// position was filled (junk): the caller appends again.
func (c *Client) settle(ctx context.Context, seg, off uint64, v []byte, err error) (mine bool, _ error) {
	for attempt := 0; ; attempt++ {
		var we *wor.WrittenError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &we):
			return bytes.Equal(we.Value, v), nil
		case ctx.Err() != nil:
			return false, fmt.Errorf("%w: position %d of segment %d: %w", ErrUnknown, off, seg, ctx.Err())
		case errors.Is(err, wor.ErrTrimmed):
			return false, fmt.Errorf("%w: its position (segment %d) was trimmed before it was known written", ErrUnknown, seg)
		}
		if attempt > 0 && !sleep(ctx, min(time.Duration(attempt)*10*time.Millisecond, 200*time.Millisecond)) {
			continue // reported as unknown above
		}
		// The write's outcome is unknown (preempted, no majority in time):
		// read the register; still unwritten, decide it ourselves.
		got, rerr := c.w.Read(ctx, seg, off)
		switch {
		case rerr == nil:
			return bytes.Equal(got, v), nil
		case errors.Is(rerr, wor.ErrUnwritten):
			var cid wor.CaptureID
			if cid, err = c.w.Capture(ctx, seg, off); err == nil {
				err = c.w.Write(ctx, seg, off, v, cid)
			}
		default:
			err = rerr
		}
	}
}

// Sequencer is the address of the server that last answered as the
// sequencer ("" before any did).
func (c *Client) Sequencer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.answered {
		return ""
	}
	return string(c.cfg.Servers[c.preferred])
}

// Tail returns the position the next append will get (every position
// before it was handed out, though a slow writer's may still be empty).
func (c *Client) Tail(ctx context.Context) (uint64, error) {
	r, err := c.call(ctx, request{op: opTail})
	if err != nil {
		return 0, err
	}
	return r.pos, nil
}

// Read returns the entry at pos. A position handed out but not written
// is waited for up to the hole timeout, then filled with junk (Entry.Junk:
// a writer that comes later appends elsewhere). A position beyond the
// tail is ErrNotAppended; one in a trimmed prefix is ErrTrimmed.
func (c *Client) Read(ctx context.Context, pos uint64) (Entry, error) {
	return c.read(ctx, pos, time.Now())
}

// read is Read of a position first seen unwritten at since (or to be).
func (c *Client) read(ctx context.Context, pos uint64, since time.Time) (Entry, error) {
	seg, off := c.where(pos)
	for {
		v, err := c.w.Read(ctx, seg, off)
		switch {
		case err == nil:
			return c.entry(pos, v)
		case errors.Is(err, wor.ErrTrimmed):
			return Entry{}, fmt.Errorf("%w: %d", ErrTrimmed, pos)
		case errors.Is(err, wor.ErrNotAllocated):
			return Entry{}, fmt.Errorf("%w: %d", ErrNotAppended, pos)
		case !errors.Is(err, wor.ErrUnwritten):
			return Entry{}, err
		}
		issued, err := c.issued(ctx, pos)
		if err != nil {
			return Entry{}, err
		}
		if !issued {
			return Entry{}, fmt.Errorf("%w: %d", ErrNotAppended, pos)
		}
		if wait := c.cfg.HoleTimeout - time.Since(since); wait > 0 {
			if !sleep(ctx, min(wait, 5*time.Millisecond)) {
				return Entry{}, ctx.Err()
			}
			continue
		}
		return c.fill(ctx, pos)
	}
}

// issued reports whether the sequencer has handed out pos: it is before
// the tail a sequencer reported (asked again if it is not).
func (c *Client) issued(ctx context.Context, pos uint64) (bool, error) {
	c.mu.Lock()
	seen := c.tailSeen
	c.mu.Unlock()
	if pos < seen {
		return true, nil
	}
	tail, err := c.Tail(ctx)
	return pos < tail, err
}

// fill decides pos with junk, or with whatever value a capture finds
// there (a half-done append, which it completes).
func (c *Client) fill(ctx context.Context, pos uint64) (Entry, error) {
	seg, off := c.where(pos)
	for attempt := 0; ; attempt++ {
		cid, err := c.w.Capture(ctx, seg, off)
		if err == nil {
			err = c.w.Write(ctx, seg, off, junkValue, cid)
			if err == nil {
				return Entry{Pos: pos, Junk: true}, nil
			}
		}
		var we *wor.WrittenError
		switch {
		case errors.As(err, &we):
			return c.entry(pos, we.Value)
		case errors.Is(err, wor.ErrTrimmed):
			return Entry{}, fmt.Errorf("%w: %d", ErrTrimmed, pos)
		case ctx.Err() != nil:
			return Entry{}, ctx.Err()
		}
		if !sleep(ctx, min(time.Duration(attempt+1)*5*time.Millisecond, 100*time.Millisecond)) {
			return Entry{}, ctx.Err()
		}
	}
}

func (c *Client) entry(pos uint64, v []byte) (Entry, error) {
	data, junk, err := decodeEntry(v)
	if err != nil {
		return Entry{}, fmt.Errorf("position %d: %w", pos, err)
	}
	return Entry{Pos: pos, Data: data, Junk: junk}, nil
}

// Trim discards the log before prefix, in whole segments: every segment
// that ends at or before prefix is trimmed (its positions then read as
// ErrTrimmed); the segment holding prefix stays. A prefix beyond the
// tail is refused: it would trim segments still being appended to.
func (c *Client) Trim(ctx context.Context, prefix uint64) error {
	tail, err := c.Tail(ctx)
	if err != nil {
		return err
	}
	if prefix > tail {
		return fmt.Errorf("wormlog: trim before %d: beyond the tail %d", prefix, tail)
	}
	end := prefix / c.cfg.SegmentSize
	// Segments are trimmed in order: find the first that is not.
	first, err := segsearch.First(ctx, end, func(ctx context.Context, i uint64) (bool, error) {
		_, err := c.w.Metadata(ctx, c.cfg.Base+i)
		switch {
		case errors.Is(err, wor.ErrTrimmed):
			return true, nil
		case err == nil, errors.Is(err, wor.ErrNotAllocated):
			return false, nil
		}
		return false, err
	})
	if err != nil {
		return err
	}
	for s := first; s < end; s++ {
		err := c.w.Trim(ctx, c.cfg.Base+s)
		if err != nil && !errors.Is(err, wor.ErrTrimmed) {
			return fmt.Errorf("wormlog: trimming log segment %d: %w", c.cfg.Base+s, err)
		}
	}
	return nil
}

// Subscription delivers a log's entries in order (junk skipped) from a
// position on, as they are appended.
type Subscription struct {
	C    <-chan Entry // closed when the subscription ends
	stop context.CancelFunc
	done chan struct{}
	err  error // set before done closes
}

// Close ends the subscription.
func (s *Subscription) Close() { s.stop(); <-s.done }

// Err is why the subscription ended (after C is closed): the context's
// error, or ErrTrimmed when it reached a trimmed position.
func (s *Subscription) Err() error { <-s.done; return s.err }

// A subscriber behind the tail reads subscribeWindow positions at once,
// doubling up to maxSubscribeWindow while every read finds a value (a
// stretch of junk a new sequencer filled is read in a few round trips).
const (
	subscribeWindow    = 32
	maxSubscribeWindow = 512
)

// Subscribe delivers every entry from position from on, in order, junk
// skipped: behind the tail it reads ahead in parallel; at a position the
// sequencer handed out but nobody wrote it waits up to the hole timeout
// and fills it; at the tail it polls.
func (c *Client) Subscribe(ctx context.Context, from uint64) *Subscription {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan Entry, 2*subscribeWindow)
	s := &Subscription{C: ch, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(ch)
		s.err = c.subscribe(ctx, from, ch)
	}()
	return s
}

func (c *Client) subscribe(ctx context.Context, p uint64, ch chan<- Entry) error {
	poll := time.Millisecond
	window := uint64(subscribeWindow)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		tail := c.tailSeen
		c.mu.Unlock()
		if p >= tail {
			t, err := c.Tail(ctx)
			if err != nil {
				return err
			}
			if p >= t {
				if !sleep(ctx, poll) {
					return ctx.Err()
				}
				poll = min(2*poll, 20*time.Millisecond)
				continue
			}
			tail = t
		}
		poll = time.Millisecond
		// Read [p, p+n) in parallel, within one segment and the tail.
		n := min(tail-p, window, c.cfg.SegmentSize-p%c.cfg.SegmentSize)
		seg, off := c.where(p)
		vals := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { vals[i], errs[i] = c.w.Read(ctx, seg, off+i) })
		}
		wg.Wait()
		window = min(2*window, maxSubscribeWindow)
		for i := range n {
			var e Entry
			var err error
			switch {
			case errs[i] == nil:
				e, err = c.entry(p, vals[i])
			case errors.Is(errs[i], wor.ErrUnwritten):
				// Handed out, not written yet: wait for it (a hole is
				// filled after the hole timeout).
				window = subscribeWindow
				e, err = c.read(ctx, p, time.Now())
			case errors.Is(errs[i], wor.ErrTrimmed):
				return fmt.Errorf("%w: %d", ErrTrimmed, p)
			default:
				err = errs[i]
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if errors.Is(err, ErrTrimmed) || errors.Is(err, ErrMalformed) {
					return err
				}
				c.log.Debug("wormlog: subscriber read", "pos", p, "err", err)
				window = subscribeWindow
				break // read the rest again
			}
			if !e.Junk {
				select {
				case ch <- e:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			p++
		}
	}
}
