package smr

import (
	"context"
	"errors"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/wor"
)

func TestNextPos(t *testing.T) {
	if p := nextPos(pos{3, 5}, 8); p != (pos{3, 6}) {
		t.Fatal(p)
	}
	if p := nextPos(pos{3, 7}, 8); p != (pos{4, 0}) {
		t.Fatal(p)
	}
	if !(pos{3, 9}).less(pos{4, 0}) || (pos{4, 0}).less(pos{3, 9}) || (pos{4, 0}).less(pos{4, 0}) {
		t.Fatal("pos ordering")
	}
}

func TestPackBatch(t *testing.T) {
	// Everything fits: all of it.
	if n := packBatch([]int{10, 10, 10}, 1000); n != 3 {
		t.Fatalf("packed %d of 3 small commands", n)
	}
	// One command that fills the entry goes alone, the rest wait.
	big := maxCommand(256)
	if n := packBatch([]int{big, 1}, 256); n != 1 {
		t.Fatalf("packed %d behind a full-size command", n)
	}
	// The packed batch always encodes within the limit.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		max := 64 + rng.IntN(2000)
		var sizes []int
		var cmds [][]byte
		for range 1 + rng.IntN(40) {
			n := rng.IntN(maxCommand(max) + 1)
			sizes = append(sizes, n)
			cmds = append(cmds, make([]byte, n))
		}
		n := packBatch(sizes, max)
		if n < 1 || n > len(sizes) {
			t.Fatalf("packed %d of %d", n, len(sizes))
		}
		if b := encodeBatch(^uint64(0), ^uint64(0), cmds[:n]); len(b) > max {
			t.Fatalf("batch of %d commands (%v) encodes in %d > %d", n, sizes[:n], len(b), max)
		}
		if n < len(sizes) {
			if b := encodeBatch(0, 0, cmds[:n+1]); len(b) <= max-batchOverhead+3 {
				t.Fatalf("stopped at %d though the next command fits (%d bytes)", n, len(b))
			}
		}
	}
}

func TestFillPlan(t *testing.T) {
	// From the middle of segment 5 (size 1300) through segments 6 (size
	// 2) and 7 (size 256): every register once, in order, in batches of
	// at most fillBatch that never cross a segment.
	plan := fillPlan(pos{5, 1000}, []uint64{1300, 2, 256})
	want := []fillRange{{5, 1000, 1128}, {5, 1128, 1256}, {5, 1256, 1300}, {6, 0, 2}, {7, 0, 128}, {7, 128, 256}}
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan %v, want %v", plan, want)
	}
	if plan := fillPlan(pos{9, 0}, nil); len(plan) != 0 {
		t.Fatalf("nothing before the new segment, plan %v", plan)
	}
	if plan := fillPlan(pos{9, 64}, []uint64{64}); len(plan) != 0 {
		t.Fatalf("cursor at the segment's end, plan %v", plan)
	}
	for _, f := range fillPlan(pos{0, 7}, []uint64{wor.MaxOffset}) {
		if f.end-f.start > fillBatch || f.end <= f.start {
			t.Fatalf("bad batch %v", f)
		}
	}
}

// TestFirstLive runs the search against logs of random shape: trimmed,
// then allocated, then unallocated segments. It finds the first segment
// not trimmed in O(log n) probes.
func TestFirstLive(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 50)...) {
		rng := rand.New(rand.NewPCG(seed, 9))
		trimmed := uint64(rng.IntN(3)) * uint64(rng.IntN(100000))
		alloc := uint64(rng.IntN(50))
		probes := 0
		probe := func(_ context.Context, s uint64) (segState, error) {
			probes++
			switch {
			case s < trimmed:
				return segTrimmed, nil
			case s < trimmed+alloc:
				return segAllocated, nil
			}
			return segUnallocated, nil
		}
		got, st, err := firstLive(context.Background(), probe)
		if err != nil {
			t.Fatal(err)
		}
		wantSt := segAllocated
		if alloc == 0 {
			wantSt = segUnallocated
		}
		if got != trimmed || st != wantSt {
			t.Fatalf("seed %d: trimmed %d allocated %d: found %d (%v)", seed, trimmed, alloc, got, st)
		}
		if limit := 2*bits.Len64(trimmed) + 2; probes > limit {
			t.Fatalf("seed %d: %d probes for %d trimmed segments", seed, probes, trimmed)
		}
	}
	boom := errors.New("unreachable")
	if _, _, err := firstLive(context.Background(), func(context.Context, uint64) (segState, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("probe error not reported: %v", err)
	}
}

func TestSnapPolicy(t *testing.T) {
	base := snapPolicy{every: 100, cmdsSince: 100, bytesSince: 5000, lastSnapSize: 1000}
	if !base.due() {
		t.Fatal("not due after `every` commands")
	}
	p := base
	p.cmdsSince = 99
	if p.due() {
		t.Fatal("due before `every` commands")
	}
	p.entriesSince = snapEntries
	if !p.due() {
		t.Fatal("not due after snapEntries entries")
	}
	p = base
	p.bytesSince = 999
	if p.due() {
		t.Fatal("due although the log since is smaller than the last snapshot")
	}
	p.entriesSince = maxLiveEntries
	if !p.due() {
		t.Fatal("not due at maxLiveEntries")
	}
	// A snapshot of more registers than that: the live log may hold as
	// many before the next.
	p.lastSnapSize, p.lastSnapSlots = 100_000_000, 3*maxLiveEntries
	if p.due() {
		t.Fatal("due at maxLiveEntries although the last snapshot took three times as many registers")
	}
	p.entriesSince = 3 * maxLiveEntries
	if !p.due() {
		t.Fatal("not due once the live log holds as many registers as the last snapshot")
	}
}

func TestTrimPlan(t *testing.T) {
	logs, snaps := trimPlan(2, 1, snapRef{k: 4, at: pos{6, 3}})
	if !reflect.DeepEqual(logs, []uint64{2, 3, 4, 5}) || !reflect.DeepEqual(snaps, []uint64{1, 2, 3}) {
		t.Fatalf("trim %v and snapshots %v", logs, snaps)
	}
	// The segment holding the snapshot's last entry stays: the log after
	// the snapshot starts there.
	if logs, _ := trimPlan(6, 0, snapRef{at: pos{6, 0}}); len(logs) != 0 {
		t.Fatalf("trimmed %v", logs)
	}
}

func TestAllocLost(t *testing.T) {
	if !allocLost(3, logMeta{epoch: 4}) {
		t.Fatal("a newer leader's segment: follow it")
	}
	if allocLost(3, logMeta{epoch: 3}) {
		t.Fatal("the old leader's own next segment: it is alive, not a new leader")
	}
}

func TestSnapPace(t *testing.T) {
	for _, c := range []struct {
		written uint64
		elapsed time.Duration
		rate    float64
		want    time.Duration
	}{
		{0, 0, 1 << 20, 0},
		{1 << 20, 0, 1 << 20, time.Second}, // a second's worth at once: wait it out
		{1 << 20, 400 * time.Millisecond, 1 << 20, 600 * time.Millisecond},
		{1 << 20, 2 * time.Second, 1 << 20, 0}, // behind the pace: no wait
		{1 << 30, 0, 0, 0},                     // no limit
		{1 << 30, 0, -1, 0},
		{8 << 20, time.Second, 8 << 20, 0},
		{16 << 20, time.Second, 8 << 20, time.Second},
	} {
		if got := snapPace(c.written, c.elapsed, c.rate); got != c.want {
			t.Errorf("snapPace(%d, %v, %v) = %v, want %v", c.written, c.elapsed, c.rate, got, c.want)
		}
	}
}
