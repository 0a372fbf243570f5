package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
)

var _ stack.Transport = (*endpoint)(nil)

// arrival is one delivered datagram as a receiver saw it.
type arrival struct {
	at       time.Duration
	from, to stack.Addr
	seq      uint64
	data     string
}

// world is a Net with endpoints that record every arrival.
type world struct {
	t   testing.TB
	n   *Net
	eps map[stack.Addr]stack.Transport
	log []arrival
}

func newWorld(t testing.TB, seed uint64, addrs ...stack.Addr) *world {
	w := &world{t: t, n: New(seed), eps: map[stack.Addr]stack.Transport{}}
	for _, a := range addrs {
		w.attach(a)
	}
	return w
}

func (w *world) attach(a stack.Addr) {
	e, err := w.n.Endpoint(a)
	if err != nil {
		w.t.Fatal(err)
	}
	w.eps[a] = e
	e.SetReceiver(func(from stack.Addr, data []byte) {
		ar := arrival{at: w.n.Now(), from: from, to: a, data: string(data)}
		if len(data) >= 8 {
			ar.seq = binary.BigEndian.Uint64(data)
		}
		w.log = append(w.log, ar)
	})
}

// send sends an 8-byte sequence number padded to size bytes.
func (w *world) send(from, to stack.Addr, seq uint64, size int) {
	b := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(b, seq)
	if err := w.eps[from].Send(to, [][]byte{b[:4], b[4:]}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) seqs(from, to stack.Addr) []uint64 {
	var out []uint64
	for _, a := range w.log {
		if a.from == from && a.to == to {
			out = append(out, a.seq)
		}
	}
	return out
}

func (w *world) checkInvariant() {
	w.t.Helper()
	s := w.n.Stats()
	if s.Sent+s.Duplicated != s.Delivered+s.Lost+s.Dropped+s.InFlight {
		w.t.Fatalf("accounting broken: %+v", s)
	}
	if s.Dropped != s.DroppedPartition+s.DroppedCrash+s.DroppedUnknown+s.DroppedClosed {
		w.t.Fatalf("Dropped is not the sum of its causes: %+v", s)
	}
	if s.InFlight > uint64(w.n.Pending()) {
		w.t.Fatalf("InFlight %d > pending callbacks %d", s.InFlight, w.n.Pending())
	}
}

// script drives a busy, lossy, jittery three-node network from the Net's
// own generator and returns the delivery trace.
func script(seed uint64) string {
	w := newWorld(panicTB{}, seed, "sim:a", "sim:b", "sim:c")
	w.n.SetDefault(Link{Delay: 5 * time.Millisecond, Jitter: 4 * time.Millisecond, Loss: 0.1, Dup: 0.05, Reorder: 0.05, Bandwidth: 2e6})
	addrs := []stack.Addr{"sim:a", "sim:b", "sim:c"}
	var seq uint64
	var tick func()
	tick = func() {
		r := w.n.Rand()
		from, to := addrs[r.IntN(3)], addrs[r.IntN(3)]
		seq++
		w.send(from, to, seq, 8+r.IntN(1000))
		if seq < 2000 {
			w.n.AfterFunc(time.Duration(r.Int64N(int64(time.Millisecond))), tick)
		}
	}
	w.n.AfterFunc(0, tick)
	w.n.Run(time.Minute)
	var sb strings.Builder
	for _, a := range w.log {
		fmt.Fprintf(&sb, "%d %s>%s #%d %d\n", a.at, a.from, a.to, a.seq, len(a.data))
	}
	fmt.Fprintf(&sb, "%+v\n", w.n.Stats())
	return sb.String()
}

// panicTB lets script run without a *testing.T: a failure there is a bug
// in the harness itself.
type panicTB struct{ testing.TB }

func (panicTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (panicTB) Helper()                           {}

func TestDeterminism(t *testing.T) {
	differ, seeds := 0, 0
	for seed := range testseed.Each(t, testseed.Range(1, 10)...) {
		seeds++
		a, b := script(seed), script(seed)
		if a != b {
			t.Fatalf("seed %d: two runs of the same script differ", seed)
		}
		if strings.Count(a, "\n") < 1000 {
			t.Fatalf("seed %d: trace suspiciously short (%d lines)", seed, strings.Count(a, "\n"))
		}
		if script(seed+1000) != a {
			differ++
		}
	}
	if differ < seeds-1 {
		t.Fatalf("only %d of %d seed pairs gave different traces", differ, seeds)
	}
}

// Without jitter or reordering a link is FIFO, whatever its loss,
// duplication, delay and bandwidth, and however sends are spaced.
func TestFIFO(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 20)...) {
		w := newWorld(t, seed, "sim:a", "sim:b")
		r := w.n.Rand()
		w.n.SetDefault(Link{Delay: time.Duration(r.Int64N(int64(20 * time.Millisecond))), Loss: 0.2, Dup: 0.2, Bandwidth: int64(r.IntN(3)) * 1e6})
		var seq uint64
		var tick func()
		tick = func() {
			seq++
			w.send("sim:a", "sim:b", seq, 8+r.IntN(1392))
			if seq < 1000 {
				// Often zero: many sends at the same instant.
				w.n.AfterFunc(time.Duration(r.Int64N(int64(time.Millisecond)))*time.Duration(r.IntN(2)), tick)
			}
		}
		w.n.AfterFunc(0, tick)
		w.n.Run(time.Minute)
		got := w.seqs("sim:a", "sim:b")
		if len(got) < 500 {
			t.Fatalf("seed %d: only %d deliveries", seed, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Fatalf("seed %d: #%d delivered after #%d (link %+v)", seed, got[i], got[i-1], w.n.LinkOf("sim:a", "sim:b"))
			}
		}
		w.checkInvariant()
	}
}

func TestLossRate(t *testing.T) {
	const total, loss = 10000, 0.3
	for seed := range testseed.Each(t, testseed.Range(1, 5)...) {
		w := newWorld(t, seed, "sim:a", "sim:b")
		w.n.SetDefault(Link{Delay: time.Millisecond, Loss: loss})
		for i := range total {
			w.send("sim:a", "sim:b", uint64(i), 8)
		}
		w.n.Run(time.Second)
		s := w.n.Stats()
		// The binomial standard deviation is about 46; ±300 is 6.5 sigma.
		if s.Lost < total*loss-300 || s.Lost > total*loss+300 {
			t.Fatalf("seed %d: lost %d of %d at p=%v", seed, s.Lost, total, loss)
		}
		if s.Delivered != total-s.Lost || uint64(len(w.log)) != s.Delivered || s.Sent != total {
			t.Fatalf("seed %d: stats %+v, %d logged", seed, s, len(w.log))
		}
		w.checkInvariant()
	}
	// The extremes are exact.
	for _, p := range []float64{0, 1} {
		w := newWorld(t, 9, "sim:a", "sim:b")
		w.n.SetDefault(Link{Loss: p})
		for i := range 1000 {
			w.send("sim:a", "sim:b", uint64(i), 8)
		}
		w.n.Run(time.Second)
		if want := uint64(1000 * p); w.n.Stats().Lost != want {
			t.Fatalf("Loss=%v: lost %d, want %d", p, w.n.Stats().Lost, want)
		}
	}
}

func TestDuplication(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 5)...) {
		w := newWorld(t, seed, "sim:a", "sim:b")
		w.n.SetDefault(Link{Delay: time.Millisecond, Jitter: time.Millisecond, Dup: 0.5})
		const total = 10000
		for i := range total {
			w.send("sim:a", "sim:b", uint64(i), 8)
		}
		var bufs = map[uint64][][]byte{}
		w.eps["sim:b"].SetReceiver(func(_ stack.Addr, data []byte) {
			s := binary.BigEndian.Uint64(data)
			bufs[s] = append(bufs[s], data)
		})
		w.n.Run(time.Second)
		twice := 0
		for i := range uint64(total) {
			switch len(bufs[i]) {
			case 1:
			case 2:
				twice++
				// Each copy is the receiver's own buffer.
				bufs[i][0][7] ^= 0xff
				if bufs[i][1][7] == bufs[i][0][7] {
					t.Fatalf("seed %d: duplicate copies share memory", seed)
				}
			default:
				t.Fatalf("seed %d: #%d delivered %d times", seed, i, len(bufs[i]))
			}
		}
		s := w.n.Stats()
		if uint64(twice) != s.Duplicated || twice < total/2-400 || twice > total/2+400 {
			t.Fatalf("seed %d: %d duplicated, stats say %d", seed, twice, s.Duplicated)
		}
		if s.Delivered != total+s.Duplicated {
			t.Fatalf("seed %d: stats %+v", seed, s)
		}
	}
}

func inversions(seqs []uint64) int {
	n := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] {
			n++
		}
	}
	return n
}

// Reorder (and jitter wider than the sending interval) make later
// datagrams overtake earlier ones, every seed.
func TestReorder(t *testing.T) {
	for _, l := range []Link{
		{Delay: 10 * time.Millisecond, Reorder: 0.1},
		{Reorder: 0.1}, // no delay at all: the extra 1ms alone reorders
		{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond},
	} {
		for seed := range testseed.Each(t, testseed.Range(1, 10)...) {
			w := newWorld(t, seed, "sim:a", "sim:b")
			w.n.SetDefault(l)
			var seq uint64
			var tick func()
			tick = func() {
				seq++
				w.send("sim:a", "sim:b", seq, 8)
				if seq < 1000 {
					w.n.AfterFunc(100*time.Microsecond, tick)
				}
			}
			w.n.AfterFunc(0, tick)
			w.n.Run(time.Minute)
			got := w.seqs("sim:a", "sim:b")
			if len(got) != 1000 {
				t.Fatalf("%+v seed %d: %d of 1000 delivered", l, seed, len(got))
			}
			if inversions(got) < 10 {
				t.Fatalf("%+v seed %d: only %d inversions", l, seed, inversions(got))
			}
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			for i, s := range sorted {
				if s != uint64(i+1) {
					t.Fatalf("%+v seed %d: lost or duplicated #%d", l, seed, i+1)
				}
			}
		}
	}
}

// 1000-byte datagrams on a 1 MB/s link take exactly 1ms each to transmit,
// back to back; a link idle in between starts afresh; links are
// independent per direction; lost datagrams occupied their slot too.
func TestBandwidth(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	w.n.SetDefault(Link{Delay: 10 * time.Millisecond, Bandwidth: 1e6})
	for i := range 5 {
		w.send("sim:a", "sim:b", uint64(i), 1000)
	}
	w.send("sim:b", "sim:a", 99, 500) // other direction: its own link
	w.n.Run(50 * time.Millisecond)
	w.send("sim:a", "sim:b", 5, 1000) // at 50ms, link idle since 5ms
	w.n.Run(time.Second)
	want := []arrival{
		{at: 10500 * time.Microsecond, from: "sim:b", to: "sim:a", seq: 99},
		{at: 11 * time.Millisecond, seq: 0},
		{at: 12 * time.Millisecond, seq: 1},
		{at: 13 * time.Millisecond, seq: 2},
		{at: 14 * time.Millisecond, seq: 3},
		{at: 15 * time.Millisecond, seq: 4},
		{at: 61 * time.Millisecond, seq: 5},
	}
	if len(w.log) != len(want) {
		t.Fatalf("%d arrivals, want %d", len(w.log), len(want))
	}
	for i, a := range w.log {
		if a.at != want[i].at || a.seq != want[i].seq {
			t.Errorf("arrival %d: #%d at %v, want #%d at %v", i, a.seq, a.at, want[i].seq, want[i].at)
		}
	}

	for seed := range testseed.Each(t, testseed.Range(1, 5)...) {
		w := newWorld(t, seed, "sim:a", "sim:b")
		w.n.SetLink("sim:a", "sim:b", Link{Delay: 10 * time.Millisecond, Bandwidth: 1e6, Loss: 0.5})
		for i := range 100 {
			w.send("sim:a", "sim:b", uint64(i), 1000)
		}
		w.n.Run(time.Second)
		if len(w.log) < 20 || len(w.log) > 80 {
			t.Fatalf("seed %d: %d of 100 delivered at Loss 0.5", seed, len(w.log))
		}
		for _, a := range w.log {
			if want := 10*time.Millisecond + time.Duration(a.seq+1)*time.Millisecond; a.at != want {
				t.Fatalf("seed %d: #%d at %v, want %v", seed, a.seq, a.at, want)
			}
		}
	}
}

func TestSerialisationRoundsUp(t *testing.T) {
	if d := serialisation(1, 3); d != 333333334 {
		t.Fatalf("1 byte at 3 B/s: %v", d)
	}
	if d := serialisation(1, 1e12); d != 1 {
		t.Fatalf("1 byte at 1 TB/s: %v, want 1ns", d)
	}
	if d := serialisation(0, 1e6); d != 0 {
		t.Fatalf("empty datagram: %v", d)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b", "sim:c", "sim:d", "sim:e")
	w.n.SetDefault(Link{Delay: 10 * time.Millisecond})
	w.send("sim:a", "sim:c", 1, 8) // in flight when the partition starts
	w.n.Run(time.Millisecond)
	w.n.Partition([]stack.Addr{"sim:a", "sim:b"}, []stack.Addr{"sim:c"})
	// d and e are unlisted: together, apart from everyone else.
	pairs := [][2]stack.Addr{
		{"sim:a", "sim:b"}, {"sim:b", "sim:a"}, {"sim:d", "sim:e"}, // allowed
		{"sim:a", "sim:c"}, {"sim:c", "sim:b"}, {"sim:a", "sim:d"}, {"sim:e", "sim:c"}, // blocked
	}
	for i, p := range pairs {
		w.send(p[0], p[1], uint64(10+i), 8)
	}
	w.n.Run(time.Second)
	got := map[string]bool{}
	for _, a := range w.log {
		got[fmt.Sprintf("%s>%s#%d", a.from, a.to, a.seq)] = true
	}
	want := map[string]bool{
		"sim:a>sim:c#1":  true, // sent before the partition
		"sim:a>sim:b#10": true, "sim:b>sim:a#11": true, "sim:d>sim:e#12": true,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("during partition got %v, want %v", got, want)
	}
	if s := w.n.Stats(); s.DroppedPartition != 4 || s.Dropped != 4 {
		t.Fatalf("stats %+v", s)
	}
	w.checkInvariant()

	w.n.Heal()
	w.log = nil
	for i, p := range pairs {
		w.send(p[0], p[1], uint64(10+i), 8)
	}
	w.n.Run(time.Second)
	if len(w.log) != len(pairs) {
		t.Fatalf("after Heal %d of %d delivered", len(w.log), len(pairs))
	}

	defer func() {
		if recover() == nil {
			t.Fatal("an address in two groups did not panic")
		}
	}()
	w.n.Partition([]stack.Addr{"sim:a"}, []stack.Addr{"sim:b", "sim:a"})
}

func TestCrashRestart(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	w.n.SetDefault(Link{Delay: 10 * time.Millisecond})
	var hooks []string
	w.n.CrashHook(func(a stack.Addr, crashed bool) { hooks = append(hooks, fmt.Sprintf("%s %v", a, crashed)) })

	w.send("sim:a", "sim:b", 1, 8) // in flight to b when b crashes: dropped
	w.send("sim:b", "sim:a", 2, 8) // sent by b before its crash: delivered
	w.n.Run(time.Millisecond)
	w.n.Crash("sim:b")
	w.n.Crash("sim:b") // no state change, no hook
	if !w.n.Crashed("sim:b") {
		t.Fatal("Crashed(b) false")
	}
	w.send("sim:b", "sim:a", 3, 8) // a crashed node's sends vanish
	w.n.Run(time.Second)
	if len(w.log) != 1 || w.log[0].seq != 2 {
		t.Fatalf("while crashed got %+v", w.log)
	}
	if s := w.n.Stats(); s.DroppedCrash != 2 {
		t.Fatalf("stats %+v", s)
	}

	// Sent while b is down, arriving after it came back: delivered.
	w.log = nil
	w.send("sim:a", "sim:b", 4, 8)
	w.n.Run(time.Millisecond)
	w.n.Restart("sim:b")
	w.n.Restart("sim:b")
	w.send("sim:b", "sim:a", 5, 8)
	w.n.Run(time.Second)
	if len(w.log) != 2 || w.log[0].seq != 4 || w.log[1].seq != 5 {
		t.Fatalf("after restart got %+v", w.log)
	}
	if !slices.Equal(hooks, []string{"sim:b true", "sim:b false"}) {
		t.Fatalf("hooks %v", hooks)
	}
	w.checkInvariant()
}

func TestMTU(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	a := w.eps["sim:a"]
	if a.MTU() != 1400 {
		t.Fatalf("default MTU %d", a.MTU())
	}
	if err := a.Send("sim:b", [][]byte{make([]byte, 700), make([]byte, 700)}); err != nil {
		t.Fatalf("1400 bytes: %v", err)
	}
	err := a.Send("sim:b", [][]byte{make([]byte, 700), make([]byte, 701)})
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("1401 bytes: %v, want ErrTooBig", err)
	}
	w.n.SetMTU(100)
	if a.MTU() != 100 || w.eps["sim:b"].MTU() != 100 {
		t.Fatal("SetMTU not seen by endpoints")
	}
	if err := a.Send("sim:b", [][]byte{make([]byte, 101)}); !errors.Is(err, ErrTooBig) {
		t.Fatalf("101 bytes at MTU 100: %v", err)
	}
	w.n.Run(time.Second)
	if s := w.n.Stats(); s.Sent != 1 || s.Delivered != 1 || len(w.log) != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Send copies the bytes: the caller may reuse its buffers at once.
func TestSendCopies(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	w.n.SetDefault(Link{Delay: time.Millisecond})
	h, p := []byte("head:"), []byte("payload")
	if err := w.eps["sim:a"].Send("sim:b", [][]byte{h, nil, p}); err != nil {
		t.Fatal(err)
	}
	copy(h, "XXXXX")
	copy(p, "YYYYYYY")
	w.n.Run(time.Second)
	if len(w.log) != 1 || w.log[0].data != "head:payload" || w.log[0].from != "sim:a" {
		t.Fatalf("got %+v", w.log)
	}
	if s := w.n.Stats(); s.Bytes != 12 || s.DeliveredBytes != 12 {
		t.Fatalf("stats %+v", s)
	}
}

func TestEndpointsUnknownAndClosed(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	w.n.SetDefault(Link{Delay: 10 * time.Millisecond})
	if w.eps["sim:a"].Local() != "sim:a" {
		t.Fatal("Local")
	}
	if _, err := w.n.Endpoint("sim:a"); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate endpoint: %v", err)
	}
	if _, err := w.n.Endpoint(""); err == nil {
		t.Fatal("empty address accepted")
	}
	w.send("sim:a", "sim:nobody", 1, 8)
	if s := w.n.Stats(); s.DroppedUnknown != 1 || s.InFlight != 0 {
		t.Fatalf("unknown: %+v", s)
	}

	w.send("sim:a", "sim:b", 2, 8) // b closes while this is in flight
	w.n.Run(time.Millisecond)
	if err := w.eps["sim:b"].Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.eps["sim:b"].Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.eps["sim:b"].Send("sim:a", [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send on closed: %v", err)
	}
	w.n.Run(time.Second)
	if s := w.n.Stats(); len(w.log) != 0 || s.DroppedClosed != 1 {
		t.Fatalf("closed: %+v, log %+v", s, w.log)
	}

	// The address is free again; a new endpoint there receives.
	w.attach("sim:b")
	w.send("sim:a", "sim:b", 3, 8)
	// An endpoint without a receiver drops what arrives.
	if _, err := w.n.Endpoint("sim:deaf"); err != nil {
		t.Fatal(err)
	}
	w.send("sim:a", "sim:deaf", 4, 8)
	w.n.Run(time.Second)
	if len(w.log) != 1 || w.log[0].seq != 3 || w.n.Stats().DroppedClosed != 2 {
		t.Fatalf("after re-attach: %+v %+v", w.log, w.n.Stats())
	}
	w.checkInvariant()
}

func TestLinkOverrides(t *testing.T) {
	w := newWorld(t, 1, "sim:a", "sim:b")
	w.n.SetDefault(Link{Delay: 10 * time.Millisecond})
	w.n.SetLink("sim:a", "sim:b", Link{Delay: 3 * time.Millisecond})
	w.send("sim:a", "sim:b", 1, 8)
	w.send("sim:b", "sim:a", 2, 8)
	w.n.Run(time.Second)
	if len(w.log) != 2 || w.log[0].at != 3*time.Millisecond || w.log[1].at != 10*time.Millisecond {
		t.Fatalf("got %+v", w.log)
	}
	for _, bad := range []Link{{Delay: -1}, {Jitter: -1}, {Loss: 1.5}, {Dup: -0.1}, {Reorder: 2}, {Bandwidth: -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetLink(%+v) did not panic", bad)
				}
			}()
			w.n.SetLink("sim:a", "sim:b", bad)
		}()
	}
}

// The accounting identity holds at every step of a chaotic run with every
// feature and fault in play.
func TestStatsInvariantUnderChaos(t *testing.T) {
	addrs := []stack.Addr{"sim:a", "sim:b", "sim:c", "sim:d"}
	for seed := range testseed.Each(t, testseed.Range(1, 10)...) {
		w := newWorld(t, seed, addrs...)
		r := w.n.Rand()
		w.n.SetDefault(Link{Delay: 2 * time.Millisecond, Jitter: time.Millisecond, Loss: 0.1, Dup: 0.1, Reorder: 0.1, Bandwidth: 1e6})
		for i := range 3000 {
			switch r.IntN(40) {
			case 0:
				w.n.Crash(addrs[r.IntN(4)])
			case 1:
				w.n.Restart(addrs[r.IntN(4)])
			case 2:
				w.n.Partition(addrs[:r.IntN(4)])
			case 3:
				w.n.Heal()
			default:
				to := addrs[r.IntN(4)]
				if r.IntN(20) == 0 {
					to = "sim:ghost"
				}
				w.send(addrs[r.IntN(4)], to, uint64(i), 8+r.IntN(200))
			}
			for range r.IntN(3) {
				w.n.Step()
				w.checkInvariant()
			}
		}
		w.n.Run(time.Minute)
		w.checkInvariant()
		if s := w.n.Stats(); s.InFlight != 0 || s.Delivered == 0 || s.DroppedCrash == 0 || s.DroppedPartition == 0 || s.DroppedUnknown == 0 {
			t.Fatalf("seed %d: %+v", seed, s)
		}
	}
}
