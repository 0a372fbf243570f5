package group

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"strata/stack"
)

func opts(contact stack.Addr) Options {
	return Options{Contact: string(contact), Heartbeat: 20 * time.Millisecond, SuspectAfter: 600 * time.Millisecond}
}

// next returns the next event of kind k, skipping others (collecting
// messages into msgs if non-nil).
func next(t *testing.T, m *Member, k Kind, msgs *[]string) Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-m.Events():
			if !ok {
				t.Fatalf("%s: events closed while waiting for kind %d", m.Addr(), k)
			}
			if ev.Kind == Message && msgs != nil {
				*msgs = append(*msgs, string(ev.Body))
			}
			if ev.Kind == k {
				return ev
			}
		case <-timeout:
			t.Fatalf("%s: no event of kind %d", m.Addr(), k)
		}
	}
}

func waitView(t *testing.T, m *Member, size int) *stack.View {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v := next(t, m, View, nil).View
		if len(v.Members) == size {
			return v
		}
	}
	t.Fatalf("%s: no view of %d members within 30 s", m.Addr(), size)
	return nil
}

// Three processes on real UDP sockets join one group, cast concurrently
// and deliver the same sequence; one leaves, one crashes, and the last sees
// views without them.
func TestGroupOverUDP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := Join(ctx, "chat", opts(""))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Join(ctx, "chat", opts(a.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := Join(ctx, "chat", opts(b.Addr())) // through a non-coordinator
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	members := []*Member{a, b, c}
	var v *stack.View
	for _, m := range members {
		v = waitView(t, m, 3)
	}
	if got := v.Members; !slices.Equal(got, []stack.Addr{a.Addr(), b.Addr(), c.Addr()}) {
		t.Fatalf("view %v", got)
	}
	// A process that names another group is not let in.
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if s, err := Join(sctx, "other", Options{Contact: string(a.Addr())}); err == nil {
		s.Close()
		t.Fatal("a process joined group \"chat\" under another name")
	}
	scancel()

	const per = 30
	for i := 0; i < per; i++ {
		for k, m := range members {
			if err := m.Cast([]byte(fmt.Sprintf("%d-%d", k, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	seqs := make([][]string, 3)
	for k, m := range members {
		for len(seqs[k]) < 3*per {
			ev := next(t, m, Message, nil)
			seqs[k] = append(seqs[k], string(ev.Body))
		}
	}
	for k := 1; k < 3; k++ {
		if !slices.Equal(seqs[k], seqs[0]) {
			t.Fatalf("member %d delivered another order:\n%v\n%v", k, seqs[k], seqs[0])
		}
	}

	// c leaves; a and b see a view of two.
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Member{a, b} {
		waitView(t, m, 2)
	}
	// b crashes; a is left alone.
	b.Close()
	if v := waitView(t, a, 1); v.Members[0] != a.Addr() {
		t.Fatalf("last view %v", v.Members)
	}
	if err := a.Cast([]byte("alone")); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a, Message, nil); string(ev.Body) != "alone" {
		t.Fatalf("got %q", ev.Body)
	}
}

// With every CPU saturated by busy goroutines for the whole suspicion
// window, no member is suspected: heartbeats still go out and arrive in
// time (each member's stack runs on its own goroutines, which the Go
// scheduler preempts the spinners for).
func TestNoFalseSuspicionUnderCPULoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := Options{Heartbeat: 50 * time.Millisecond, SuspectAfter: time.Second}
	a, err := Join(ctx, "load", o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	o.Contact = string(a.Addr())
	var ms []*Member
	for range 2 {
		m, err := Join(ctx, "load", o)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms = append(ms, m)
	}
	all := append([]*Member{a}, ms...)
	for _, m := range all {
		waitView(t, m, 3)
	}
	before := a.View().ID
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					x += i
				}
			}
		}()
	}
	time.Sleep(3 * o.SuspectAfter)
	close(stop)
	wg.Wait()
	for _, m := range all {
		if v := m.View(); v.ID != before || len(v.Members) != 3 {
			t.Fatalf("%s: view %d %v after the load, was %d with all three: a member was suspected", m.Addr(), v.ID, v.Members, before)
		}
	}
}

// Every member leaves at once, the coordinator included: each Leave
// returns. (A member whose leave request was on its way to a coordinator
// that left meanwhile takes over as coordinator and must then complete
// its own leave.)
func TestEveryoneLeavesAtOnce(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var ms []*Member
			for i := range n {
				contact := stack.Addr("")
				if i > 0 {
					contact = ms[0].Addr()
				}
				m, err := Join(ctx, "bye", opts(contact))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				ms = append(ms, m)
			}
			for _, m := range ms {
				waitView(t, m, n)
			}
			errs := make(chan error, n)
			for _, m := range ms {
				go func() { errs <- m.Leave(ctx) }()
			}
			for range ms {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A member asks to leave just as its coordinator crashes: it suspects the
// coordinator, takes over, and completes its own leave.
func TestLeaveAfterCoordinatorCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := Join(ctx, "bye", opts(""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Join(ctx, "bye", opts(a.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitView(t, b, 2)
	a.Close()
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
}

// Timings the failure detector cannot work with are refused up front.
func TestJoinBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Heartbeat: -time.Second},
		{SuspectAfter: -time.Second},
		{Heartbeat: time.Second, SuspectAfter: 1500 * time.Millisecond},
		{SuspectAfter: 150 * time.Millisecond}, // under two default heartbeats
	} {
		if m, err := Join(context.Background(), "g", o); !errors.Is(err, ErrBadOptions) {
			if m != nil {
				m.Close()
			}
			t.Errorf("%+v: %v, want ErrBadOptions", o, err)
		}
	}
}
