// Package group is the application's interface to process groups: join a
// group over a real transport, multicast to it, and receive its messages
// and views, through a stack with membership, virtual synchrony and total
// order (stack/layers: Total, Membership).
//
// Guarantees are the stack's: members that install the same view see the
// same members; members that move together from a view to the next
// delivered the same messages in it, in the same order (total order); a
// member's own casts are delivered to it too. Assumes a failed member
// stays failed for longer than Options.SuspectAfter; a live member
// suspected by mistake is left out of the group (it keeps a view of its
// own; partitions are not merged).
package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// ErrLeft is returned by calls on a member that has left or closed.
var ErrLeft = errors.New("group: member has left")

// Options configure Join.
type Options struct {
	Listen       string        // transport address, e.g. "udp:127.0.0.1:0" (the default)
	Contact      string        // a member to join through; "" starts the group
	Props        string        // stack properties; default "Total,Membership"
	Heartbeat    time.Duration // default 100 ms
	SuspectAfter time.Duration // default 2 s; at least two heartbeats
	// Transport are the options of the member's transport (e.g. Wrap, to
	// emulate a wide-area network).
	Transport transport.Options
}

// ErrBadOptions is returned by Join for options no group can run with.
var ErrBadOptions = errors.New("group: bad options")

// check refuses timings the failure detector cannot work with: a negative
// one, or a suspicion window shorter than two heartbeats (every member
// would be suspected between heartbeats that arrive on time).
func (o Options) check() error {
	if o.Heartbeat < 0 || o.SuspectAfter < 0 {
		return fmt.Errorf("%w: heartbeat %v and suspicion window %v must not be negative", ErrBadOptions, o.Heartbeat, o.SuspectAfter)
	}
	d := stack.Config{Heartbeat: o.Heartbeat, SuspectAfter: o.SuspectAfter}.WithDefaults()
	if d.SuspectAfter < 2*d.Heartbeat {
		return fmt.Errorf("%w: a suspicion window of %v is shorter than two heartbeats (%v each)", ErrBadOptions, d.SuspectAfter, d.Heartbeat)
	}
	return nil
}

// Kind is what an Event reports.
type Kind int

// Event kinds.
const (
	Message Kind = iota + 1 // a cast (or a point-to-point message) From a member
	View                    // a new view
	Block                   // a view change started: casts wait until the next view
	Exit                    // this member left the group
)

// Event is one delivery, view, block or exit, in the order the stack
// produced them.
type Event struct {
	Kind Kind
	From stack.Addr
	Body []byte // read-only: it may share memory with what the stack keeps
	View *stack.View
}

// Member is a process in a group.
type Member struct {
	group string
	node  *stack.Node
	mu    sync.Mutex
	cond  *sync.Cond
	queue []Event
	view  *stack.View
	left  bool
	out   chan Event
	done  chan struct{}
}

// Join joins (or, without a contact, starts) the group and returns once
// this process is in a view.
func Join(ctx context.Context, group string, opt Options) (*Member, error) {
	if err := opt.check(); err != nil {
		return nil, err
	}
	if opt.Listen == "" {
		opt.Listen = "udp:127.0.0.1:0"
	}
	if opt.Props == "" {
		opt.Props = "Total,Membership"
	}
	ps, err := layers.ParseProps(opt.Props)
	if err != nil {
		return nil, err
	}
	ch, err := layers.Configure(ps)
	if err != nil {
		return nil, err
	}
	if !contains(ch.Provides, stack.Membership) {
		return nil, fmt.Errorf("group: properties %q do not include Membership", opt.Props)
	}
	tr, err := transport.ListenOpts(opt.Listen, opt.Transport)
	if err != nil {
		return nil, err
	}
	cfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: min(tr.MTU(), 64000),
		Group: group, Contact: stack.Addr(opt.Contact), Heartbeat: opt.Heartbeat, SuspectAfter: opt.SuspectAfter}
	m := &Member{group: group, out: make(chan Event), done: make(chan struct{})}
	m.cond = sync.NewCond(&m.mu)
	if opt.Contact == "" {
		m.view = &stack.View{ID: 1, Members: []stack.Addr{tr.Local()}}
		m.queue = append(m.queue, Event{Kind: View, View: m.view})
	}
	node := stack.NewNode(tr, stack.NewRealClock(), layers.Build(ch.Specs, cfg), stack.NodeOptions{})
	m.node = node
	// A delivered body is the received datagram's own memory (or a copy
	// the stack made), which nothing else uses: no copy needed.
	node.OnDeliver(func(from stack.Addr, body []byte) { m.push(Event{Kind: Message, From: from, Body: body}) })
	node.OnEvent(func(ev stack.Event) {
		switch ev.Type {
		case stack.EView:
			m.mu.Lock()
			m.view = ev.View
			m.mu.Unlock()
			m.push(Event{Kind: View, View: ev.View})
		case stack.EBlock:
			m.push(Event{Kind: Block})
		case stack.EExit:
			m.push(Event{Kind: Exit})
		}
	})
	go m.pump()
	// Wait for the first view.
	for {
		if v := m.View(); v != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			m.Close()
			return nil, fmt.Errorf("group: joining %s through %s: %w", group, opt.Contact, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func contains(ps []stack.Prop, p stack.Prop) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// push queues an event without blocking the stack (the application reads
// them from Events at its own pace).
func (m *Member) push(ev Event) {
	m.mu.Lock()
	m.queue = append(m.queue, ev)
	if ev.Kind == Exit {
		m.left = true
	}
	m.cond.Signal()
	m.mu.Unlock()
}

func (m *Member) pump() {
	defer close(m.out)
	for {
		m.mu.Lock()
		for len(m.queue) == 0 {
			select {
			case <-m.done:
				m.mu.Unlock()
				return
			default:
			}
			m.cond.Wait()
		}
		ev := m.queue[0]
		m.queue = m.queue[1:]
		m.mu.Unlock()
		select {
		case m.out <- ev:
		case <-m.done:
			return
		}
		if ev.Kind == Exit {
			return
		}
	}
}

// Events delivers messages, views, blocks and the exit, in order. It is
// closed after Exit or Close.
func (m *Member) Events() <-chan Event { return m.out }

// Addr is this member's address (give it to others as their contact).
func (m *Member) Addr() stack.Addr { return m.node.Local() }

// View is the current view (nil before the first).
func (m *Member) View() *stack.View {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}

// Cast multicasts body to the group (delivered to every member, this one
// included, in the group's total order).
func (m *Member) Cast(body []byte) error {
	if m.hasLeft() {
		return ErrLeft
	}
	return m.node.Cast(append([]byte(nil), body...))
}

// Send sends body to one member (best effort unless the stack is reliable
// point to point, which the default is).
func (m *Member) Send(to stack.Addr, body []byte) error {
	if m.hasLeft() {
		return ErrLeft
	}
	return m.node.Send(to, append([]byte(nil), body...))
}

func (m *Member) hasLeft() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.left
}

// Leave asks the group to let this member go and waits until it has (the
// Exit event), then closes the member.
func (m *Member) Leave(ctx context.Context) error {
	if m.hasLeft() {
		return ErrLeft
	}
	m.node.Leave()
	for !m.hasLeft() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("group: leave: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	m.Close()
	return nil
}

// Close stops the member without telling the group (as a crash would).
func (m *Member) Close() error {
	m.mu.Lock()
	select {
	case <-m.done:
		m.mu.Unlock()
		return ErrLeft
	default:
	}
	close(m.done)
	m.left = true
	m.cond.Broadcast()
	m.mu.Unlock()
	return m.node.Close()
}
