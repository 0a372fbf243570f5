package journal_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
	"strata/journal/lockmap"
)

// The objects of the model: bits, inodes and whole blocks, several sharing
// blocks so that commits of neighbours race with each other.
type objDef struct {
	addr journal.Addr
	sz   uint64
}

func modelObjects() []objDef {
	var objs []objDef
	for i := 0; i < 24; i++ { // bits packed in block 0, several per byte
		objs = append(objs, objDef{journal.Addr{Blkno: 0, Off: uint64(i * 5)}, 1})
	}
	for i := 0; i < 16; i++ { // 128-byte inodes, 8 per block in blocks 1-2
		objs = append(objs, objDef{journal.Addr{Blkno: 1 + uint64(i/8), Off: uint64(i%8) * 1024}, 1024})
	}
	for i := 0; i < 4; i++ { // 512-byte objects in block 3
		objs = append(objs, objDef{journal.Addr{Blkno: 3, Off: uint64(i) * 4096}, 4096})
	}
	for i := 0; i < 10; i++ { // whole blocks
		objs = append(objs, objDef{journal.Addr{Blkno: 4 + uint64(i)}, journal.BlockBits})
	}
	return objs
}

func zeroValue(o objDef) []byte { return make([]byte, max(o.sz/8, 1)) }

func randomValue(rng *rand.Rand, o objDef) []byte {
	v := zeroValue(o)
	if o.sz == 1 {
		v[0] = byte(rng.IntN(2))
		return v
	}
	for i := 0; i+8 <= len(v); i += 8 {
		u := rng.Uint64()
		for k := 0; k < 8; k++ {
			v[i+k] = byte(u >> (8 * k))
		}
	}
	return v
}

type write struct {
	obj int
	val []byte
}

type committed struct {
	seq    uint64
	writes []write
}

// history is what the workers did, as the model sees it.
type history struct {
	mu        sync.Mutex
	ops       []committed
	acked     atomic.Uint64 // every op with seq <= acked must survive
	completed atomic.Uint64 // highest seq whose Commit returned
}

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

type workload struct {
	objs    []objDef
	locks   *lockmap.LockMap
	live    [][]byte // latest committed value of each object, guarded by its lock
	hist    *history
	readErr atomic.Pointer[error]
}

// worker runs up to n random operations and stops at the first error (a
// crashed disk). Reads under the object's lock must return the live value.
func (w *workload) worker(j *journal.Journal, rng *rand.Rand, n int) {
	for k := 0; k < n; k++ {
		nobj := 1 + rng.IntN(4)
		keys := make([]uint64, nobj)
		for i := range keys {
			keys[i] = uint64(rng.IntN(len(w.objs)))
		}
		keys = w.locks.AcquireAll(keys)
		ok := w.oneOp(j, rng, keys)
		w.locks.ReleaseAll(keys)
		if !ok {
			return
		}
		if rng.IntN(20) == 0 {
			snap := w.hist.completed.Load()
			if err := j.Flush(); err != nil {
				return
			}
			atomicMax(&w.hist.acked, snap)
		}
	}
}

func (w *workload) oneOp(j *journal.Journal, rng *rand.Rand, keys []uint64) bool {
	op := j.Begin()
	var ws []write
	for _, key := range keys {
		o := w.objs[key]
		val := randomValue(rng, o)
		if rng.IntN(2) == 0 {
			b, err := op.ReadBuf(o.addr, o.sz)
			if err != nil {
				return false
			}
			if !bytes.Equal(b.Data, w.live[key]) {
				err := fmt.Errorf("object %d (%+v): read %x, last committed %x", key, o.addr, head(b.Data), head(w.live[key]))
				w.readErr.CompareAndSwap(nil, &err)
			}
			copy(b.Data, val)
			b.SetDirty()
		} else if err := op.OverWrite(o.addr, o.sz, val); err != nil {
			err = fmt.Errorf("OverWrite: %w", err)
			w.readErr.CompareAndSwap(nil, &err)
			return false
		}
		ws = append(ws, write{int(key), val})
	}
	wait := rng.IntN(2) == 0
	ok, err := op.Commit(wait)
	if seq := op.Seq(); seq != 0 {
		for _, wr := range ws {
			w.live[wr.obj] = wr.val
		}
		w.hist.mu.Lock()
		w.hist.ops = append(w.hist.ops, committed{seq, ws})
		w.hist.mu.Unlock()
		atomicMax(&w.hist.completed, seq)
		if ok && wait {
			atomicMax(&w.hist.acked, seq)
		}
	}
	return err == nil
}

func head(b []byte) []byte { return b[:min(len(b), 8)] }

// readAll returns every object's value in a journal.
func readAll(j *journal.Journal, objs []objDef) ([][]byte, error) {
	op := j.Begin()
	out := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := op.ReadBuf(o.addr, o.sz)
		if err != nil {
			return nil, err
		}
		out[i] = slices.Clone(b.Data)
	}
	return out, nil
}

// checkPrefix checks that got equals base after applying some prefix of ops
// (in seq order) that includes every op with seq <= acked. It returns the
// length of the matching prefix.
func checkPrefix(base, got [][]byte, ops []committed, acked uint64) (int, error) {
	slices.SortFunc(ops, func(a, b committed) int { return int(a.seq) - int(b.seq) })
	for i, op := range ops {
		if op.seq != uint64(i+1) {
			return 0, fmt.Errorf("commit sequence has a gap: op %d has seq %d", i, op.seq)
		}
	}
	state := make([][]byte, len(base))
	copy(state, base)
	diff := 0
	for i := range state {
		if !bytes.Equal(state[i], got[i]) {
			diff++
		}
	}
	for k := 0; ; k++ {
		if diff == 0 && uint64(k) >= acked {
			return k, nil
		}
		if k == len(ops) {
			break
		}
		for _, wr := range ops[k].writes {
			before := bytes.Equal(state[wr.obj], got[wr.obj])
			state[wr.obj] = wr.val
			after := bytes.Equal(state[wr.obj], got[wr.obj])
			if before && !after {
				diff++
			} else if !before && after {
				diff--
			}
		}
	}
	// Explain the first mismatch against the longest acknowledged prefix.
	return 0, fmt.Errorf("recovered state matches no prefix of the %d committed ops that includes the %d acknowledged ones", len(ops), acked)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestCrashModel runs random concurrent workloads on a CrashDisk, crashes at
// random points (keeping a random subset of the unbarriered writes), recovers
// (sometimes crashing during recovery too) and checks the recovered state
// against the model. It runs for STRATA_CRASH_SECONDS (default 45, 5 with
// -short), or STRATA_SEEDS iterations; STRATA_SEED replays one.
func TestCrashModel(t *testing.T) {
	seconds := envInt("STRATA_CRASH_SECONDS", 45)
	if testing.Short() {
		seconds = 5
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var crashes, recoveryCrashes, ops, acked int
	iter := 0
	// Each iteration has its own seed: a failure's replay runs it alone.
	for i, seed := range testseed.Stream(t, func(int) bool { return time.Now().Before(deadline) }) {
		iter++
		rng := rand.New(rand.NewPCG(seed, 0))
		st, err := crashIteration(rng)
		crashes += st.crashes
		recoveryCrashes += st.recoveryCrashes
		ops += st.ops
		acked += st.acked
		if err != nil {
			t.Fatalf("iteration %d (seed %d): %v", i, seed, err)
		}
	}
	t.Logf("%d iterations, %d crashes (%d during recovery), %d committed ops, %d acknowledged", iter, crashes, recoveryCrashes, ops, acked)
	if iter < 10 && !testseed.Chosen() {
		t.Fatalf("only %d iterations ran", iter)
	}
}

type iterStats struct{ crashes, recoveryCrashes, ops, acked int }

func crashIteration(rng *rand.Rand) (iterStats, error) {
	var st iterStats
	objs := modelObjects()
	logBlocks := uint64(8 + rng.IntN(40)) // small: wrap-around and full-log waits
	d := disk.NewCrashDisk(2 + logBlocks + 20)
	if err := journal.Format(d, logBlocks); err != nil {
		return st, err
	}
	base := make([][]byte, len(objs))
	for i, o := range objs {
		base[i] = zeroValue(o)
	}
	for gen := 0; gen < 3; gen++ {
		j, err := journal.Open(d, journal.Options{})
		if err != nil {
			return st, fmt.Errorf("gen %d: open: %w", gen, err)
		}
		w := &workload{objs: objs, locks: lockmap.New(), live: slices.Clone(base), hist: &history{}}
		d.CrashAfterWrites(int64(rng.IntN(300)))
		nworkers := 1 + rng.IntN(4)
		var wg sync.WaitGroup
		for k := 0; k < nworkers; k++ {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.worker(j, wrng, 10+wrng.IntN(60))
			}()
		}
		wg.Wait()
		if p := w.readErr.Load(); p != nil {
			return st, fmt.Errorf("gen %d: %w", gen, *p)
		}
		nd := d.CrashRandom(rng)
		st.crashes++
		j.Close() // fails: its disk is gone; must not hang
		// Recover, possibly crashing during recovery (idempotence).
		var j2 *journal.Journal
		for attempt := 0; ; attempt++ {
			if attempt < 3 && rng.IntN(3) == 0 {
				nd.CrashAfterWrites(int64(rng.IntN(12)))
			}
			j2, err = journal.Open(nd, journal.Options{})
			if err == nil {
				break
			}
			if !errors.Is(err, disk.ErrCrashed) {
				return st, fmt.Errorf("gen %d: recovery: %w", gen, err)
			}
			st.recoveryCrashes++
			nd = nd.CrashRandom(rng)
		}
		nd.CrashAfterWrites(-1)
		got, err := readAll(j2, objs)
		if err != nil {
			return st, err
		}
		w.hist.mu.Lock()
		ops := w.hist.ops
		w.hist.mu.Unlock()
		st.ops += len(ops)
		st.acked += int(w.hist.acked.Load())
		if _, err := checkPrefix(base, got, ops, w.hist.acked.Load()); err != nil {
			return st, fmt.Errorf("gen %d (log %d blocks): %w", gen, logBlocks, err)
		}
		if err := j2.Close(); err != nil {
			return st, fmt.Errorf("gen %d: close after recovery: %w", gen, err)
		}
		base, d = got, nd
	}
	return st, nil
}
