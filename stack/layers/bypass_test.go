package layers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"strata/internal/testseed"
	"strata/stack"
)

// Bypass equivalence. Every process of a simulated group runs two copies of
// its stack side by side: A, the full layered stack, and B, the same layers
// with the bypass. Each step feeds both copies the same event (an
// application send or cast, a datagram, a timer, a leave), and then
// compares what they emitted (datagrams after decompression, timer
// requests, events for the application) and the state of every layer. The
// network loses, duplicates and reorders datagrams, and sometimes cuts a
// process off, so membership changes views; a datagram a B copy sent
// compressed is given to A as it is (A decompresses it in front of its
// full stack) and A's full-format datagram to B (which takes it through
// its bypass when the CCPs hold), so each accepts the other's messages.

// rec records what leaves one stack copy.
type rec struct {
	bottom []stack.Event
	top    []stack.Event
}

func (r *rec) Top(ev stack.Event)    { r.top = append(r.top, ev) }
func (r *rec) Bottom(ev stack.Event) { r.bottom = append(r.bottom, ev) }

// refRec is rec that also takes events by reference (stack.RefBoundary),
// as Node does, so that the bypassed twin's exits take that way; refs
// counts them.
type refRec struct {
	rec
	refs int
}

func (r *refRec) TopRef(ev *stack.Event)    { r.refs++; r.top = append(r.top, *ev) }
func (r *refRec) BottomRef(ev *stack.Event) { r.refs++; r.bottom = append(r.bottom, *ev) }

type twin struct {
	addr stack.Addr
	// RPC stacks: requests this member received and has not answered,
	// its calls without a reply, and its next call id
	requests []stack.Event
	calls    []uint64
	nextID   uint64
	a, b     stack.Runner
	ra       rec
	rb       refRec
	timerAt  time.Duration // earliest requested timer, -1 none
	dead     bool
}

type flight struct {
	from, to   stack.Addr
	full, fast []byte
}

type equivWorld struct {
	t     testing.TB
	rng   *rand.Rand
	now   time.Duration
	twins []*twin
	net   []flight
	group bool
	// wide: the cast window is wide enough for the cast fast paths (a
	// narrow one, as some worlds have, keeps flow control and stability
	// gossip on their full paths nearly always)
	wide bool
	// membership: the stack has the membership layer, so a member cut off
	// is excluded in a new view; cut: one was
	membership, cut bool
	traced          int  // exits the optimized copies' tracer saw (newEquivWorldTraced)
	exits           int  // exits of the optimized copies' stacks
	stateEvery      int  // see injectPair
	rpc             bool // the stack has the request/response layer
	// fastRPC counts the calls, responses, requests and replies the
	// bypass took
	fastRPC map[stack.Type]int
	steps   int
}

func newEquivWorld(t testing.TB, rng *rand.Rand, specs []stack.Spec, n int, functional bool) *equivWorld {
	return newEquivWorldGeneric(t, rng, specs, n, functional, false)
}

// newEquivWorldGeneric is newEquivWorld whose optimized copies run the
// bypass's generic loops (generic) rather than its generated code.
func newEquivWorldGeneric(t testing.TB, rng *rand.Rand, specs []stack.Spec, n int, functional, generic bool) *equivWorld {
	return newEquivWorldTraced(t, rng, specs, n, functional, generic, false)
}

// newEquivWorldTraced is newEquivWorldGeneric whose optimized copies, if
// traced, run with a tracer (which makes the bypass hand its exits to
// the boundary by value, through the runner); w.traced counts the exits
// it saw.
func newEquivWorldTraced(t testing.TB, rng *rand.Rand, specs []stack.Spec, n int, functional, generic, traced bool) *equivWorld {
	w := &equivWorld{t: t, rng: rng, fastRPC: map[stack.Type]int{}}
	for _, s := range specs {
		switch s.Name {
		case "mnak":
			w.group = true
		case "rpc":
			w.rpc = true
		case "gms":
			w.membership = true
		}
	}
	members := make([]stack.Addr, n)
	for i := range members {
		members[i] = stack.Addr(fmt.Sprintf("sim:%c", 'a'+i))
	}
	w.wide = rng.IntN(3) > 0
	for i, a := range members {
		// Cast windows in casts and in bytes (casts are up to 100 bytes
		// here): narrow ones, where either limit binds, and wide ones,
		// where the byte limit binds in half the groups now and then.
		castWindow, castBytes := 1+rng.IntN(6), 100+rng.IntN(400)
		if w.wide {
			castWindow, castBytes = 16+rng.IntN(48), 0
			if rng.IntN(2) == 0 {
				castBytes = 1000 + rng.IntN(3000)
			}
		}
		cfg := stack.Config{Local: a, Epoch: uint64(1000 + i), Members: members, Group: "g", MTU: 600,
			Window: 8 + rng.IntN(24), Credit: 2000 + rng.IntN(8000), CastWindow: castWindow, CastBytes: castBytes,
			Heartbeat: 10 * time.Millisecond, SuspectAfter: 300 * time.Millisecond,
			RTO: 10 * time.Millisecond, StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond}
		tw := &twin{addr: a, timerAt: -1}
		var err error
		tw.a, err = stack.NewRunner(Build(specs, cfg), &tw.ra, nil, functional, true)
		if err != nil {
			t.Fatal(err)
		}
		tw.a.Bypass().SetEnabled(false)
		var tr stack.Tracer
		if traced {
			nl := len(specs)
			tr = func(layer int, dir stack.Dir, ev stack.Event) {
				if layer < 0 || layer >= nl {
					w.traced++
				}
			}
		}
		if tw.b, err = stack.NewRunner(Build(specs, cfg), &tw.rb, tr, functional, true); err != nil {
			t.Fatal(err)
		}
		if generic {
			tw.b.Bypass().Unfuse()
		}
		w.twins = append(w.twins, tw)
	}
	for _, tw := range w.twins {
		w.inject(tw, stack.Up, stack.Event{Type: stack.ETimer, Time: 0})
	}
	return w
}

// inject feeds ev to both copies of tw and compares the results.
func (w *equivWorld) inject(tw *twin, dir stack.Dir, ev stack.Event) {
	eb := ev
	if ev.Msg != nil {
		eb.Msg = stack.NewMsg(ev.Msg.Bytes()) // each copy owns its message
	}
	w.injectPair(tw, dir, ev, eb)
}

func (w *equivWorld) injectPair(tw *twin, dir stack.Dir, ea, eb stack.Event) {
	w.steps++
	ea.Now, eb.Now = w.now, w.now
	tw.a.Inject(dir, ea)
	var hits uint64
	if w.rpc {
		hits = bypassHits(tw.b.Bypass())
	}
	tw.b.Inject(dir, eb)
	if w.rpc && bypassHits(tw.b.Bypass()) > hits {
		if eb.Type == stack.ECall || eb.Type == stack.EResponse {
			w.fastRPC[eb.Type]++
		}
		for _, ev := range tw.rb.top {
			if ev.Type == stack.ERequest || ev.Type == stack.EReply {
				w.fastRPC[ev.Type]++
			}
		}
	}
	what := func() string { return fmt.Sprintf("step %d, %s %v %v", w.steps, tw.addr, dir, ea) }
	if err := w.compare(tw); err != nil {
		w.t.Fatalf("%s: %v", what(), err)
	}
	// The layers' states after every step, or every stateEvery-th while
	// settling (comparing them is most of the test's time; a difference
	// persists, so it is still found, a few steps late).
	if w.stateEvery <= 1 || w.steps%w.stateEvery == 0 {
		if d := stateDiff(tw.a.Layers(), tw.b.Layers()); d != "" {
			w.t.Fatalf("%s: layer states differ: %s", what(), d)
		}
	}
	// Outputs to the network and the clock.
	for i, ea := range tw.ra.bottom {
		eb := tw.rb.bottom[i]
		switch ea.Type {
		case stack.ESend:
			if !tw.dead {
				w.net = append(w.net, flight{from: tw.addr, to: ea.Peer, full: ea.Msg.Bytes(), fast: eb.Msg.Bytes()})
			}
		case stack.ETimerReq:
			if tw.timerAt < 0 || ea.Time < tw.timerAt {
				tw.timerAt = ea.Time
			}
		}
	}
	// What the application sees of RPC (the copies agree: compared).
	for _, ev := range tw.ra.top {
		switch ev.Type {
		case stack.ERequest:
			tw.requests = append(tw.requests, stack.Event{Peer: ev.Peer, ID: ev.ID})
		case stack.EReply:
			tw.calls = slices.DeleteFunc(tw.calls, func(id uint64) bool { return id == ev.ID })
		}
	}
	w.exits += len(tw.rb.top) + len(tw.rb.bottom)
	tw.ra, tw.rb.rec = rec{}, rec{}
}

// bypassHits is how many events the bypass took.
func bypassHits(bp *stack.Bypass) uint64 {
	var n uint64
	for _, c := range bp.Counters() {
		if strings.HasSuffix(c.Name, "_hits") {
			n += c.Value
		}
	}
	return n
}

func (w *equivWorld) compare(tw *twin) error {
	ra, rb := &tw.ra, &tw.rb
	if len(ra.bottom) != len(rb.bottom) || len(ra.top) != len(rb.top) {
		return fmt.Errorf("full stack emitted %d down, %d up; bypass %d down, %d up: %v / %v", len(ra.bottom), len(ra.top), len(rb.bottom), len(rb.top), ra.bottom, rb.bottom)
	}
	for i := range ra.bottom {
		ea, eb := ra.bottom[i], rb.bottom[i]
		if ea.Type != eb.Type || ea.Peer != eb.Peer || ea.Time != eb.Time {
			return fmt.Errorf("down event %d: full %v, bypass %v", i, ea, eb)
		}
		if ea.Type == stack.ESend {
			wire, err := tw.b.Bypass().Decompress(eb.Msg.Bytes())
			if err != nil {
				return fmt.Errorf("down event %d: %v", i, err)
			}
			if !bytes.Equal(wire, ea.Msg.Bytes()) {
				return fmt.Errorf("down event %d to %s: wire bytes differ after decompression:\nfull   %x\nbypass %x", i, ea.Peer, ea.Msg.Bytes(), wire)
			}
		}
	}
	for i := range ra.top {
		ea, eb := ra.top[i], rb.top[i]
		if ea.Type != eb.Type || ea.Peer != eb.Peer || ea.Seq != eb.Seq || ea.ID != eb.ID || !reflect.DeepEqual(ea.View, eb.View) ||
			!reflect.DeepEqual(ea.Stability(), eb.Stability()) || fmt.Sprint(ea.Err) != fmt.Sprint(eb.Err) {
			return fmt.Errorf("up event %d: full %v, bypass %v", i, ea, eb)
		}
		if (ea.Msg == nil) != (eb.Msg == nil) || ea.Msg != nil && !bytes.Equal(ea.Msg.Bytes(), eb.Msg.Bytes()) {
			return fmt.Errorf("up event %d: bodies differ", i)
		}
	}
	return nil
}

func (w *equivWorld) twin(a stack.Addr) *twin {
	for _, tw := range w.twins {
		if tw.addr == a {
			return tw
		}
	}
	return nil
}

// step does one random thing.
func (w *equivWorld) step() {
	rng := w.rng
	live := w.live()
	tw := live[rng.IntN(len(live))]
	switch r := rng.IntN(100); {
	case r < 25 && w.rpc && rng.IntN(3) > 0:
		w.rpcStep(tw)
	case r < 25:
		size := rng.IntN(80)
		if rng.IntN(10) == 0 {
			size = rng.IntN(2000) // fragmented
		}
		to := w.twins[rng.IntN(len(w.twins))].addr
		w.inject(tw, stack.Down, stack.Event{Type: stack.ESend, Peer: to, Msg: stack.NewMsg(bodyOf(rng, size))})
	case r < 45 && w.group:
		w.inject(tw, stack.Down, stack.Event{Type: stack.ECast, Msg: stack.NewMsg(bodyOf(rng, rng.IntN(100)))})
	case r < 85 && len(w.net) > 0:
		// Deliver one datagram (any of them: reordering), perhaps twice,
		// perhaps not at all.
		i := 0 // mostly in order, so both the bypass and the full path run
		if rng.IntN(8) == 0 {
			i = rng.IntN(len(w.net))
		}
		f := w.net[i]
		switch d := rng.IntN(40); {
		case d == 0: // lost
		case d == 1: // duplicated: stays in flight
			w.deliver(f)
			return
		default:
			w.deliver(f)
		}
		w.net = slices.Delete(w.net, i, i+1)
	case r < 97:
		w.tick(live)
	case r < 98 && len(live) > 2 && w.group && (!w.wide || w.membership && !w.cut):
		// Cut a process off for good: the others suspect it. (In a wide
		// world, once, and only where a new view excludes it: without
		// one, stability, and so every sender's cast window, waits for
		// it forever.)
		tw.dead, w.cut = true, true
	default:
	}
}

// live returns the members not cut off.
func (w *equivWorld) live() []*twin {
	return slices.DeleteFunc(slices.Clone(w.twins), func(tw *twin) bool { return tw.dead })
}

// finish ends a random trace with the fast paths' common case: a world
// with a wide cast window settles (long enough for a view change if a
// member was cut off), then every world runs calm rounds.
func (w *equivWorld) finish(calm int) {
	switch {
	case w.wide && w.cut:
		w.settle(equivSettle) // a view change
	case w.wide:
		w.settle(equivSettle / 10) // losses
	}
	w.calm(calm)
}

// tick moves the clock to the earliest timer (or a little) and fires the
// timers due.
func (w *equivWorld) tick(live []*twin) {
	next := w.now + time.Duration(1+w.rng.IntN(5))*time.Millisecond
	for _, t := range live {
		if t.timerAt >= 0 && t.timerAt < next {
			next = t.timerAt
		}
	}
	w.advance(live, max(w.now, next))
}

// advance sets the clock to now and fires the timers due.
func (w *equivWorld) advance(live []*twin, now time.Duration) {
	w.now = now
	for _, t := range live {
		if t.timerAt >= 0 && t.timerAt <= w.now {
			t.timerAt = -1
			w.inject(t, stack.Up, stack.Event{Type: stack.ETimer, Time: w.now})
		}
	}
}

// settle delivers every datagram in flight, in order, and moves the clock
// 10 ms on, rounds times: losses are recovered and, when rounds*10 ms is
// well past SuspectAfter, a member cut off is suspected and excluded (the
// live ones hear each other's heartbeats every round).
func (w *equivWorld) settle(rounds int) {
	live := w.live()
	w.stateEvery = 8
	for range rounds {
		w.drain()
		w.advance(live, w.now+10*time.Millisecond)
	}
	w.drain()
	w.stateEvery = 1
	for _, tw := range live {
		if d := stateDiff(tw.a.Layers(), tw.b.Layers()); d != "" {
			w.t.Fatalf("after settling, %s: layer states differ: %s", tw.addr, d)
		}
	}
}

// drain delivers every datagram in flight, in order, and those they cause.
func (w *equivWorld) drain() {
	for k := 0; len(w.net) > 0 && k < 10000; k++ {
		f := w.net[0]
		w.net = w.net[1:]
		w.deliver(f)
	}
}

// calm runs rounds without loss, reordering or cut-offs, the fast paths'
// common case, which the random steps reach seldom: a live member casts
// (or, without a group layer, sends), every datagram is delivered in
// order, and every few rounds the clock moves to the next timer.
func (w *equivWorld) calm(rounds int) {
	live := w.live()
	for r := range rounds {
		tw := live[w.rng.IntN(len(live))]
		body := stack.NewMsg(bodyOf(w.rng, w.rng.IntN(100)))
		if w.group {
			w.inject(tw, stack.Down, stack.Event{Type: stack.ECast, Msg: body})
		} else {
			w.inject(tw, stack.Down, stack.Event{Type: stack.ESend, Peer: live[w.rng.IntN(len(live))].addr, Msg: body})
		}
		w.drain()
		if r%4 == 3 {
			w.tick(live)
		}
	}
}

// rpcStep makes tw call a member, answer a request it received, or
// cancel a call.
func (w *equivWorld) rpcStep(tw *twin) {
	rng := w.rng
	switch k := rng.IntN(10); {
	case k < 4 && len(tw.requests) > 0:
		i := rng.IntN(len(tw.requests))
		req := tw.requests[i]
		tw.requests = slices.Delete(tw.requests, i, i+1)
		w.inject(tw, stack.Down, stack.Event{Type: stack.EResponse, Peer: req.Peer, ID: req.ID, Msg: stack.NewMsg(bodyOf(rng, rng.IntN(80)))})
	case k == 4 && len(tw.calls) > 0:
		w.inject(tw, stack.Down, stack.Event{Type: stack.ECancel, ID: tw.calls[rng.IntN(len(tw.calls))]})
	default:
		id := tw.nextID + 1
		if rng.IntN(20) > 0 { // else a duplicate id, refused
			tw.nextID++
			tw.calls = append(tw.calls, id)
		}
		// Deadlines from a few milliseconds (some expire: the clock
		// moves 1-5 ms a step) to far beyond the run.
		deadline := w.now + time.Duration(1+rng.IntN(40))*time.Millisecond
		if rng.IntN(4) == 0 {
			deadline = w.now + time.Hour
		}
		to := w.twins[rng.IntN(len(w.twins))].addr
		w.inject(tw, stack.Down, stack.Event{Type: stack.ECall, Peer: to, ID: id, Time: deadline, Msg: stack.NewMsg(bodyOf(rng, rng.IntN(80)))})
	}
}

func (w *equivWorld) deliver(f flight) {
	to, from := w.twin(f.to), w.twin(f.from)
	if to == nil || to.dead || from == nil || from.dead {
		return
	}
	// Cross over half of the time: each copy accepts the other's form.
	fa, fb := f.full, f.fast
	if w.rng.IntN(2) == 0 {
		fa, fb = f.fast, f.full
	}
	w.injectPair(to, stack.Up,
		stack.Event{Type: stack.EDeliver, Peer: f.from, Msg: stack.Received(w.rxCopy(fa))},
		stack.Event{Type: stack.EDeliver, Peer: f.from, Msg: stack.Received(w.rxCopy(fb))})
}

// rxCopy copies a datagram as a transport hands it over: with spare
// capacity behind it (so a compressed header that must be expanded is
// expanded in place), some of the time exactly sized (expanded in a copy).
func (w *equivWorld) rxCopy(b []byte) []byte {
	spare := 0
	if w.rng.IntN(4) != 0 {
		spare = stack.RxSpare
	}
	return append(make([]byte, 0, len(b)+spare), b...)
}

func bodyOf(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// distinctStacks configures every subset of the known properties and
// returns each distinct stack once.
func distinctStacks(t testing.TB) [][]stack.Spec {
	seen := map[string]bool{}
	var out [][]stack.Spec
	for mask := 0; mask < 1<<len(knownProps); mask++ {
		var want []stack.Prop
		for i, p := range knownProps {
			if mask&(1<<i) != 0 {
				want = append(want, p)
			}
		}
		ch, err := Configure(want)
		if err != nil {
			continue
		}
		var names []string
		for _, s := range ch.Specs {
			names = append(names, s.Name)
		}
		key := strings.Join(names, ",")
		if !seen[key] {
			seen[key] = true
			out = append(out, ch.Specs)
		}
	}
	return out
}

func TestBypassEquivalence(t *testing.T) {
	stacks := distinctStacks(t)
	if len(stacks) < 5 {
		t.Fatalf("only %d distinct stacks configured", len(stacks))
	}
	// The stacks with generated code (fused_gen.go) run it and, again, the
	// generic loops.
	// (A listed stack Configure does not build, such as the benchmark's
	// hand-named one, is added.)
	fused := map[string]bool{}
	have := map[string]bool{}
	for _, specs := range stacks {
		have[specNames(specs)] = true
	}
	for _, fs := range fusedStacks {
		specs := specsFor(t, fs.props, fs.named)
		fused[specNames(specs)] = true
		if !have[specNames(specs)] {
			have[specNames(specs)] = true
			stacks = append(stacks, specs)
		}
	}
	for _, specs := range stacks {
		key := specNames(specs)
		for _, v := range []struct{ fn, generic bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			if v.generic && !fused[key] {
				continue
			}
			t.Run(fmt.Sprintf("%s/functional=%v/generic=%v", key, v.fn, v.generic), func(t *testing.T) {
				for seed := range seeds(t, 1) {
					rng := rand.New(rand.NewPCG(seed, 99))
					w := newEquivWorldGeneric(t, rng, specs, 2+rng.IntN(3), v.fn, v.generic)
					for w.steps < equivSteps {
						w.step()
					}
					w.finish(equivCalm)
					hits := uint64(0)
					sum := map[string]uint64{}
					for _, tw := range w.twins {
						for _, c := range tw.b.Bypass().Counters() {
							sum[c.Name] += c.Value
							if strings.HasSuffix(c.Name, "_hits") {
								hits += c.Value
							}
						}
					}
					t.Logf("seed %d: %d events, %v", seed, w.steps, sum)
					if hits == 0 {
						t.Fatalf("seed %d: the bypass was never taken", seed)
					}
					refs := 0
					for _, tw := range w.twins {
						refs += tw.rb.refs
					}
					if refs == 0 {
						t.Fatalf("seed %d: the bypass never handed an event to the boundary by reference", seed)
					}
					// Where the request/response layer sits right under
					// the top, calls and responses take the bypass.
					if n := len(specs); n > 1 && specs[n-2].Name == "rpc" {
						for _, ty := range []stack.Type{stack.ECall, stack.EResponse, stack.ERequest, stack.EReply} {
							if w.fastRPC[ty] == 0 {
								t.Fatalf("seed %d: no %v took the bypass (%v)", seed, ty, w.fastRPC)
							}
						}
					}
					// Casts take their fast paths where the window allows:
					// down, looped back to the sender, and up at the others.
					if w.group && w.wide {
						for _, c := range []string{"cast-down_hits", "cast-up_hits"} {
							if sum[c] == 0 {
								t.Fatalf("seed %d: no %s with a cast window of 16 or more", seed, c)
							}
						}
					}
					// A flush writes out the casts gms kept compressed
					// without allocating (Deferred.AppendTo's field
					// buffer is small enough for the stack).
					flushAllocsNothing(t, fmt.Sprintf("seed %d", seed), keptCompressed(w))
					if want := fused[key] && !v.generic; (sum["fused_paths"] > 0) != want {
						t.Fatalf("seed %d: fused paths %d, want generated code %v", seed, sum["fused_paths"], want)
					}
				}
			})
		}
	}
}

// TestBypassEquivalenceTraced runs the comparison with a tracer on the
// optimized copies: the bypass then hands its exits to the boundary by
// value, through the runner, which traces them (it hands them by
// reference only untraced). Outputs must be the same either way, and the
// tracer must see every event that leaves the stack.
func TestBypassEquivalenceTraced(t *testing.T) {
	for _, fs := range fusedStacks {
		specs := specsFor(t, fs.props, fs.named)
		t.Run(specNames(specs), func(t *testing.T) {
			for seed := range seeds(t, 1) {
				rng := rand.New(rand.NewPCG(seed, 98))
				w := newEquivWorldTraced(t, rng, specs, 2+rng.IntN(3), seed%2 == 0, false, true)
				for w.steps < equivSteps/4 {
					w.step()
				}
				w.finish(equivCalm)
				hits, refs := uint64(0), 0
				for _, tw := range w.twins {
					hits += bypassHits(tw.b.Bypass())
					refs += tw.rb.refs
				}
				if hits == 0 {
					t.Fatalf("seed %d: the bypass was never taken", seed)
				}
				if refs != 0 {
					t.Fatalf("seed %d: %d exits by reference past the tracer", seed, refs)
				}
				if w.exits == 0 || w.traced != w.exits {
					t.Fatalf("seed %d: the tracer saw %d of %d exits", seed, w.traced, w.exits)
				}
			}
		})
	}
}

// TestFlushKeptCastAllocatesNothing is TestBypassEquivalence's flush
// allocation check on fixed seeds and every stack with gms, so that it
// runs in every run, on the paths with the most varying fields too (there
// it runs only in the random worlds where a cast is still kept compressed
// at the end, about a third of them).
func TestFlushKeptCastAllocatesNothing(t *testing.T) {
	checked := 0
	for _, specs := range distinctStacks(t) {
		if !slices.ContainsFunc(specs, func(s stack.Spec) bool { return s.Name == "gms" }) {
			continue
		}
		for seed := range testseed.Each(t, testseed.Range(1, 6)...) {
			checked += flushKeptCasts(t, specs, seed)
		}
	}
	if _, one := testseed.Replaying(t); checked == 0 && !one {
		t.Fatal("no world kept a cast compressed: nothing was checked")
	}
	t.Logf("%d kept casts written out", checked)
}

// flushKeptCasts runs a world of specs from seed and writes out every cast
// its members' gms keep compressed, failing if that allocates; it returns
// how many it wrote.
func flushKeptCasts(t *testing.T, specs []stack.Spec, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, 99))
	w := newEquivWorld(t, rng, specs, 2+rng.IntN(3), seed%2 == 0)
	for w.steps < equivSteps/4 {
		w.step()
	}
	kept := keptCompressed(w)
	flushAllocsNothing(t, fmt.Sprintf("%s seed %d", specNames(specs), seed), kept)
	return len(kept)
}

// flushAllocsNothing fails unless writing out each of ks, as a flush
// does, allocates nothing.
func flushAllocsNothing(t *testing.T, what string, ks []*gmsKept) {
	t.Helper()
	buf := make([]byte, 0, 4096)
	for _, k := range ks {
		if a := testing.AllocsPerRun(5, func() { buf = k.appendTo(buf[:0]) }); a != 0 {
			t.Fatalf("%s: writing out a kept compressed cast allocates %.1f times", what, a)
		}
	}
}

// keptCompressed returns the casts the members' gms keep compressed (as
// the bypass received them).
func keptCompressed(w *equivWorld) []*gmsKept {
	var out []*gmsKept
	for _, tw := range w.twins {
		for _, l := range tw.b.Layers() {
			if g, ok := l.(*Gms); ok {
				for o := range g.kept {
					for i := range g.kept[o] {
						if g.kept[o][i].def != nil {
							out = append(out, &g.kept[o][i])
						}
					}
				}
			}
		}
	}
	return out
}

func specNames(specs []stack.Spec) string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// stateDiff compares two stacks' layers field by field (unexported ones
// too), and describes the first difference. Messages compare by their
// bytes; a pt2pt retransmission entry by the bytes it would resend.
func stateDiff(a, b []stack.Layer) string {
	for i := range a {
		if d := valueDiff(reflect.ValueOf(a[i]), reflect.ValueOf(b[i]), fmt.Sprintf("%T", a[i])); d != "" {
			return d
		}
	}
	return ""
}

var (
	msgType     = reflect.TypeOf((*stack.Msg)(nil))
	p2pOutTyp   = reflect.TypeOf(p2pOut{})
	gmsKeptTyp  = reflect.TypeOf(gmsKept{})
	mnakOutsTyp = reflect.TypeOf(mnakOuts{})
)

// wire is what a retransmission of o sends (headers and payload).
func (o *p2pOut) wire() []byte {
	b := append([]byte(nil), o.headers()...)
	b = append(append(b, o.p0...), o.p1...)
	for _, m := range o.more {
		b = append(b, m...)
	}
	return b
}

func valueDiff(a, b reflect.Value, path string) string {
	if a.Kind() != b.Kind() {
		return path + ": kinds differ"
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil vs non-nil"
			}
			return ""
		}
		if a.Type() == msgType {
			ma, mb := (*stack.Msg)(a.UnsafePointer()), (*stack.Msg)(b.UnsafePointer())
			if !bytes.Equal(ma.Bytes(), mb.Bytes()) {
				return fmt.Sprintf("%s: messages differ: %x vs %x", path, ma.Bytes(), mb.Bytes())
			}
			return ""
		}
		return valueDiff(a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": nil vs non-nil"
			}
			return ""
		}
		return valueDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		if a.Type() == gmsKeptTyp && a.CanAddr() && b.CanAddr() {
			// The same bytes, split differently (a member's own cast kept
			// on the fast path as mnak's headers and the sender's
			// payload) or kept compressed (a cast received on it).
			ka, kb := (*gmsKept)(unsafe.Pointer(a.UnsafeAddr())), (*gmsKept)(unsafe.Pointer(b.UnsafeAddr()))
			wa, wb := ka.appendTo(nil), kb.appendTo(nil)
			if ka.len() != len(wa) || kb.len() != len(wb) {
				return fmt.Sprintf("%s: kept cast's length %d, %d bytes; %d, %d bytes", path, ka.len(), len(wa), kb.len(), len(wb))
			}
			if !bytes.Equal(wa, wb) {
				return fmt.Sprintf("%s: kept casts differ: %x vs %x", path, wa, wb)
			}
			return ""
		}
		if a.Type() == mnakOutsTyp && a.CanAddr() && b.CanAddr() {
			// The live entries only (the ring's other entries are zero
			// in both, and comparing them field by field made the test
			// several times slower; the arena is scratch memory).
			qa, qb := (*mnakOuts)(unsafe.Pointer(a.UnsafeAddr())), (*mnakOuts)(unsafe.Pointer(b.UnsafeAddr()))
			if qa.n != qb.n {
				return fmt.Sprintf("%s: %d vs %d casts kept", path, qa.n, qb.n)
			}
			for i := range qa.n {
				oa, ob := qa.at(i), qb.at(i)
				if !bytes.Equal(oa.hdr, ob.hdr) || !bytes.Equal(oa.body, ob.body) {
					return fmt.Sprintf("%s[%d]: kept casts differ: %x %x vs %x %x", path, i, oa.hdr, oa.body, ob.hdr, ob.body)
				}
			}
			return ""
		}
		if a.Type() == p2pOutTyp && a.CanAddr() && b.CanAddr() {
			oa, ob := (*p2pOut)(unsafe.Pointer(a.UnsafeAddr())), (*p2pOut)(unsafe.Pointer(b.UnsafeAddr()))
			if !bytes.Equal(oa.wire(), ob.wire()) || oa.deadline != ob.deadline || oa.rto != ob.rto || oa.live != ob.live || oa.sacked != ob.sacked {
				return fmt.Sprintf("%s: retransmission entries differ: %x %v %v %v %v\nvs %x %v %v %v %v", path, oa.wire(), oa.deadline, oa.rto, oa.live, oa.sacked,
					ob.wire(), ob.deadline, ob.rto, ob.live, ob.sacked)
			}
			return ""
		}
		for i := 0; i < a.NumField(); i++ {
			if name := a.Type().Field(i).Name; strings.HasPrefix(name, "memo") || name == "arena" {
				continue // a lookup cache or scratch memory, not protocol state
			}
			if d := valueDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: lengths %d vs %d", path, a.Len(), b.Len())
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if a.Kind() == reflect.Slice && !bytes.Equal(a.Bytes(), b.Bytes()) {
				return fmt.Sprintf("%s: %x vs %x", path, a.Bytes(), b.Bytes())
			}
			if a.Kind() == reflect.Slice {
				return ""
			}
		}
		for i := 0; i < a.Len(); i++ {
			if d := valueDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: sizes %d vs %d", path, a.Len(), b.Len())
		}
		it := a.MapRange()
		for it.Next() {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() {
				return fmt.Sprintf("%s: key %v missing", path, it.Key())
			}
			if d := valueDiff(it.Value(), bv, fmt.Sprintf("%s[%v]", path, it.Key())); d != "" {
				return d
			}
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return fmt.Sprintf("%s: %v vs %v", path, a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d vs %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf("%s: %d vs %d", path, a.Uint(), b.Uint())
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q vs %q", path, a.String(), b.String())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float(), b.Float())
		}
	default:
		return path + ": cannot compare " + a.Kind().String()
	}
	return ""
}

// equivSteps is the length of each random trace (events injected per run).
const equivSteps = 600

// equivSettle and equivCalm are how many rounds of settle and calm follow
// the random trace (settle, after a member was cut off: 800 ms, long
// enough for its suspicion, 300 ms, and the view change; else a tenth).
const (
	equivSettle = 80
	equivCalm   = 40
)

func vsyncSpecs(t testing.TB) []stack.Spec {
	ch, err := Configure([]stack.Prop{stack.Total, stack.Membership})
	if err != nil {
		t.Fatal(err)
	}
	return ch.Specs
}

// warmWorld is a 3-member total-order group after a short random run, so
// that fuzzed datagrams meet the state of a group in use.
func warmWorld(t testing.TB, seed uint64) *equivWorld {
	w := newEquivWorld(t, rand.New(rand.NewPCG(seed, 7)), vsyncSpecs(t), 3, false)
	for w.steps < 150 {
		w.step()
	}
	return w
}

// FuzzBypassDatagram feeds arbitrary datagrams (compressed or full
// format, or garbage) from a member to the full stack and to the
// optimized one: no panic, and both react identically (outputs, wire
// bytes after decompression, layer states).
func FuzzBypassDatagram(f *testing.F) {
	w := warmWorld(f, 1)
	for _, fl := range w.net {
		f.Add(fl.fast, fl.full)
	}
	f.Add([]byte{'C', 1, 0, 0, 0, 0}, []byte{'C', 1, 0xff, 0xff, 0xff, 0xff, 0x80})
	f.Fuzz(func(t *testing.T, d1, d2 []byte) {
		w := warmWorld(t, 1)
		to, from := w.twins[0], w.twins[1]
		for _, d := range [][]byte{d1, d2, d1} {
			w.injectPair(to, stack.Up,
				stack.Event{Type: stack.EDeliver, Peer: from.addr, Msg: stack.Received(bytes.Clone(d))},
				stack.Event{Type: stack.EDeliver, Peer: from.addr, Msg: stack.Received(bytes.Clone(d))})
		}
	})
}

// FuzzBypassTrace drives the lockstep comparison with traces chosen by
// the fuzzer (the input seeds the trace and picks the stack).
func FuzzBypassTrace(f *testing.F) {
	stacks := distinctStacks(f)
	f.Add(uint64(1), uint8(0), uint8(3))
	f.Add(uint64(7), uint8(len(stacks)-1), uint8(5))
	f.Fuzz(func(t *testing.T, seed uint64, which, n uint8) {
		specs := stacks[int(which)%len(stacks)]
		rng := rand.New(rand.NewPCG(seed, 3))
		w := newEquivWorld(t, rng, specs, 2+int(n)%4, seed%2 == 0)
		for w.steps < 300 {
			w.step()
		}
		// As in TestBypassEquivalence (calm rounds fewer), so that the
		// cast fast paths run on the states the trace left.
		w.finish(10)
	})
}
