package layers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"strata/stack"
)

type viewKey struct {
	id uint64
	by stack.Addr
}

func keyOf(v *stack.View) viewKey { return viewKey{v.ID, v.By} }

// vsyncLog is what one process saw: views and deliveries, in order.
type vsyncLog struct {
	views  []*stack.View
	in     map[viewKey][][]byte // view -> deliveries in that view, in order
	viewID viewKey
	dead   bool
	exited bool // EExit: it left the group
}

func (l *vsyncLog) deliver(b []byte) {
	if !l.dead {
		l.in[l.viewID] = append(l.in[l.viewID], bytes.Clone(b))
	}
}

func (l *vsyncLog) view(v *stack.View) {
	if !l.dead {
		l.views = append(l.views, v)
		l.viewID = keyOf(v)
	}
}

// watchVsync records what the node at a delivers and the views it
// installs (after initial, if not nil) in a new log.
func watchVsync(a stack.Addr, nd *stack.Node, initial *stack.View) *vsyncLog {
	l := &vsyncLog{in: map[viewKey][][]byte{}}
	if initial != nil {
		l.view(initial)
	}
	nd.OnDeliver(func(_ stack.Addr, b []byte) { l.deliver(b) })
	nd.OnEvent(func(ev stack.Event) {
		switch {
		case ev.Type == stack.EView && ev.View.Rank(a) >= 0:
			l.view(ev.View)
		case ev.Type == stack.EExit:
			// (A leaver's last EView, the view it is not in, is not
			// one it moved to.)
			l.exited = true
		}
	})
	return l
}

func (l *vsyncLog) current() *stack.View {
	if len(l.views) == 0 {
		return nil
	}
	return l.views[len(l.views)-1]
}

// vsyncRun: a group of 3-5 members on a faulty simulated network casts
// random messages (total order); one member crashes or is partitioned away
// (sometimes the coordinator), up to two others leave politely (at once or
// apart, the coordinator too), a new process joins through a random
// member, casts go on.
// Checks: members that install a view ID agree on its members; members
// that move together from one view to the next delivered the same casts in
// the same order in it; no cast is delivered twice; every leaver is let
// out (EExit); every surviving member ends in the same view (the
// survivors and the joiner) and delivers a burst of casts made there, far
// larger than the cast window (flow control kept its credit through the
// churn).
func vsyncRun(t *testing.T, seed uint64, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 11))
	n := 3 + rng.IntN(3)
	members := simMembers(n)
	cfg := stack.Config{Members: members, Heartbeat: 10 * time.Millisecond, SuspectAfter: 500 * time.Millisecond, CastWindow: 1 + rng.IntN(8),
		StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond, RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond}
	c := newCluster(t, seed, n, "Total,Membership", cfg, opts)
	faults := randomFaults(rng)
	faults.Loss /= 3
	c.net.SetDefault(faults)
	logs := map[stack.Addr]*vsyncLog{}
	watch := func(a stack.Addr, nd *stack.Node, initial *stack.View) { logs[a] = watchVsync(a, nd, initial) }
	for _, a := range members {
		watch(a, c.nodes[a], &stack.View{ID: 1, Members: members})
	}
	live := slices.Clone(members)
	counter := 0
	castFrom := func(a stack.Addr) {
		counter++
		b := []byte(fmt.Sprintf("%s#%d#%d", a, counter, rng.IntN(1000)))
		c.nodes[a].Cast(b)
	}
	crashAt, joinAt := 5+rng.IntN(20), 10+rng.IntN(20)
	victim := members[rng.IntN(n)]
	partition := rng.IntN(2) == 0
	joiner := stack.Addr("sim:j")
	// Up to two members other than the victim leave politely (the
	// coordinator among them, sometimes), at the same step or apart; one
	// member, besides the victim, always stays.
	leaveAt := map[stack.Addr]int{}
	others := slices.DeleteFunc(slices.Clone(members), func(a stack.Addr) bool { return a == victim })
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	at := rng.IntN(40)
	for _, a := range others[:min(rng.IntN(3), len(others)-1)] {
		if rng.IntN(2) == 0 {
			at = rng.IntN(40)
		}
		leaveAt[a] = at
	}
	defer func() {
		t.Logf("run: %d members, victim %s at step %d (partition %v), join at step %d, leaves %v; net %+v", n, victim, crashAt, partition, joinAt, leaveAt, c.net.Stats())
	}()
	for step := 0; step < 40; step++ {
		castFrom(live[rng.IntN(len(live))])
		c.net.Run(time.Duration(rng.IntN(6)) * time.Millisecond)
		for a, at := range leaveAt {
			if at == step {
				if err := c.nodes[a].Leave(); err != nil {
					return fmt.Errorf("%s: leave: %w", a, err)
				}
				live = slices.DeleteFunc(live, func(b stack.Addr) bool { return b == a })
			}
		}
		if step == crashAt {
			if partition {
				// The victim stays up but is cut off: it goes on alone
				// in views of its own until the partition heals and the
				// two sides merge.
				var rest []stack.Addr
				for a := range c.nodes {
					if a != victim {
						rest = append(rest, a)
					}
				}
				if !slices.Contains(rest, joiner) {
					rest = append(rest, joiner)
				}
				c.net.Partition([]stack.Addr{victim}, rest)
			} else {
				c.net.Crash(victim)
				c.nodes[victim].Close()
				logs[victim].dead = true
			}
			live = slices.DeleteFunc(live, func(a stack.Addr) bool { return a == victim })
		}
		if step == joinAt {
			tr, err := c.net.Endpoint(joiner)
			if err != nil {
				return err
			}
			jc := cfg
			// The contact is a member that will not crash (a joiner whose
			// only contact died would wait for ever).
			// Nor one that leaves.
			contacts := slices.DeleteFunc(slices.Clone(live), func(a stack.Addr) bool { _, leaves := leaveAt[a]; return a == victim || leaves })
			jc.Local, jc.Members, jc.Contact = joiner, nil, contacts[rng.IntN(len(contacts))]
			jc.Epoch = uint64(c.net.Now()) + 1
			nd := stack.NewNode(tr, c.net.Clock(), Build(c.specs, jc), opts)
			c.nodes[joiner] = nd
			watch(joiner, nd, nil)
			live = append(live, joiner)
		}
	}
	// Settle: every live process in one view of exactly the live ones,
	// and every leaver out.
	settled := func() bool {
		for a := range leaveAt {
			if !logs[a].exited {
				return false
			}
		}
		var v *stack.View
		for _, a := range live {
			cur := logs[a].current()
			if cur == nil || (v != nil && keyOf(cur) != keyOf(v)) {
				return false
			}
			v = cur
		}
		got := slices.Clone(v.Members)
		want := slices.Clone(live)
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(got, want)
	}
	if !c.net.RunUntil(settled, 5*time.Minute) {
		for _, a := range live {
			t.Logf("%s: views %v; counters %v", a, viewIDs(logs[a]), c.nodes[a].Counters())
		}
		return fmt.Errorf("the live processes %v never settled in one view of themselves", live)
	}
	// A burst from every survivor, far beyond the cast window: flow
	// control must not have lost credit over the churn.
	if partition {
		// Heal: the victim's side merges back; everyone ends in one view.
		c.net.Heal()
		live = append(live, victim)
		if !c.net.RunUntil(settled, 5*time.Minute) {
			for _, a := range live {
				t.Logf("%s: views %v; counters %v", a, viewList(logs[a]), c.nodes[a].Counters())
			}
			return fmt.Errorf("after the partition healed, %v never merged into one view", live)
		}
	}
	final := keyOf(logs[live[0]].current())
	const burst = 25
	for range burst {
		for _, a := range live {
			castFrom(a)
		}
	}
	allFinal := func() bool {
		for _, a := range live {
			if len(logs[a].in[final]) < burst*len(live) {
				return false
			}
		}
		return true
	}
	if !c.net.RunUntil(allFinal, 5*time.Minute) {
		for _, a := range live {
			t.Logf("%s: views %v, %d in final; counters %v", a, viewIDs(logs[a]), len(logs[a].in[final]), c.nodes[a].Counters())
		}
		return fmt.Errorf("casts in the final view %v were not all delivered", final)
	}
	c.net.Run(2 * time.Second)
	for _, a := range live {
		// Sync held every cast made during a view change (gms never had to
		// refuse one) and holds none once the group is settled.
		if v, ok := layerCounter(c.nodes[a], "gms", "casts_refused"); !ok || v != 0 {
			return fmt.Errorf("%s: gms refused %d casts (counter found: %v)", a, v, ok)
		}
		if v, ok := layerCounter(c.nodes[a], "sync", "holding"); !ok || v != 0 {
			return fmt.Errorf("%s: sync still holds %d casts (counter found: %v)", a, v, ok)
		}
	}
	return checkVsync(logs)
}

// layerCounter is a node's counter name of layer, if it has it.
func layerCounter(n *stack.Node, layer, name string) (uint64, bool) {
	for _, lc := range n.Counters() {
		if lc.Layer != layer {
			continue
		}
		for _, ctr := range lc.Counters {
			if ctr.Name == name {
				return ctr.Value, true
			}
		}
	}
	return 0, false
}

func viewList(l *vsyncLog) []string {
	var out []string
	for _, v := range l.views {
		out = append(out, fmt.Sprint(v.ID, v.By, v.Members))
	}
	return out
}

func viewIDs(l *vsyncLog) []uint64 {
	var out []uint64
	for _, v := range l.views {
		out = append(out, v.ID)
	}
	return out
}

func checkVsync(logs map[stack.Addr]*vsyncLog) error {
	byID := map[viewKey]*stack.View{}
	seen := map[stack.Addr]map[string]bool{}
	for a, l := range logs {
		seen[a] = map[string]bool{}
		for _, v := range l.views {
			if w, ok := byID[keyOf(v)]; ok && !slices.Equal(w.Members, v.Members) {
				return fmt.Errorf("view %v: %v at one process, %v at %s", keyOf(v), w.Members, v.Members, a)
			}
			byID[keyOf(v)] = v
		}
		for _, ds := range l.in {
			for _, d := range ds {
				if seen[a][string(d)] {
					return fmt.Errorf("%s delivered %q twice", a, d)
				}
				seen[a][string(d)] = true
			}
		}
	}
	// Members moving together from view v to the same next view delivered
	// the same sequence in v.
	next := func(l *vsyncLog, k viewKey) viewKey {
		for i, v := range l.views {
			if keyOf(v) == k && i+1 < len(l.views) {
				return keyOf(l.views[i+1])
			}
		}
		return viewKey{}
	}
	for a, la := range logs {
		for b, lb := range logs {
			if a >= b {
				continue
			}
			for _, v := range la.views {
				na, nb := next(la, keyOf(v)), next(lb, keyOf(v))
				if na == (viewKey{}) || na != nb {
					continue
				}
				da, db := la.in[keyOf(v)], lb.in[keyOf(v)]
				if len(da) != len(db) {
					return fmt.Errorf("%s and %s moved together from view %v to %v but delivered %d and %d casts in it:\n%q\n%q\nviews %v / %v", a, b, keyOf(v), na, len(da), len(db), da, db, viewList(la), viewList(lb))
				}
				for i := range da {
					if !bytes.Equal(da[i], db[i]) {
						return fmt.Errorf("%s and %s moved together from view %v to %v but their delivery %d in it differs: %q vs %q", a, b, keyOf(v), na, i, da[i], db[i])
					}
				}
			}
		}
	}
	return nil
}

// TestVirtualSynchrony runs vsyncRun on many seeds, in both compositions.
func TestVirtualSynchrony(t *testing.T) {
	for seed := range seeds(t, 8) {
		for _, functional := range []bool{false, true} {
			if err := vsyncRun(t, seed, stack.NodeOptions{Imperative: !functional}); err != nil {
				t.Fatalf("seed %d functional=%v: %v", seed, functional, err)
			}
		}
	}
}

// TestTotalOrderAfterJoins: a group grown by joins (one through a member
// that is not the coordinator) delivers the same sequence everywhere.
func TestTotalOrderAfterJoins(t *testing.T) {
	for seed := range seeds(t, 5) {
		for _, functional := range []bool{false, true} {
			if err := joinsRun(t, seed, stack.NodeOptions{Imperative: !functional}); err != nil {
				t.Fatalf("seed %d functional=%v: %v", seed, functional, err)
			}
		}
	}
}

func joinsRun(t *testing.T, seed uint64, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 13))
	c := newCluster(t, seed, 0, "Total,Membership", stack.Config{}, opts)
	c.net.SetDefault(randomFaults(rng))
	addrs := simMembers(3)
	logs := map[stack.Addr]*vsyncLog{}
	for i, a := range addrs {
		tr, err := c.net.Endpoint(a)
		if err != nil {
			return err
		}
		cfg := stack.Config{Local: a, Epoch: 1, Group: "g", Heartbeat: 10 * time.Millisecond, SuspectAfter: time.Second,
			StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond, RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond}
		if i > 0 {
			cfg.Contact = addrs[i-1]
		}
		nd := stack.NewNode(tr, c.net.Clock(), Build(c.specs, cfg), opts)
		c.nodes[a] = nd
		logs[a] = watchVsync(a, nd, nil)
	}
	if !c.net.RunUntil(func() bool {
		for _, a := range addrs {
			if v := logs[a].current(); v == nil || len(v.Members) != 3 {
				return false
			}
		}
		return true
	}, time.Minute) {
		return fmt.Errorf("the three never formed one view")
	}
	final := keyOf(logs[addrs[0]].current())
	const per = 20
	for i := 0; i < per; i++ {
		for k, a := range addrs {
			c.nodes[a].Cast([]byte(fmt.Sprintf("%d-%d", k, i)))
		}
		c.net.Run(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
	if !c.net.RunUntil(func() bool {
		for _, a := range addrs {
			if len(logs[a].in[final]) < 3*per {
				return false
			}
		}
		return true
	}, time.Minute) {
		return fmt.Errorf("casts not all delivered")
	}
	for _, a := range addrs[1:] {
		if !slices.EqualFunc(logs[a].in[final], logs[addrs[0]].in[final], bytes.Equal) {
			return fmt.Errorf("%s's order differs from %s's:\n%q\n%q", a, addrs[0], logs[a].in[final], logs[addrs[0]].in[final])
		}
	}
	return nil
}

// TestLeavesWhileJoinPending: the coordinator of a group of two admits a
// joiner; its other member either leaves as well or has crashed. The
// coordinator lets the joiner in (and the other member out) before it goes
// itself: a view change with nobody staying to answer its flush would
// never end. The joiner ends alone in a view of its own, the leavers out.
func TestLeavesWhileJoinPending(t *testing.T) {
	for _, crash := range []bool{false, true} {
		for _, functional := range []bool{false, true} {
			leavesWhileJoinPending(t, crash, functional)
		}
	}
}

func leavesWhileJoinPending(t *testing.T, crash, functional bool) {
	members := simMembers(2)
	cfg := stack.Config{Members: members, Heartbeat: 10 * time.Millisecond, SuspectAfter: 500 * time.Millisecond, CastWindow: 8,
		StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond, RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond}
	opts := stack.NodeOptions{Imperative: !functional}
	c := newCluster(t, 1, 2, "Total,Membership", cfg, opts)
	exited := map[stack.Addr]bool{}
	var last *stack.View
	joiner := stack.Addr("sim:j")
	watch := func(a stack.Addr, nd *stack.Node) {
		nd.OnEvent(func(ev stack.Event) {
			switch ev.Type {
			case stack.EExit:
				exited[a] = true
			case stack.EView:
				if a == joiner {
					last = ev.View
				}
			}
		})
	}
	for _, a := range members {
		watch(a, c.nodes[a])
	}
	coord, other := members[0], members[1]
	g := func() *Gms {
		for _, l := range c.nodes[coord].Layers() {
			if g, ok := l.(*Gms); ok {
				return g
			}
		}
		t.Fatal("no gms")
		return nil
	}()
	if crash {
		c.net.Crash(other)
		c.nodes[other].Close()
	}
	tr, err := c.net.Endpoint(joiner)
	if err != nil {
		t.Fatal(err)
	}
	jc := cfg
	jc.Local, jc.Members, jc.Contact, jc.Epoch = joiner, nil, coord, uint64(c.net.Now())+1
	watch(joiner, stack.NewNode(tr, c.net.Clock(), Build(c.specs, jc), opts))
	if !c.net.RunUntil(func() bool { return g.joins[joiner] }, time.Minute) {
		t.Fatal("the coordinator never heard the joiner")
	}
	// (The crashed member holds the change up until it is suspected;
	// then nobody but the leaving coordinator is left to stay.)
	leavers := []stack.Addr{coord}
	if !crash {
		leavers = append(leavers, other)
	}
	for _, a := range leavers {
		if err := c.nodes[a].Leave(); err != nil {
			t.Fatal(err)
		}
	}
	done := func() bool {
		for _, a := range leavers {
			if !exited[a] {
				return false
			}
		}
		return last != nil && slices.Equal(last.Members, []stack.Addr{joiner})
	}
	if !c.net.RunUntil(done, time.Minute) {
		t.Fatalf("crash=%v functional=%v: exited %v, the joiner's last view %v", crash, functional, exited, last)
	}
}
