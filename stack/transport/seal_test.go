package transport

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/stack"
)

// pipeNet is an in-memory network of transports that records every
// datagram sent, so a test can replay, alter or redirect it.
type pipeNet struct {
	mu    sync.Mutex
	ends  map[stack.Addr]*pipeEnd
	wire  []pipeFrame // every datagram sent, in order
	block bool        // drop instead of delivering
}

type pipeFrame struct {
	from, to stack.Addr
	data     []byte
}

type pipeEnd struct {
	net  *pipeNet
	addr stack.Addr
	recv func(from stack.Addr, data []byte)
}

func newPipeNet() *pipeNet { return &pipeNet{ends: map[stack.Addr]*pipeEnd{}} }

func (n *pipeNet) end(a stack.Addr) *pipeEnd {
	e := &pipeEnd{net: n, addr: a}
	n.ends[a] = e
	return e
}

// deliver hands data to to as if from.
func (n *pipeNet) deliver(from, to stack.Addr, data []byte) {
	n.mu.Lock()
	e := n.ends[to]
	n.mu.Unlock()
	if e != nil && e.recv != nil {
		e.recv(from, bytes.Clone(data))
	}
}

func (e *pipeEnd) Local() stack.Addr { return e.addr }
func (e *pipeEnd) MTU() int          { return 1500 }
func (e *pipeEnd) SetReceiver(f func(from stack.Addr, data []byte)) {
	e.recv = f
}
func (e *pipeEnd) Close() error { return nil }
func (e *pipeEnd) Send(to stack.Addr, vec [][]byte) error {
	var b []byte
	for _, v := range vec {
		b = append(b, v...)
	}
	e.net.mu.Lock()
	e.net.wire = append(e.net.wire, pipeFrame{e.addr, to, b})
	block := e.net.block
	e.net.mu.Unlock()
	if !block {
		e.net.deliver(e.addr, to, b)
	}
	return nil
}

func testKey(id byte) SealKey {
	k := SealKey{ID: id}
	for i := range k.Secret {
		k.Secret[i] = byte(int(id)*31 + i)
	}
	return k
}

// sealedPair returns sealed transports a and b on a pipe network, and
// what each received.
func sealedPair(t *testing.T, net *pipeNet, ka, kb *Keyring) (a, b *SealTransport, got func(stack.Addr) []string) {
	t.Helper()
	var mu sync.Mutex
	recv := map[stack.Addr][]string{}
	mk := func(addr stack.Addr, k *Keyring) *SealTransport {
		s, err := Sealed(net.end(addr), k)
		if err != nil {
			t.Fatal(err)
		}
		s.SetReceiver(func(from stack.Addr, data []byte) {
			mu.Lock()
			recv[addr] = append(recv[addr], fmt.Sprintf("%s:%s", from, data))
			mu.Unlock()
		})
		return s
	}
	a, b = mk("p:a", ka), mk("p:b", kb)
	return a, b, func(at stack.Addr) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), recv[at]...)
	}
}

func ring(t testing.TB, keys ...SealKey) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Sealed datagrams arrive as sent, and what travels is not the plaintext;
// every kind of tampering is refused and counted under its reason:
// a flipped bit, a truncation, a replay, a datagram redirected to another
// node or claimed from another source, an unknown key id, a counter
// older than the window, an earlier incarnation of the sender.
func TestSealRefusesTampering(t *testing.T) {
	net := newPipeNet()
	k := ring(t, testKey(1))
	a, b, got := sealedPair(t, net, k, k)
	c, err := Sealed(net.end("p:c"), k)
	if err != nil {
		t.Fatal(err)
	}
	var cGot int
	c.SetReceiver(func(stack.Addr, []byte) { cGot++ })
	if err := a.Send("p:b", [][]byte{[]byte("hello "), []byte("world")}); err != nil {
		t.Fatal(err)
	}
	if g := got("p:b"); len(g) != 1 || g[0] != "p:a:hello world" {
		t.Fatalf("b received %q", g)
	}
	frame := net.wire[0].data
	if bytes.Contains(frame, []byte("hello")) || len(frame) != len("hello world")+sealOverhead {
		t.Fatalf("on the wire: %q (%d bytes)", frame, len(frame))
	}
	// fresh seals a datagram from a to b that b has not received.
	fresh := func() []byte {
		net.block = true
		defer func() { net.block = false }()
		if err := a.Send("p:b", [][]byte{[]byte("hello world")}); err != nil {
			t.Fatal(err)
		}
		return net.wire[len(net.wire)-1].data
	}
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 1; return b }
	cases := []struct {
		name     string
		from, to stack.Addr
		data     []byte
		counter  func(SealStats) uint64
	}{
		{"bit flip in the ciphertext", "p:a", "p:b", flip(fresh(), sealHdr+3), func(s SealStats) uint64 { return s.Forged }},
		{"bit flip in the tag", "p:a", "p:b", flip(fresh(), len(frame)-1), func(s SealStats) uint64 { return s.Forged }},
		{"bit flip in the nonce", "p:a", "p:b", flip(fresh(), 20), func(s SealStats) uint64 { return s.Forged }},
		{"truncated", "p:a", "p:b", fresh()[:sealOverhead-1], func(s SealStats) uint64 { return s.Malformed }},
		{"replay", "p:a", "p:b", frame, func(s SealStats) uint64 { return s.Replayed }},
		{"redirected to c", "p:a", "p:c", fresh(), func(s SealStats) uint64 { return s.Forged }},
		{"claimed from c", "p:c", "p:b", fresh(), func(s SealStats) uint64 { return s.Forged }},
		{"unknown key", "p:a", "p:b", func() []byte { b := fresh(); b[1] = 9; return b }(), func(s SealStats) uint64 { return s.UnknownKey }},
		{"another version", "p:a", "p:b", func() []byte { b := fresh(); b[0] = 1; return b }(), func(s SealStats) uint64 { return s.Malformed }},
	}
	for _, tc := range cases {
		dst := b
		if tc.to == "p:c" {
			dst = c
		}
		before := tc.counter(dst.Stats())
		net.deliver(tc.from, tc.to, tc.data)
		if tc.counter(dst.Stats()) != before+1 {
			t.Errorf("%s: not counted: %+v", tc.name, dst.Stats())
		}
	}
	if g := got("p:b"); len(g) != 1 || cGot != 0 {
		t.Fatalf("tampered datagrams were handed up: b %q, c %d", g, cGot)
	}
	// Out of order within the window is fine; beyond it, stale.
	net.block = true
	first := len(net.wire)
	for i := range replayWindowN + 10 {
		if err := a.Send("p:b", [][]byte{fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	last := net.wire[len(net.wire)-1]
	net.deliver(last.from, last.to, last.data)
	net.deliver(net.wire[len(net.wire)-2].from, "p:b", net.wire[len(net.wire)-2].data)
	net.deliver("p:a", "p:b", net.wire[first].data)
	if s := b.Stats(); s.Stale != 1 || s.Opened != 3 {
		t.Fatalf("window: %+v", s)
	}
	// A new incarnation of a makes b refuse the old one's datagrams,
	// even those it never received.
	old := net.wire[len(net.wire)-3].data // within the window, never delivered
	time.Sleep(time.Millisecond)          // incarnations are ordered by start time
	a3, err := Sealed(net.end("p:a"), k)
	if err != nil {
		t.Fatal(err)
	}
	net.block = false
	if err := a3.Send("p:b", [][]byte{[]byte("new")}); err != nil {
		t.Fatal(err)
	}
	net.deliver("p:a", "p:b", old)
	if s := b.Stats(); s.OldIncarnation != 1 {
		t.Fatalf("old incarnation: %+v", s)
	}
	if g := got("p:b"); g[len(g)-1] != "p:a:new" {
		t.Fatalf("b received %q", g)
	}
}

// Key rotation without downtime: a node that has the new key only as a
// secondary opens what the new primary seals; a node without it refuses
// and counts; after the rotation the old key can be retired.
func TestSealKeyRotation(t *testing.T) {
	net := newPipeNet()
	k1, k2 := testKey(1), testKey(2)
	ka, kb := ring(t, k1), ring(t, k1)
	a, b, got := sealedPair(t, net, ka, kb)
	send := func(from *SealTransport, to stack.Addr, msg string) {
		t.Helper()
		if err := from.Send(to, [][]byte{[]byte(msg)}); err != nil {
			t.Fatal(err)
		}
	}
	// Step 1: b learns k2 as a secondary; both still seal with k1.
	if err := kb.SetKeys(k1, k2); err != nil {
		t.Fatal(err)
	}
	send(a, "p:b", "1")
	send(b, "p:a", "2")
	// Step 2: b makes k2 primary before a knows it: a refuses.
	if err := kb.SetKeys(k2, k1); err != nil {
		t.Fatal(err)
	}
	send(b, "p:a", "lost")
	if s := a.Stats(); s.UnknownKey != 1 {
		t.Fatalf("a without k2: %+v", s)
	}
	if err := ka.SetKeys(k2, k1); err != nil {
		t.Fatal(err)
	}
	send(b, "p:a", "3")
	send(a, "p:b", "4")
	// Step 3: retire k1 everywhere; k2 carries on.
	if err := ka.SetKeys(k2); err != nil {
		t.Fatal(err)
	}
	if err := kb.SetKeys(k2); err != nil {
		t.Fatal(err)
	}
	send(a, "p:b", "5")
	if ga, gb := got("p:a"), got("p:b"); fmt.Sprint(ga) != "[p:b:2 p:b:3]" || fmt.Sprint(gb) != "[p:a:1 p:a:4 p:a:5]" {
		t.Fatalf("a got %q, b got %q", ga, gb)
	}
	if _, err := NewKeyring(); err == nil {
		t.Fatal("empty keyring accepted")
	}
	if _, err := NewKeyring(k1, k1); err == nil {
		t.Fatal("duplicate key ids accepted")
	}
}

// FuzzSealOpen: whatever arrives, the receiver never panics, and nothing
// is handed up that was not sealed with the key (the fuzzer does not
// have it).
func FuzzSealOpen(f *testing.F) {
	net := newPipeNet()
	k := ring(f, testKey(1))
	a, err := Sealed(net.end("p:a"), k)
	if err != nil {
		f.Fatal(err)
	}
	net.block = true
	_ = a.Send("p:b", [][]byte{[]byte("seed")})
	f.Add(net.wire[0].data)
	f.Add([]byte{sealVersion, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		n2 := newPipeNet()
		b, err := Sealed(n2.end("p:b"), k)
		if err != nil {
			t.Fatal(err)
		}
		var handed [][]byte
		b.SetReceiver(func(_ stack.Addr, d []byte) { handed = append(handed, d) })
		n2.deliver("p:a", "p:b", data)
		// The only plaintext a key holder ever sealed (in this process or
		// in the one that made the seed) is "seed".
		for _, d := range handed {
			if string(d) != "seed" {
				t.Fatalf("handed up %q from a datagram no key holder sealed: %x", d, data)
			}
		}
	})
}

// A process without the key that sends to a sealed one is told, rarely,
// that links must be sealed (and nothing else): its Plain transport
// reports the notice instead of handing it to the stack.
func TestSealNoticeToPlainSender(t *testing.T) {
	net := newPipeNet()
	srv, err := Sealed(net.end("p:s"), ring(t, testKey(1)))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReceiver(func(stack.Addr, []byte) { t.Fatal("an unsealed datagram was handed up") })
	var notices []stack.Addr
	var up int
	cli := Plain(net.end("p:c"), func(from stack.Addr) { notices = append(notices, from) })
	cli.SetReceiver(func(stack.Addr, []byte) { up++ })
	for range 3 {
		if err := cli.Send("p:s", [][]byte{[]byte("plain request")}); err != nil {
			t.Fatal(err)
		}
	}
	if len(notices) != 1 || notices[0] != "p:s" || up != 0 {
		t.Fatalf("notices %v, handed up %d", notices, up)
	}
	if s := srv.Stats(); s.Malformed != 3 {
		t.Fatalf("server stats %+v", s)
	}
	// A notice sent to a sealed process is not answered with a notice.
	before := len(net.wire)
	net.deliver("p:c", "p:s", SealNotice)
	if len(net.wire) != before {
		t.Fatal("a sealed process answered a notice")
	}
}
