package journal_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
)

// The direct-write model: block 0 holds one pointer per slot (block number
// and version, 16 bytes); blocks 1..pool are data blocks. An operation
// allocates a block, writes it directly with a header naming the slot and
// version, points the slot at it through the log and frees the slot's old
// block. After any crash every pointer must find its own data (ordered
// mode), and every acknowledged pointer must be there.
const (
	directSlots = 16
	directPool  = 48
)

type directModel struct {
	mu    sync.Mutex
	j     *journal.Journal
	free  map[uint64]bool   // pool blocks free in memory
	freed map[uint64]uint64 // freed by an op committed at this position
	slot  [directSlots]struct {
		mu     sync.Mutex
		blk, v uint64
		acked  uint64 // highest version acknowledged as durable
	}
}

func slotAddr(s int) journal.Addr { return journal.Addr{Blkno: 0, Off: uint64(s) * 128} }

func directBlock(s int, v uint64, rng *rand.Rand) []byte {
	b := make([]byte, disk.BlockSize)
	for i := 16; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	binary.LittleEndian.PutUint64(b[0:], uint64(s))
	binary.LittleEndian.PutUint64(b[8:], v)
	return b
}

// alloc takes a free block that no recoverable state may reference.
func (m *directModel) alloc() (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	durable := m.j.DurablePos()
	for b := range m.free {
		if p, ok := m.freed[b]; ok && p > durable {
			continue
		}
		delete(m.free, b)
		delete(m.freed, b)
		return b, true
	}
	return 0, false
}

func (m *directModel) worker(rng *rand.Rand, n int) {
	for k := 0; k < n; k++ {
		s := rng.IntN(directSlots)
		sl := &m.slot[s]
		sl.mu.Lock()
		b, ok := m.alloc()
		if !ok {
			sl.mu.Unlock()
			time.Sleep(100 * time.Microsecond) // wait for a free to become durable
			continue
		}
		v := sl.v + 1
		op := m.j.Begin()
		err := op.WriteDirect(b, directBlock(s, v, rng))
		var ptr [16]byte
		binary.LittleEndian.PutUint64(ptr[:], b)
		binary.LittleEndian.PutUint64(ptr[8:], v)
		if err == nil {
			err = op.OverWrite(slotAddr(s), 128, ptr[:])
		}
		wait := rng.IntN(3) == 0
		if err == nil {
			_, err = op.Commit(wait)
		}
		m.mu.Lock()
		if op.Seq() == 0 { // never reached the log
			m.free[b] = true
		} else {
			if sl.blk != 0 {
				m.free[sl.blk] = true
				m.freed[sl.blk] = op.Pos()
			}
			sl.blk, sl.v = b, v
			if wait && err == nil {
				sl.acked = v
			}
		}
		m.mu.Unlock()
		sl.mu.Unlock()
		if err != nil {
			return // the disk crashed
		}
	}
}

// check verifies a recovered journal against the model before the crash.
func (m *directModel) check(j *journal.Journal) error {
	seen := map[uint64]int{}
	for s := range directSlots {
		op := j.Begin()
		buf, err := op.ReadBuf(slotAddr(s), 128)
		if err != nil {
			return err
		}
		b := binary.LittleEndian.Uint64(buf.Data)
		v := binary.LittleEndian.Uint64(buf.Data[8:])
		if v < m.slot[s].acked {
			return fmt.Errorf("slot %d: version %d recovered, %d was acknowledged", s, v, m.slot[s].acked)
		}
		if b == 0 {
			continue
		}
		if o, dup := seen[b]; dup {
			return fmt.Errorf("slots %d and %d both point at block %d", o, s, b)
		}
		seen[b] = s
		data, err := op.ReadBuf(journal.Addr{Blkno: b}, journal.BlockBits)
		if err != nil {
			return err
		}
		gs, gv := binary.LittleEndian.Uint64(data.Data), binary.LittleEndian.Uint64(data.Data[8:])
		if gs != uint64(s) || gv != v {
			return fmt.Errorf("slot %d version %d points at block %d, which holds slot %d version %d", s, v, b, gs, gv)
		}
	}
	return nil
}

// TestDirectWriteCrash crashes workloads of direct writes plus logged
// pointers at random points (keeping a random subset of the unbarriered
// writes) and checks that recovery never finds a pointer without its data
// and never loses an acknowledged one.
func TestDirectWriteCrash(t *testing.T) {
	seconds := envInt("STRATA_CRASH_SECONDS", 10)
	if testing.Short() {
		seconds = 3
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var iters, direct, logged int
	// Each iteration has its own seed: a failure's replay runs it alone.
	for i, seed := range testseed.Stream(t, func(i int) bool { return i < 20 || time.Now().Before(deadline) }) {
		iters++
		rng := rand.New(rand.NewPCG(seed, 0))
		logBlocks := uint64(8 + rng.IntN(24))
		d := disk.NewCrashDisk(2 + logBlocks + 1 + directPool)
		if err := journal.Format(d, logBlocks); err != nil {
			t.Fatal(err)
		}
		j, err := journal.Open(d, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := &directModel{j: j, free: map[uint64]bool{}, freed: map[uint64]uint64{}}
		for b := uint64(1); b <= directPool; b++ {
			m.free[b] = true
		}
		d.CrashAfterWrites(int64(rng.IntN(400)))
		var wg sync.WaitGroup
		for range 1 + rng.IntN(3) {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wg.Add(1)
			go func() { defer wg.Done(); m.worker(wrng, 20+wrng.IntN(60)) }()
		}
		wg.Wait()
		st := j.Stats()
		direct += int(st.DirectBlks)
		logged += int(st.LoggedBlks)
		nd := d.CrashRandom(rng)
		j.Close()
		j2, err := journal.Open(nd, journal.Options{})
		if err != nil {
			t.Fatalf("iteration %d (seed %d): recover: %v", i, seed, err)
		}
		if err := m.check(j2); err != nil {
			t.Fatalf("iteration %d (seed %d): %v", i, seed, err)
		}
		j2.Close()
	}
	t.Logf("%d iterations, %d blocks written directly, %d blocks logged", iters, direct, logged)
	if _, one := testseed.Replaying(t); direct == 0 && !one {
		t.Fatal("no block was written directly")
	}
}
