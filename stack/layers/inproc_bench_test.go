package layers

import (
	"testing"
	"time"

	"strata/stack"
)

// memNet carries datagrams between memTransports through one queue, which
// the benchmark pumps on its own goroutine: no sockets, no other
// goroutines, so a profile shows the stacks' and nodes' own cost. (The
// simulated network, stack/sim, would add its scheduler's event queue and
// virtual clock to every datagram.)
type memNet struct {
	q     []memDatagram
	nodes map[stack.Addr]*memTransport
}

type memDatagram struct {
	from, to stack.Addr
	b        []byte
}

type memTransport struct {
	net   *memNet
	local stack.Addr
	recv  func(stack.Addr, []byte)
}

func (t *memTransport) Local() stack.Addr                      { return t.local }
func (t *memTransport) MTU() int                               { return 65000 }
func (t *memTransport) SetReceiver(f func(stack.Addr, []byte)) { t.recv = f }
func (t *memTransport) Close() error                           { return nil }

func (t *memTransport) Send(to stack.Addr, vec [][]byte) error {
	n := 0
	for _, v := range vec {
		n += len(v)
	}
	b := make([]byte, 0, n+stack.RxSpare) // as the real transports hand over
	for _, v := range vec {
		b = append(b, v...)
	}
	t.net.q = append(t.net.q, memDatagram{t.local, to, b})
	return nil
}

// pump delivers queued datagrams until the queue is empty.
func (m *memNet) pump() {
	for i := 0; i < len(m.q); i++ { // the receivers may append
		d := m.q[i]
		m.q[i] = memDatagram{}
		if t := m.nodes[d.to]; t != nil && t.recv != nil {
			t.recv(d.from, d.b)
		}
	}
	m.q = m.q[:0]
}

// BenchmarkNodeCallInProcess: one RPC (100 bytes each way) through two
// nodes running the round-trip benchmark's stack (Reliable, Fragment,
// RPC), both ends, with no I/O: what a call costs in CPU besides the
// system calls.
func BenchmarkNodeCallInProcess(b *testing.B) {
	ch, err := Configure([]stack.Prop{stack.Reliable, stack.Fragment, stack.RPC})
	if err != nil {
		b.Fatal(err)
	}
	mn := &memNet{nodes: map[stack.Addr]*memTransport{}}
	open := func(a stack.Addr) *stack.Node {
		tr := &memTransport{net: mn, local: a}
		mn.nodes[a] = tr
		cfg := stack.Config{Local: a, Epoch: uint64(time.Now().UnixNano()), MTU: 64000}
		return stack.NewNode(tr, stack.NewRealClock(), Build(ch.Specs, cfg), stack.NodeOptions{})
	}
	client, server := open("mem:client"), open("mem:server")
	defer client.Close()
	defer server.Close()
	server.Handle(func(_ stack.Addr, req []byte) []byte { return req })
	req := make([]byte, 100)
	got := 0
	cb := func(rep []byte, err error) {
		if err != nil || len(rep) != len(req) {
			b.Fatalf("reply %d bytes, %v", len(rep), err)
		}
		got++
	}
	call := func() {
		if _, err := client.CallAsync(server.Local(), req, 10*time.Second, cb); err != nil {
			b.Fatal(err)
		}
		mn.pump()
	}
	for range 1000 {
		call()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	if got != b.N+1000 {
		b.Fatalf("%d replies for %d calls", got, b.N+1000)
	}
}
