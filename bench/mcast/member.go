package mcast

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/bench/kit"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// The multicast throughput benchmark, Strata's side of JGroups' MPerf:
// N members, each its own process, form a group; once the group has N
// members every member casts Count messages of Size bytes as fast as flow
// control lets it, and counts every cast it delivers, its own included
// (MPerf's default "measure local messages"), checking that each member's
// casts arrive exactly once and in the order they were cast. A member's
// figure is casts delivered / time from its first to its last delivery.

// Props is the stack the benchmark runs: the membership stack without
// total order (reliable FIFO multicast, cast flow control, stability,
// membership, fragmentation over reliable point-to-point), what JGroups'
// tcp.xml provides (NAKACK2, UNICAST3, STABLE, GMS, MFC/UFC, FRAG2).
const Props = "Membership"

// Group is the group name the members join.
const Group = "mperf"

// Body layout of the benchmark's casts: a kind byte, then (data) the
// sender's cast number (1, 2, ...) as a big-endian u64, then filler up to
// the configured size.
const (
	kindStart  = 'S' // cast once by the first member when the view is complete
	kindData   = 'D'
	mcastHdr   = 1 + 8
	minMcastSz = mcastHdr
)

// MemberConfig configures one member.
type MemberConfig struct {
	Members int    // group size to wait for before the start
	Size    int    // bytes per cast (>= 9: kind byte and cast number)
	Count   int    // casts this member makes (every member makes as many)
	Listen  string // transport address; default "udp:127.0.0.1:0"
	Contact string // a member to join through; "" starts the group
	Props   string // stack properties; default Props
	// Wrap, if set, wraps the member's transport (e.g. a seal).
	Wrap func(stack.Transport) (stack.Transport, error)

	// Stack tuning; zero keeps stack.Config's defaults.
	CastWindow  int           // mflow: own casts unstable at once
	CastBytes   int           // mflow: their bytes
	GossipEvery time.Duration // stable: delivery-vector gossip interval
	Window      int           // pt2pt: frames in flight per peer
	RTO         time.Duration // pt2pt: first retransmission timeout

	// Outstanding is how many own casts the sender may have handed to the
	// stack that the stack has not yet let through flow control (their
	// local delivery marks that); the sender waits beyond it, so flow
	// control queues at most this many. Default 64.
	Outstanding int

	// Batch is how many casts the sender makes in one Node.Batch (their
	// frames leave together, bundled); 1 casts one at a time. Default 64.
	Batch int

	// onData, if set, sees every data cast delivered (tests); it runs on
	// the delivering goroutine.
	onData func(from stack.Addr, seq uint64)
}

func (c *MemberConfig) defaults() error {
	if c.Listen == "" {
		c.Listen = "udp:127.0.0.1:0"
	}
	if c.Props == "" {
		c.Props = Props
	}
	if c.Outstanding <= 0 {
		c.Outstanding = 64
	}
	if c.Batch <= 0 {
		c.Batch = 64
	}
	if c.Members < 1 || c.Count < 1 || c.Size < minMcastSz {
		return fmt.Errorf("mcast: mcast needs members >= 1, count >= 1 and size >= %d (got %d, %d, %d)", minMcastSz, c.Members, c.Count, c.Size)
	}
	return nil
}

// MemberResult is one member's measurement.
type MemberResult struct {
	Rank      int    `json:"rank"` // in the view the run started in
	Addr      string `json:"addr"`
	Transport string `json:"transport"`
	Members   int    `json:"members"`
	Size      int    `json:"size"`
	Count     int    `json:"count"` // casts per member

	Received   int64   `json:"received"`     // data casts delivered, own included
	Seconds    float64 `json:"seconds"`      // first to last delivery
	MsgsPerSec float64 `json:"msgs_per_sec"` // Received / Seconds
	SendSecs   float64 `json:"send_seconds"` // this member's casting, start to last Cast returned

	// Checks: casts delivered twice or out of their sender's order (both
	// must be 0), and casts delivered per sender.
	Duplicates int64            `json:"duplicates"`
	OutOfOrder int64            `json:"out_of_order"`
	PerSender  map[string]int64 `json:"per_sender"`

	// Counters are the stack's per-layer counters at the end ("layer.name").
	Counters map[string]uint64 `json:"counters,omitempty"`
}

// Member is a member of the benchmark's group.
type Member struct {
	cfg  MemberConfig
	node *stack.Node
	tr   stack.Transport

	mu       sync.Mutex
	view     *stack.View
	viewCh   chan struct{} // closed and replaced on every view
	broken   chan struct{} // closed at the first view change after the start
	brokenBy *stack.View

	start   chan struct{} // closed when the start cast is delivered
	started bool

	// Delivery state, touched only by the dispatching goroutine (the node
	// dispatches one at a time) until done is closed.
	expect     int64
	senders    []senderState // a few: searched in order, cheaper than a map per cast
	received   int64
	dups, ooo  int64
	first      time.Time
	last       time.Time
	done       chan struct{}
	surplus    atomic.Int64  // data casts delivered after the expected number
	progress   atomic.Int64  // received, for error messages and progress lines
	casted     atomic.Int64  // own data casts handed to the stack, for progress lines
	ownCast    atomic.Uint64 // own data casts delivered back
	waiting    atomic.Bool   // the sender waits for ownCast to grow
	kick       chan struct{}
	startRank0 sync.Once
}

// Join starts a member: it joins (or, without a contact, starts) the
// group and returns once it is in a view.
func Join(ctx context.Context, cfg MemberConfig) (*Member, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ps, err := layers.ParseProps(cfg.Props)
	if err != nil {
		return nil, err
	}
	ch, err := layers.Configure(ps)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ch.Provides, stack.Membership) {
		return nil, fmt.Errorf("mcast: properties %q do not include Membership", cfg.Props)
	}
	tr, err := transport.ListenOpts(cfg.Listen, transport.Options{Wrap: cfg.Wrap})
	if err != nil {
		return nil, err
	}
	m := &Member{cfg: cfg, tr: tr, viewCh: make(chan struct{}), start: make(chan struct{}), broken: make(chan struct{}),
		done: make(chan struct{}),
		kick: make(chan struct{}, 1), expect: int64(cfg.Members) * int64(cfg.Count)}
	scfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: min(tr.MTU(), 64000),
		Group: Group, Contact: stack.Addr(cfg.Contact),
		CastWindow: cfg.CastWindow, CastBytes: cfg.CastBytes, GossipEvery: cfg.GossipEvery, Window: cfg.Window, RTO: cfg.RTO}
	if cfg.Contact == "" {
		m.view = &stack.View{ID: 1, Members: []stack.Addr{tr.Local()}}
	}
	m.node = stack.NewNode(tr, stack.NewRealClock(), layers.Build(ch.Specs, scfg), stack.NodeOptions{})
	m.node.OnDeliver(m.deliver)
	m.node.OnEvent(func(ev stack.Event) {
		if ev.Type != stack.EView {
			return
		}
		m.mu.Lock()
		if m.started && m.brokenBy == nil {
			m.brokenBy = ev.View
			close(m.broken)
		}
		m.view = ev.View
		close(m.viewCh)
		m.viewCh = make(chan struct{})
		m.mu.Unlock()
	})
	for {
		v, ch := m.View()
		if v != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			m.Close()
			return nil, fmt.Errorf("mcast: joining through %s: %w", cfg.Contact, ctx.Err())
		case <-ch:
		}
	}
}

// Addr is the member's transport address (the others' contact).
func (m *Member) Addr() stack.Addr { return m.node.Local() }

// View returns the current view (nil before the first) and a channel
// closed at the next view change.
func (m *Member) View() (*stack.View, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view, m.viewCh
}

// Close stops the member without telling the group.
func (m *Member) Close() error { return m.node.Close() }

// deliver runs on the node's dispatching goroutine, one call at a time.
func (m *Member) deliver(from stack.Addr, body []byte) {
	if len(body) == 0 {
		return
	}
	switch body[0] {
	case kindStart:
		m.mu.Lock()
		if !m.started {
			m.started = true
			close(m.start)
		}
		m.mu.Unlock()
		return
	case kindData:
	default:
		return
	}
	if len(body) < mcastHdr {
		return
	}
	seq := binary.BigEndian.Uint64(body[1:])
	if from == m.node.Local() {
		m.ownCast.Add(1)
		if m.waiting.Load() && m.waiting.CompareAndSwap(true, false) {
			select {
			case m.kick <- struct{}{}:
			default:
			}
		}
	}
	if m.cfg.onData != nil {
		m.cfg.onData(from, seq)
	}
	if m.received >= m.expect {
		m.surplus.Add(1) // more than expected: reported as duplicates
		return
	}
	if m.received == 0 {
		m.first = time.Now()
	}
	st := m.sender(from)
	want := st.next + 1
	switch {
	case seq == want:
		st.next = seq
	case seq < want:
		m.dups++
	default:
		m.ooo++
		st.next = seq
	}
	st.count++
	m.received++
	m.progress.Store(m.received)
	if m.received == m.expect {
		// The rate runs from the first delivery to the last; reading the
		// clock only for those keeps the checker's cost per cast down.
		m.last = time.Now()
		close(m.done)
	}
}

// senderState is what a member checks of one sender's casts: the last
// number delivered in order, and how many were delivered.
type senderState struct {
	addr  stack.Addr
	next  uint64
	count int64
}

// sender returns from's state, adding it at the first cast.
func (m *Member) sender(from stack.Addr) *senderState {
	for i := range m.senders {
		if m.senders[i].addr == from {
			return &m.senders[i]
		}
	}
	m.senders = append(m.senders, senderState{addr: from})
	return &m.senders[len(m.senders)-1]
}

// Run waits until the view has cfg.Members members, starts the run (the
// view's first member casts the start), casts this member's Count casts
// and returns once it has delivered every member's. It fails if the view
// changes during the run, or on ctx.
func (m *Member) Run(ctx context.Context) (MemberResult, error) {
	var res MemberResult
	// Wait for the whole group (or for the start, if the first member
	// saw the whole group before this one did).
	var v *stack.View
	for {
		var ch <-chan struct{}
		v, ch = m.View()
		if len(v.Members) >= m.cfg.Members || m.isStarted() {
			break
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("mcast: waiting for a view of %d members (have %d): %w", m.cfg.Members, len(v.Members), ctx.Err())
		case <-ch:
		case <-m.start:
		}
	}
	if len(v.Members) > m.cfg.Members {
		return res, fmt.Errorf("mcast: view has %d members, want %d", len(v.Members), m.cfg.Members)
	}
	res.Rank = v.Rank(m.Addr())
	if res.Rank == 0 {
		var err error
		m.startRank0.Do(func() { err = m.node.Cast([]byte{kindStart}) })
		if err != nil {
			return res, err
		}
	}
	select {
	case <-m.start:
	case <-ctx.Done():
		return res, fmt.Errorf("mcast: waiting for the start: %w", ctx.Err())
	}

	// Cast: each cast is one slice of a slab of fresh (zeroed) memory, its
	// header written in front and zeros after it (MPerf's payload is a
	// zeroed byte array too); the stack keeps it until the cast is stable,
	// so slab memory is never reused. One slice, because a cast in parts
	// is copied into one by mnak, which keeps it for retransmission and
	// delivers it to this member as one body. Up to Batch casts at a time
	// go in one Node.Batch, so that what they make the stack send leaves
	// bundled per peer instead of one system call per cast.
	size := m.cfg.Size
	var slab []byte
	t0 := time.Now()
	limit := uint64(m.cfg.Outstanding)
	var castErr error
	for sent := 0; sent < m.cfg.Count; {
		room := limit - min(limit, uint64(sent)-m.ownCast.Load())
		if room == 0 {
			m.waiting.Store(true)
			if uint64(sent)-m.ownCast.Load() < limit {
				m.waiting.Store(false)
				continue
			}
			select {
			case <-m.kick:
			case <-m.broken:
				return res, m.brokenErr()
			case <-ctx.Done():
				return res, fmt.Errorf("mcast: casting (%d of %d cast): %w", sent, m.cfg.Count, ctx.Err())
			}
			continue
		}
		n := min(int(room), m.cfg.Batch, m.cfg.Count-sent)
		cast := func() {
			for range n {
				if len(slab) < size {
					slab = make([]byte, 64*size)
				}
				body := slab[:size:size]
				slab = slab[size:]
				hdr := body[:mcastHdr]
				sent++
				hdr[0] = kindData
				binary.BigEndian.PutUint64(hdr[1:], uint64(sent))
				if castErr = m.node.Cast(body); castErr != nil {
					return
				}
			}
		}
		if n == 1 {
			cast()
		} else {
			m.node.Batch(cast)
		}
		if castErr != nil {
			return res, fmt.Errorf("mcast: cast %d: %w", sent, castErr)
		}
		m.casted.Store(int64(sent))
	}
	res.SendSecs = time.Since(t0).Seconds()

	select {
	case <-m.done:
	case <-m.broken:
		return res, m.brokenErr()
	case <-ctx.Done():
		return res, fmt.Errorf("mcast: delivering (%d of %d so far): %w", m.progress.Load(), m.expect, ctx.Err())
	}
	select {
	case <-m.broken:
		return res, m.brokenErr()
	default:
	}
	// done is closed: the delivery state is no longer written (surplus
	// casts only count in surplus).
	res.Addr, res.Members, res.Size, res.Count = string(m.Addr()), m.cfg.Members, m.cfg.Size, m.cfg.Count
	res.Transport, _, _ = strings.Cut(string(m.Addr()), ":")
	res.Received, res.Duplicates, res.OutOfOrder = m.expect, m.dups+m.surplus.Load(), m.ooo
	res.Seconds = m.last.Sub(m.first).Seconds()
	if res.Seconds > 0 {
		res.MsgsPerSec = float64(res.Received) / res.Seconds
	}
	res.PerSender = map[string]int64{}
	for _, st := range m.senders {
		res.PerSender[string(st.addr)] = st.count
	}
	res.Counters = m.counters()
	return res, nil
}

// counters are the node's per-layer counters, as "layer.name".
func (m *Member) counters() map[string]uint64 {
	out := map[string]uint64{}
	for _, lc := range m.node.Counters() {
		for _, c := range lc.Counters {
			out[lc.Layer+"."+c.Name] = c.Value
		}
	}
	return out
}

// brokenErr reports the view change that ended a run.
func (m *Member) brokenErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Errorf("mcast: the view changed during the run, to %d member(s) (view %d; a member was suspected?), after %d of %d casts delivered",
		len(m.brokenBy.Members), m.brokenBy.ID, m.progress.Load(), m.expect)
}

func (m *Member) isStarted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// ChildLine is one JSON line a member process writes on stdout:
// first its address, then its result or an error.
type ChildLine struct {
	Addr   string        `json:"addr,omitempty"`
	Result *MemberResult `json:"result,omitempty"`
	Error  string        `json:"error,omitempty"`
	// With an error from the run: the stack's counters at that point.
	Counters map[string]uint64 `json:"counters,omitempty"`
}

// ProgressEvery is how often a member process reports its progress.
var ProgressEvery = 5 * time.Second

// ServeMember is the body of a member process: join, print the
// address line, run, print the result line, then stay in the group (the
// others may still need this member's retransmissions) until stop ends.
// While it runs it writes a progress line to log every ProgressEvery.
//
// With STRATA_MCAST_TRACE set to a path ("%p" is replaced by the process
// id), the member writes a runtime execution trace of itself there, for
// finding where a member waits (go tool trace -pprof=sync|net|syscall|sched).
func ServeMember(ctx, stop context.Context, cfg MemberConfig, out, log io.Writer) error {
	if p := os.Getenv("STRATA_MCAST_TRACE"); p != "" {
		if f, err := os.Create(strings.ReplaceAll(p, "%p", strconv.Itoa(os.Getpid()))); err == nil {
			if err := trace.Start(f); err == nil {
				defer func() { trace.Stop(); f.Close() }()
			} else {
				f.Close()
			}
		}
	}
	enc := json.NewEncoder(out)
	fail := func(err error) error {
		enc.Encode(ChildLine{Error: err.Error()})
		return err
	}
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	m, err := Join(jctx, cfg)
	cancel()
	if err != nil {
		return fail(err)
	}
	defer m.Close()
	if err := enc.Encode(ChildLine{Addr: string(m.Addr())}); err != nil {
		return err
	}
	rctx, rcancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop.Done():
		case <-rctx.Done():
		}
		rcancel()
	}()
	go func() {
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		t0 := time.Now()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				v, _ := m.View()
				fmt.Fprintf(log, "mcast member %s (view of %d): %d of %d casts made, %d of %d delivered, %v\n",
					m.Addr(), len(v.Members), m.casted.Load(), cfg.Count, m.progress.Load(), m.expect, time.Since(t0).Round(time.Second))
			}
		}
	}()
	res, err := m.Run(rctx)
	rcancel()
	if err != nil {
		enc.Encode(ChildLine{Error: err.Error(), Counters: m.counters()})
		return err
	}
	if err := enc.Encode(ChildLine{Result: &res}); err != nil {
		return err
	}
	<-stop.Done()
	return nil
}

// StrataConfig configures RunStrata.
type StrataConfig struct {
	Members   int
	Size      int
	Count     int
	Transport string // "udp" (default) or "tcp"
	// Argv runs one member process when given the member flags (see
	// MemberArgs): e.g. {"/path/strata", "bench", "mcast", "--member"}.
	Argv []string
	// Extra flags for every member process (stack tuning).
	Extra   []string
	Timeout time.Duration // whole run; default 3 minutes
	Stderr  io.Writer     // members' stderr; default os.Stderr
	Env     []string      // added to every member's environment (e.g. STRATA_KEY_FILE)
}

// StrataRun is one run of the Strata side.
type StrataRun struct {
	Members   int            `json:"members"`
	Size      int            `json:"size"`
	Count     int            `json:"count"`
	Transport string         `json:"transport"`
	PerMember []MemberResult `json:"per_member"`
	Commands  []string       `json:"commands"`
}

// MeanMsgsPerSec is the mean over members of msgs/s delivered.
func (r StrataRun) MeanMsgsPerSec() float64 {
	if len(r.PerMember) == 0 {
		return 0
	}
	s := 0.0
	for _, p := range r.PerMember {
		s += p.MsgsPerSec
	}
	return s / float64(len(r.PerMember))
}

// MemberArgs are the flags that configure one member process (the
// command's hidden flags; see cmd/strata bench mcast).
func MemberArgs(members, size, count int, listen, contact string) []string {
	a := []string{"--members", strconv.Itoa(members), "--size", strconv.Itoa(size), "--count", strconv.Itoa(count), "--listen", listen}
	if contact != "" {
		a = append(a, "--contact", contact)
	}
	return a
}

// RunStrata runs the benchmark with cfg.Members member processes on
// loopback: the first starts the group, the others join through it; the
// results come back as JSON lines on their stdout. Every process is
// killed on return if it has not exited by then.
func RunStrata(ctx context.Context, cfg StrataConfig) (StrataRun, error) {
	run := StrataRun{Members: cfg.Members, Size: cfg.Size, Count: cfg.Count, Transport: cfg.Transport}
	if run.Transport == "" {
		run.Transport = "udp"
	}
	if cfg.Members < 1 || len(cfg.Argv) == 0 {
		return run, errors.New("mcast: RunStrata needs members >= 1 and Argv")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Minute
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	// Member processes die with ctx; the run's deadline only ends the
	// waiting, so that members can still say where they were.
	procCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	type child struct {
		p     *kit.Proc
		lines chan ChildLine // the lines after the first, closed when the member exited
	}
	var kids []*child
	defer func() {
		for _, k := range kids {
			k.p.Stop() // stdin closes (members leave), then SIGINT, then the kill
		}
	}()
	start := func(contact string) (*child, ChildLine, error) {
		args := append(slices.Clone(cfg.Argv), MemberArgs(cfg.Members, cfg.Size, cfg.Count, run.Transport+":127.0.0.1:0", contact)...)
		args = append(args, cfg.Extra...)
		lw := &lineWriter{lines: make(chan ChildLine, 16)}
		p, err := kit.Start(procCtx, kit.Cmd{Name: "mcast member", Argv: args, Env: cfg.Env, Stdin: true, Stdout: lw, Stderr: cfg.Stderr,
			Ready: func(l string) bool { return strings.HasPrefix(l, "{") }, ReadyTimeout: cfg.Timeout,
			StopSignal: os.Interrupt, Grace: 5 * time.Second})
		if err != nil {
			return nil, ChildLine{}, fmt.Errorf("mcast: starting a member: %w", err)
		}
		k := &child{p: p, lines: lw.lines}
		go func() { <-p.Exited(); lw.close() }()
		kids = append(kids, k)
		run.Commands = append(run.Commands, strings.Join(args, " "))
		first := parseChildLine([]byte(p.Ready))
		if first.Error != "" {
			return k, first, fmt.Errorf("mcast: member %d: %s", len(kids)-1, first.Error)
		}
		return k, first, nil
	}
	// lastWords asks every member to stop (stdin closes) and collects what
	// they say about where they were.
	lastWords := func() string {
		var b strings.Builder
		for _, k := range kids {
			if c, ok := k.p.Stdin().(io.Closer); ok {
				c.Close()
			}
		}
		grace := time.After(3 * time.Second)
		for i, k := range kids {
		wait:
			for {
				select {
				case l, ok := <-k.lines:
					if !ok {
						break wait
					}
					if l.Error != "" {
						fmt.Fprintf(&b, "\nmember %d: %s", i, l.Error)
						keys := make([]string, 0, len(l.Counters))
						for c, v := range l.Counters {
							if v != 0 {
								keys = append(keys, c)
							}
						}
						slices.Sort(keys)
						for _, c := range keys {
							fmt.Fprintf(&b, " %s=%d", c, l.Counters[c])
						}
						break wait
					}
				case <-grace:
					break wait
				}
			}
		}
		return b.String()
	}
	next := func(k *child, what string) (ChildLine, error) {
		select {
		case l, ok := <-k.lines:
			if !ok {
				return l, fmt.Errorf("mcast: member %d exited before its %s:\n%s", slices.Index(kids, k), what, k.p.Tail(10))
			}
			if l.Error != "" {
				return l, fmt.Errorf("mcast: member %d: %s", slices.Index(kids, k), l.Error)
			}
			return l, nil
		case <-ctx.Done():
			return ChildLine{}, fmt.Errorf("mcast: waiting for member %d's %s: %w%s", slices.Index(kids, k), what, ctx.Err(), lastWords())
		}
	}

	_, l, err := start("")
	if err != nil {
		return run, err
	}
	contact := l.Addr
	for i := 1; i < cfg.Members; i++ {
		if _, _, err := start(contact); err != nil {
			return run, err
		}
	}
	for _, k := range kids {
		l, err := next(k, "result")
		if err != nil {
			return run, err
		}
		if l.Result == nil {
			return run, fmt.Errorf("mcast: member %d sent no result", slices.Index(kids, k))
		}
		run.PerMember = append(run.PerMember, *l.Result)
	}
	slices.SortFunc(run.PerMember, func(a, b MemberResult) int { return a.Rank - b.Rank })
	for _, r := range run.PerMember {
		if r.Duplicates != 0 || r.OutOfOrder != 0 {
			return run, fmt.Errorf("mcast: member %d delivered %d duplicate and %d out-of-order casts", r.Rank, r.Duplicates, r.OutOfOrder)
		}
	}
	return run, nil
}

func parseChildLine(b []byte) ChildLine {
	var l ChildLine
	if err := json.Unmarshal(b, &l); err != nil {
		l = ChildLine{Error: "unparsable line: " + string(b)}
	}
	return l
}

// lineWriter parses a member's stdout after its first line (kit.Proc
// writes it here) into ChildLines.
type lineWriter struct {
	mu     sync.Mutex
	buf    []byte
	lines  chan ChildLine
	closed bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(w.buf[:i])
		w.buf = w.buf[i+1:]
		if len(line) > 0 && !w.closed {
			w.lines <- parseChildLine(line)
		}
	}
	return len(p), nil
}

// close ends the lines (the member exited: kit.Proc writes no more).
func (w *lineWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.lines)
	}
}
