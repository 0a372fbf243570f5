package layers

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/sim"
)

// aloneLog is what one process of aloneRun delivered: every cast, with the
// view it was delivered in, in order.
type aloneLog struct {
	views []*stack.View
	casts []aloneCast
}

type aloneCast struct {
	view   viewKey
	origin string
	n      int
}

// aloneRun: a process starts a group alone, the way the first member of
// any group does (no Config.Members, no contact: a view of itself), and
// casts many cast windows' worth; every cast must come back to it once,
// in order, and flow control must let it go on (before stability counted
// a view of one, the window never reopened: the process stalled for good
// after CastWindow casts). Then a second process joins through it, on a
// faulty network, while the founder keeps casting, and both cast in the
// view of two. Checks: the founder delivers each of its casts exactly once
// and in order, all of them; in the view of two both deliver every cast
// of both, FIFO per origin (and in one order with total order); no
// stranger's casts at mnak; virtual synchrony between the two. Then the
// second process goes (leaves, or crashes) while the founder has a backlog
// of several windows, and the founder, alone again, delivers all its
// casts in order.
func aloneRun(t *testing.T, seed uint64, props string, window int, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 17))
	net := sim.New(seed)
	specs := specsFor(t, props, "")
	base := stack.Config{Group: "g", CastWindow: window, Heartbeat: 10 * time.Millisecond, SuspectAfter: time.Second,
		StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond, RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond}
	a, b := stack.Addr("sim:a"), stack.Addr("sim:b")
	nodes := map[stack.Addr]*stack.Node{}
	logs := map[stack.Addr]*aloneLog{}
	vlogs := map[stack.Addr]*vsyncLog{}
	start := func(self, contact stack.Addr, epoch uint64) error {
		tr, err := net.Endpoint(self)
		if err != nil {
			return err
		}
		cfg := base
		cfg.Local, cfg.Contact, cfg.Epoch = self, contact, epoch
		nd := stack.NewNode(tr, net.Clock(), Build(specs, cfg), opts)
		l, vl := &aloneLog{}, &vsyncLog{in: map[viewKey][][]byte{}}
		if contact == "" {
			initial := &stack.View{ID: 1, Members: []stack.Addr{self}}
			l.views = append(l.views, initial)
			vl.view(initial)
		}
		nd.OnDeliver(func(_ stack.Addr, body []byte) {
			vl.deliver(body)
			origin, num, _ := strings.Cut(string(body), "#")
			k, _ := strconv.Atoi(num)
			var in viewKey
			if len(l.views) > 0 {
				in = keyOf(l.views[len(l.views)-1])
			}
			l.casts = append(l.casts, aloneCast{in, origin, k})
		})
		nd.OnEvent(func(ev stack.Event) {
			if ev.Type == stack.EView && ev.View.Rank(self) >= 0 {
				vl.view(ev.View)
				l.views = append(l.views, ev.View)
			}
		})
		nodes[self], logs[self], vlogs[self] = nd, l, vl
		return nil
	}
	made := map[stack.Addr]int{}
	cast := func(from stack.Addr) error {
		made[from]++
		return nodes[from].Cast([]byte(fmt.Sprintf("%s#%d", from, made[from])))
	}
	count := func(at, origin stack.Addr, in viewKey) int {
		n := 0
		for _, c := range logs[at].casts {
			if c.origin == string(origin) && (in == (viewKey{}) || c.view == in) {
				n++
			}
		}
		return n
	}
	dump := func() {
		for _, x := range []stack.Addr{a, b} {
			if nodes[x] != nil {
				t.Logf("%s: made %d, delivered %d, views %v; counters %v", x, made[x], len(logs[x].casts), viewList(vlogs[x]), nodes[x].Counters())
			}
		}
	}

	// Alone: many windows' worth, cast in bursts as an application would.
	if err := start(a, "", 1); err != nil {
		return err
	}
	alone := 10*window + rng.IntN(window)
	for made[a] < alone {
		for range min(1+rng.IntN(2*window), alone-made[a]) {
			if err := cast(a); err != nil {
				return err
			}
		}
		net.Run(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
	if !net.RunUntil(func() bool { return count(a, a, viewKey{}) == alone }, time.Minute) {
		dump()
		return fmt.Errorf("alone in its view, %s delivered %d of its %d casts (cast window %d)", a, count(a, a, viewKey{}), alone, window)
	}

	// A second process joins through it on a faulty network while the
	// founder keeps casting (sync holds the casts made during the flush
	// for the next view).
	faults := randomFaults(rng)
	faults.Loss /= 3
	net.SetDefault(faults)
	if err := start(b, a, uint64(net.Now())+1); err != nil {
		return err
	}
	for range 2 * window {
		if err := cast(a); err != nil {
			return err
		}
		net.Run(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
	both := func() bool {
		for _, x := range []stack.Addr{a, b} {
			if v := vlogs[x].current(); v == nil || len(v.Members) != 2 {
				return false
			}
		}
		return keyOf(vlogs[a].current()) == keyOf(vlogs[b].current())
	}
	if !net.RunUntil(both, time.Minute) {
		dump()
		return fmt.Errorf("%s never joined %s's group", b, a)
	}
	final := keyOf(vlogs[a].current())
	atJoin := map[stack.Addr]int{a: made[a], b: made[b]}
	per := 5*window + rng.IntN(window)
	for range per {
		for _, x := range []stack.Addr{a, b} {
			if err := cast(x); err != nil {
				return err
			}
		}
		net.Run(time.Duration(rng.IntN(2)) * time.Millisecond)
	}
	done := func() bool {
		for _, x := range []stack.Addr{a, b} {
			// Every cast of b, and at least the founder's casts made
			// since the view of two.
			if count(x, b, final) != made[b] || count(x, a, final) < made[a]-atJoin[a] {
				return false
			}
		}
		return count(a, a, viewKey{}) == made[a]
	}
	if !net.RunUntil(done, 5*time.Minute) {
		dump()
		return fmt.Errorf("in the view of two, casts were not all delivered")
	}
	net.Run(2 * time.Second)

	// Each process delivered each of its own casts once, in order, and
	// in the view of two the other's casts in order, all of b's.
	for _, x := range []stack.Addr{a, b} {
		last := map[string]int{}
		for _, c := range logs[x].casts {
			switch {
			case c.origin == string(x):
				if c.n != last[c.origin]+1 {
					return fmt.Errorf("%s delivered its own cast %d where %d was due (view %v)", x, c.n, last[c.origin]+1, c.view)
				}
			case c.view == final:
				// The founder's casts of the view of one never reach b.
				if last[c.origin] != 0 && c.n != last[c.origin]+1 {
					return fmt.Errorf("%s delivered %s's cast %d where %d was due", x, c.origin, c.n, last[c.origin]+1)
				}
			default:
				return fmt.Errorf("%s delivered %s's cast %d in view %v, not in the view of two", x, c.origin, c.n, c.view)
			}
			last[c.origin] = c.n
		}
		for _, o := range []stack.Addr{a, b} {
			if last[string(o)] != made[o] {
				return fmt.Errorf("%s delivered %s's casts up to %d of %d", x, o, last[string(o)], made[o])
			}
		}
		if v, ok := layerCounter(nodes[x], "mnak", "from_strangers"); !ok || v != 0 {
			return fmt.Errorf("%s: mnak took %d casts for a stranger's (counter found: %v)", x, v, ok)
		}
		if v, ok := layerCounter(nodes[x], "mflow", "outstanding"); !ok || v != 0 {
			return fmt.Errorf("%s: %d own casts still outstanding at mflow once everything settled (counter found: %v)", x, v, ok)
		}
	}
	// In the view of two both delivered the same casts of each origin
	// (and, with total order, in one order).
	fa, fb := vlogs[a].in[final], vlogs[b].in[final]
	if len(fa) != len(fb) {
		return fmt.Errorf("in the view of two %s delivered %d casts, %s %d", a, len(fa), b, len(fb))
	}
	if strings.Contains(props, "Total") {
		for i := range fa {
			if string(fa[i]) != string(fb[i]) {
				return fmt.Errorf("delivery %d in the view of two: %q at %s, %q at %s", i, fa[i], a, fb[i], b)
			}
		}
	}
	if err := checkVsync(vlogs); err != nil {
		return err
	}

	// b goes (it leaves, or crashes and is suspected) while the founder
	// has a backlog of several windows at flow control: alone again, the
	// founder sends the backlog and goes on, its casts still in order.
	crash := rng.IntN(2) == 0
	if crash {
		net.Crash(b)
		nodes[b].Close()
	} else if err := nodes[b].Leave(); err != nil {
		return err
	}
	for range 3*window + rng.IntN(window) {
		if err := cast(a); err != nil {
			return err
		}
	}
	if !net.RunUntil(func() bool { v := vlogs[a].current(); return len(v.Members) == 1 }, time.Minute) {
		dump()
		return fmt.Errorf("%s never got a view of itself after %s went (crash %v)", a, b, crash)
	}
	for range 3 * window {
		if err := cast(a); err != nil {
			return err
		}
		net.Run(time.Duration(rng.IntN(2)) * time.Millisecond)
	}
	if !net.RunUntil(func() bool { return count(a, a, viewKey{}) >= made[a] }, time.Minute) {
		dump()
		return fmt.Errorf("alone again, %s delivered %d of its %d casts", a, count(a, a, viewKey{}), made[a])
	}
	net.Run(2 * time.Second)
	k := 0
	for _, c := range logs[a].casts {
		if c.origin == string(a) {
			if k++; c.n != k {
				return fmt.Errorf("alone again, %s delivered its own cast %d where %d was due (view %v)", a, c.n, k, c.view)
			}
		}
	}
	if k != made[a] {
		return fmt.Errorf("alone again, %s delivered %d of its %d casts", a, k, made[a])
	}
	if v, ok := layerCounter(nodes[a], "mflow", "outstanding"); !ok || v != 0 {
		return fmt.Errorf("%s alone again: %d own casts still outstanding at mflow once everything settled (counter found: %v)", a, v, ok)
	}
	return nil
}

// TestGroupOfOne: a process that starts a group alone casts far past its
// cast window and gets every cast back once, in order, then grows the
// group by a join and goes on; for the benchmark's stack and for total
// order, both compositions, with and without the bypass, with a narrow
// cast window and with 256 casts (the default when the stall was found).
func TestGroupOfOne(t *testing.T) {
	for seed := range seeds(t, 4) {
		for _, props := range []string{"Membership", "Total,Membership"} {
			for _, opts := range []stack.NodeOptions{{}, {Imperative: true}, {NoBypass: true}} {
				for _, w := range []int{1 + int(seed%8), 256} {
					if err := aloneRun(t, seed, props, w, opts); err != nil {
						t.Fatalf("seed %d %s opts %+v window %d: %v", seed, props, opts, w, err)
					}
				}
			}
		}
	}
}
