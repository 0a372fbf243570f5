package transport

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"strata/stack"
)

// The seal keeps one derived subkey per key and incarnation instead of
// running XChaCha20's derivation per datagram: what travels must still be
// exactly XChaCha20-Poly1305 under the cluster key. A datagram Send seals
// opens with the library's XChaCha20-Poly1305, one the library seals is
// handed up, and both still hold once the primary key changes (a new
// subkey).
func TestSealIsXChaCha20Poly1305(t *testing.T) {
	net := newPipeNet()
	k := ring(t, testKey(1))
	a, _, got := sealedPair(t, net, k, k)
	var ctr uint64
	check := func(key SealKey, msg string) {
		t.Helper()
		if err := a.Send("p:b", [][]byte{[]byte(msg)}); err != nil {
			t.Fatal(err)
		}
		frame := net.wire[len(net.wire)-1].data
		x, err := chacha20poly1305.NewX(key.Secret[:])
		if err != nil {
			t.Fatal(err)
		}
		plain, err := x.Open(nil, frame[2:sealHdr], frame[sealHdr:], aad(nil, frame[:sealHdr], "p:a", "p:b"))
		if err != nil || string(plain) != msg || frame[1] != key.ID {
			t.Fatalf("XChaCha20-Poly1305 with key %d does not open what Send sealed: %q %v", key.ID, plain, err)
		}
		// The other way: the library seals, as a sender of another
		// incarnation would, and b hands it up.
		hdr := []byte{sealVersion, key.ID}
		hdr = append(hdr, bytes.Repeat([]byte{key.ID}, 16)...)
		ctr++
		hdr = binary.BigEndian.AppendUint64(hdr, ctr)
		ours := x.Seal(bytes.Clone(hdr), hdr[2:], []byte("lib-"+msg), aad(nil, hdr, "p:c", "p:b"))
		net.deliver("p:c", "p:b", ours)
		if g := got("p:b"); len(g) < 2 || g[len(g)-1] != "p:c:lib-"+msg || g[len(g)-2] != "p:a:"+msg {
			t.Fatalf("b received %q", g)
		}
	}
	check(testKey(1), "first")
	check(testKey(1), "second")
	if err := k.SetKeys(testKey(2), testKey(1)); err != nil {
		t.Fatal(err)
	}
	check(testKey(2), "rotated")
}

// The lock-free first look refuses a replay before decrypting it (a
// replay with a damaged tag counts as replayed, not forged); without it
// (the sender's recent state forgotten), the check after authentication
// still refuses every replay.
func TestSealReplayRefusedEitherWay(t *testing.T) {
	net := newPipeNet()
	k := ring(t, testKey(1))
	a, b, got := sealedPair(t, net, k, k)
	for i := range 3 {
		if err := a.Send("p:b", [][]byte{fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	frames := net.wire[:3]
	damaged := bytes.Clone(frames[1].data)
	damaged[len(damaged)-1] ^= 1
	before := b.Stats()
	net.deliver("p:a", "p:b", damaged)
	if s := b.Stats(); s.Replayed != before.Replayed+1 || s.Forged != before.Forged {
		t.Fatalf("a damaged replay was decrypted before the replay check: %+v", s)
	}
	forget := func() {
		for i := range b.recent {
			b.recent[i].Store(nil)
		}
	}
	forget()
	net.deliver("p:a", "p:b", damaged)
	if s := b.Stats(); s.Forged != before.Forged+1 {
		t.Fatalf("without the first look, a damaged datagram is forged: %+v", s)
	}
	for _, f := range frames {
		forget()
		net.deliver("p:a", "p:b", f.data)
	}
	if s := b.Stats(); s.Replayed != before.Replayed+4 || s.Opened != 3 {
		t.Fatalf("replays without the first look: %+v", s)
	}
	if g := got("p:b"); len(g) != 3 {
		t.Fatalf("b received %q", g)
	}
}

// Several goroutines deliver the same sealed datagrams at once (two in
// one order, so that copies meet, two shuffled): each datagram is handed
// up exactly once, and every other copy is refused as a replay (run with -race: the first look reads the
// window while others update it).
func TestSealConcurrentOpen(t *testing.T) {
	net := newPipeNet()
	k := ring(t, testKey(1))
	a, b, got := sealedPair(t, net, k, k)
	const n, copies = 300, 4
	net.block = true
	for i := range n {
		if err := a.Send("p:b", [][]byte{fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	frames := append([]pipeFrame(nil), net.wire...)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range copies {
		// Half in one order (copies of a datagram meet), half shuffled.
		order := rand.New(rand.NewPCG(uint64(g%2), 1)).Perm(n)
		wg.Go(func() {
			<-start
			for _, i := range order {
				net.deliver("p:a", "p:b", frames[i].data)
			}
		})
	}
	close(start)
	wg.Wait()
	s := b.Stats()
	if s.Opened != n || s.Replayed != n*(copies-1) || s.Refused() != n*(copies-1) {
		t.Fatalf("stats: %+v", s)
	}
	seen := map[string]bool{}
	for _, m := range got("p:b") {
		if seen[m] {
			t.Fatalf("%s handed up twice", m)
		}
		seen[m] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct datagrams handed up, want %d", len(seen), n)
	}
}

// sinkEnd is a transport that keeps the last datagram sent and delivers
// nothing.
type sinkEnd struct {
	addr stack.Addr
	last []byte
	recv func(stack.Addr, []byte)
}

func (e *sinkEnd) Local() stack.Addr                      { return e.addr }
func (e *sinkEnd) MTU() int                               { return 65000 }
func (e *sinkEnd) SetReceiver(f func(stack.Addr, []byte)) { e.recv = f }
func (e *sinkEnd) Close() error                           { return nil }
func (e *sinkEnd) Send(_ stack.Addr, vec [][]byte) (err error) {
	e.last = append(e.last[:0], vec[0]...)
	return nil
}
func (e *sinkEnd) deliver(from stack.Addr, data []byte)           { e.recv(from, data) }
func (e *sinkEnd) sealed(t testing.TB, k *Keyring) *SealTransport { return mustSeal(t, e, k) }

func mustSeal(t testing.TB, inner stack.Transport, k *Keyring) *SealTransport {
	s, err := Sealed(inner, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// BenchmarkSealSend is the sending side: seal a datagram of each size.
// BenchmarkSealOpen is the receiving side: open (authenticate, check the
// replay window, hand up) datagrams sealed in batches outside the timer.
func BenchmarkSealSend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			k := ring(b, testKey(1))
			s := (&sinkEnd{addr: "p:a"}).sealed(b, k)
			msg := [][]byte{make([]byte, size)}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Send("p:b", msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSealOpen(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			k := ring(b, testKey(1))
			tx := &sinkEnd{addr: "p:a"}
			sender := tx.sealed(b, k)
			rx := &sinkEnd{addr: "p:b"}
			receiver := rx.sealed(b, k)
			var opened int
			receiver.SetReceiver(func(stack.Addr, []byte) { opened++ })
			msg := [][]byte{make([]byte, size)}
			const batch = 512
			frames := make([][]byte, batch) // sealed anew per batch: open decrypts in place
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				b.StopTimer()
				for j := range frames {
					if err := sender.Send("p:b", msg); err != nil {
						b.Fatal(err)
					}
					frames[j] = append(frames[j][:0], tx.last...)
				}
				b.StartTimer()
				for j := 0; j < batch && i < b.N; j, i = j+1, i+1 {
					rx.deliver("p:a", frames[j])
				}
			}
			b.StopTimer()
			if opened != b.N {
				b.Fatalf("opened %d of %d", opened, b.N)
			}
		})
	}
}
