package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/stack"
)

// liveness is how long a test waits for something that should happen
// (a delivery, a connection close); it is never a performance bound.
const liveness = 10 * time.Second

// families returns the loopback hosts to test, skipping IPv6 when the
// kernel has no ::1.
func families(t *testing.T) []string {
	hosts := []string{"127.0.0.1"}
	if ln, err := net.ListenPacket("udp", "[::1]:0"); err == nil {
		ln.Close()
		hosts = append(hosts, "[::1]")
	} else {
		t.Logf("no IPv6 loopback (%v): IPv6 cases skipped", err)
	}
	return hosts
}

// forFamilies runs f as a subtest per loopback family.
func forFamilies(t *testing.T, f func(t *testing.T, host string)) {
	for _, h := range families(t) {
		name := "ipv4"
		if h != "127.0.0.1" {
			name = "ipv6"
		}
		t.Run(name, func(t *testing.T) { f(t, h) })
	}
}

// forPollsAndFamilies runs f without and with busy polling, over each
// address family, checking for leaked goroutines.
func forPollsAndFamilies(t *testing.T, f func(t *testing.T, poll time.Duration, host string)) {
	for _, d := range []time.Duration{0, 30 * time.Microsecond} {
		t.Run(fmt.Sprintf("busypoll=%v", d), func(t *testing.T) {
			forFamilies(t, func(t *testing.T, host string) {
				leakCheck(t)
				f(t, d, host)
			})
		})
	}
}

// waitFor polls cond until it holds or liveness passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", liveness, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// leakCheck records the goroutine count and, when the test ends (after
// cleanups registered later, which close the transports), waits for the
// count to come back down. Background runtime goroutines that appear in
// between are tolerated by the liveness wait only if they exit.
func leakCheck(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(liveness)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(),
					buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(time.Millisecond)
		}
	})
}

type received struct {
	from stack.Addr
	data []byte
}

// inbox is a receiver that records datagrams. It never blocks. After stop
// is set, any call counts as late (a delivery after Close returned).
// A delay makes each call slow, so that a call is likely in progress when
// the transport is closed; busy says how many calls are in progress.
type inbox struct {
	delay atomic.Int64 // time.Duration
	mu    sync.Mutex
	msgs  []received
	stop  atomic.Bool
	late  atomic.Int64
	busy  atomic.Int64
}

func (b *inbox) recv(from stack.Addr, data []byte) {
	b.busy.Add(1)
	defer b.busy.Add(-1)
	if b.stop.Load() {
		b.late.Add(1)
	}
	b.mu.Lock()
	b.msgs = append(b.msgs, received{from, data})
	b.mu.Unlock()
	time.Sleep(time.Duration(b.delay.Load()))
}

// closeChecked closes tr and checks that no receiver call is in progress
// once Close has returned, nor starts later (checked at the test's end).
func closeChecked(t *testing.T, tr stack.Transport, in *inbox) {
	t.Helper()
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	in.stop.Store(true)
	if n := in.busy.Load(); n != 0 {
		t.Fatalf("%d receiver calls still running after Close returned", n)
	}
}

func (b *inbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

func (b *inbox) all() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.msgs...)
}

// Test datagrams: datagram seq from direction dir has a pseudo-random
// size and content drawn from a shared random block. Datagrams of 8 bytes
// or more carry the sequence number (bytes 0..3) and a CRC-32 of the rest
// (bytes 4..7); shorter ones are the first bytes of the block.
var block = func() []byte {
	b := make([]byte, 512<<10)
	r := rand.NewChaCha8([32]byte{1, 2, 3})
	r.Read(b)
	return b
}()

const tinyMax = 8

type gen struct {
	seed uint64
	max  int // largest size
}

// spec returns datagram seq's size and offset in block.
func (g gen) spec(dir byte, seq int) (size, off int) {
	r := rand.New(rand.NewPCG(g.seed, uint64(dir)<<32|uint64(seq)))
	if r.IntN(20) == 0 {
		size = 1 + r.IntN(tinyMax-1)
	} else {
		size = tinyMax + r.IntN(g.max-tinyMax+1)
	}
	off = r.IntN(len(block) - g.max)
	if size < tinyMax {
		off = 0
	}
	return size, off
}

func (g gen) build(dir byte, seq int) []byte {
	size, off := g.spec(dir, seq)
	b := append([]byte(nil), block[off:off+size]...)
	if size >= tinyMax {
		binary.BigEndian.PutUint32(b[0:4], uint32(seq))
		binary.BigEndian.PutUint32(b[4:8], crc32.ChecksumIEEE(b[8:]))
	}
	return b
}

// check verifies a received datagram and returns its sequence number (-1
// for a tiny one). want >= 0 demands that sequence number.
func (g gen) check(dir byte, data []byte, want int) (int, error) {
	if len(data) < tinyMax {
		if !bytes.Equal(data, block[:len(data)]) {
			return 0, fmt.Errorf("tiny datagram of %d bytes corrupted: %x", len(data), data)
		}
		if want >= 0 {
			if size, _ := g.spec(dir, want); size != len(data) {
				return 0, fmt.Errorf("got a %d-byte datagram, want #%d of %d bytes", len(data), want, size)
			}
		}
		return -1, nil
	}
	seq := int(binary.BigEndian.Uint32(data[0:4]))
	if crc := crc32.ChecksumIEEE(data[8:]); crc != binary.BigEndian.Uint32(data[4:8]) {
		return 0, fmt.Errorf("datagram (seq field %d, %d bytes): checksum mismatch", seq, len(data))
	}
	if want >= 0 && seq != want {
		return 0, fmt.Errorf("got datagram #%d, want #%d", seq, want)
	}
	size, off := g.spec(dir, seq)
	if len(data) != size {
		return 0, fmt.Errorf("datagram #%d: %d bytes, want %d", seq, len(data), size)
	}
	if !bytes.Equal(data[8:], block[off+8:off+size]) {
		return 0, fmt.Errorf("datagram #%d: content differs", seq)
	}
	return seq, nil
}

// split cuts b into 1..4 pieces (some maybe empty) for a vectored send.
func split(r *rand.Rand, b []byte) [][]byte {
	k := 1 + r.IntN(4)
	var vec [][]byte
	for i := 1; i < k; i++ {
		c := r.IntN(len(b) + 1)
		vec = append(vec, b[:c])
		b = b[c:]
	}
	return append(vec, b)
}

// batchLog records the 4-byte sequence numbers a transport delivers and
// the batches (SetBatcher) they came in.
type batchLog struct {
	mu               sync.Mutex
	got              []int
	inBatch          bool
	batches, batched int
	first            func() // runs before the first number is recorded
}

// sendSeq sends the numbers 0..n-1 from a to b, one frame each.
func sendSeq(t *testing.T, a, b stack.Transport, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		var f [4]byte
		binary.BigEndian.PutUint32(f[:], uint32(i))
		if err := a.Send(b.Local(), [][]byte{f[:]}); err != nil {
			t.Fatal(err)
		}
	}
}

func (l *batchLog) recv(_ stack.Addr, data []byte) {
	v := int(binary.BigEndian.Uint32(data))
	if v == 0 && l.first != nil {
		l.first()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, v)
	if l.inBatch {
		l.batched++
	}
}

func (l *batchLog) batch(f func()) {
	l.mu.Lock()
	l.inBatch = true
	l.batches++
	l.mu.Unlock()
	f()
	l.mu.Lock()
	l.inBatch = false
	l.mu.Unlock()
}

// check waits for n numbers, in order, and for batches that delivered
// more than one each on average.
func (l *batchLog) check(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "every frame", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.got) >= n
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) != n {
		t.Fatalf("%d of %d frames delivered", len(l.got), n)
	}
	for i, v := range l.got {
		if v != i {
			t.Fatalf("frame %d is %d: out of order or duplicated", i, v)
		}
	}
	if l.batches == 0 || l.batched <= l.batches {
		t.Fatalf("%d batches delivered %d frames: frames received together were not batched", l.batches, l.batched)
	}
	t.Logf("%d frames, %d in %d batches", n, l.batched, l.batches)
}

// checkClosedAfter checks, for a transport closed while in receiving
// deliveries, that none came after Close returned and that Send and a
// second Close report ErrClosed.
func checkClosedAfter(t *testing.T, tr stack.Transport, in *inbox, peer stack.Addr) {
	t.Helper()
	if n := in.late.Load(); n != 0 {
		t.Fatalf("%d deliveries after Close returned", n)
	}
	if err := tr.Send(peer, [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v, want ErrClosed", err)
	}
	if err := tr.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
}
