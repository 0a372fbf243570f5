package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"strata/internal/testseed"
)

// blockOf returns a block whose contents are derived from tag, so that
// distinct tags give distinct blocks.
func blockOf(tag uint64) []byte {
	b := make([]byte, BlockSize)
	for i := 0; i < BlockSize; i += 256 {
		binary.LittleEndian.PutUint64(b[i:], tag*0x9e3779b97f4a7c15+uint64(i))
	}
	return b
}

// mapModel is the reference: a map of written blocks, zeros elsewhere.
type mapModel struct {
	size   uint64
	blocks map[uint64][]byte
}

type errClass int

const (
	errNone errClass = iota
	errBadLen
	errRange
)

func (m *mapModel) classify(a uint64, n int) errClass {
	if n <= 0 || n%BlockSize != 0 {
		return errBadLen
	}
	nb := uint64(n / BlockSize)
	if a >= m.size || a+nb > m.size {
		return errRange
	}
	return errNone
}

func (m *mapModel) read(a uint64, n int) ([]byte, errClass) {
	if c := m.classify(a, n); c != errNone {
		return nil, c
	}
	out := make([]byte, n)
	for i := 0; i*BlockSize < n; i++ {
		if b, ok := m.blocks[a+uint64(i)]; ok {
			copy(out[i*BlockSize:], b)
		}
	}
	return out, errNone
}

func (m *mapModel) write(a uint64, data []byte) errClass {
	if c := m.classify(a, len(data)); c != errNone {
		return c
	}
	for i := 0; i*BlockSize < len(data); i++ {
		m.blocks[a+uint64(i)] = bytes.Clone(data[i*BlockSize : (i+1)*BlockSize])
	}
	return errNone
}

// checkClass checks that err is of the class the model predicts.
func checkClass(t *testing.T, what string, err error, want errClass) {
	t.Helper()
	switch want {
	case errNone:
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
	case errRange:
		if !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("%s: got error %v, want ErrOutOfRange", what, err)
		}
	case errBadLen:
		if err == nil {
			t.Fatalf("%s: bad buffer length accepted", what)
		}
		if errors.Is(err, ErrOutOfRange) || errors.Is(err, ErrClosed) || errors.Is(err, ErrCrashed) {
			t.Fatalf("%s: bad buffer length gave %v, want a length error", what, err)
		}
	}
}

func TestModelRandomOps(t *testing.T) {
	const size = 24
	for seed := range testseed.Each(t, testseed.Range(1, 5)...) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			fd, err := CreateFile(filepath.Join(t.TempDir(), "disk"), size, size/2)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			disks := []struct {
				name string
				d    Disk
			}{
				{"mem", NewMemDisk(size)},
				{"crash", NewCrashDisk(size)},
				{"file", fd},
			}
			for _, x := range disks {
				if got := x.d.Size(); got != size {
					t.Fatalf("%s: Size() = %d, want %d", x.name, got, size)
				}
			}
			m := &mapModel{size: size, blocks: map[uint64][]byte{}}
			badLens := []int{0, 1, BlockSize - 1, BlockSize + 1, 3*BlockSize - 7}
			tag := uint64(0)
			for step := 0; step < 250; step++ {
				// Address: mostly in range, sometimes at or beyond the end
				// (including values that would overflow a+n).
				var a uint64
				switch r := rng.IntN(20); {
				case r == 0:
					a = ^uint64(0) - uint64(rng.IntN(3))
				case r <= 2:
					a = size + uint64(rng.IntN(4))
				default:
					a = uint64(rng.IntN(size))
				}
				n := (1 + rng.IntN(4)) * BlockSize
				if rng.IntN(12) == 0 {
					n = badLens[rng.IntN(len(badLens))]
				}
				switch op := rng.IntN(10); {
				case op < 5: // write
					data := make([]byte, n)
					for i := 0; i*BlockSize+BlockSize <= n; i++ {
						tag++
						copy(data[i*BlockSize:], blockOf(tag))
					}
					want := m.write(a, data)
					// Valid writes are sometimes issued as a vector of
					// random whole-block pieces (pwritev on FileDisk, a
					// loop of Writes elsewhere).
					vec := want == errNone && rng.IntN(2) == 0
					var bufs [][]byte
					for rest := data; vec && len(rest) > 0; {
						k := (1 + rng.IntN(len(rest)/BlockSize)) * BlockSize
						bufs = append(bufs, rest[:k])
						rest = rest[k:]
					}
					for _, x := range disks {
						var err error
						if vec {
							err = WriteVec(x.d, a, bufs)
						} else {
							err = x.d.Write(a, data)
						}
						checkClass(t, fmt.Sprintf("step %d %s Write(%d, %d bytes, vector %v)", step, x.name, a, n, vec), err, want)
					}
					// The disks must have copied: scribbling on the caller's
					// buffer afterwards changes nothing.
					for i := range data {
						data[i] ^= 0xa5
					}
				case op < 9: // read
					want, wantErr := m.read(a, n)
					for _, x := range disks {
						buf := make([]byte, n)
						for i := range buf {
							buf[i] = 0xee // reads must overwrite, including zero blocks
						}
						err := x.d.Read(a, buf)
						what := fmt.Sprintf("step %d %s Read(%d, %d bytes)", step, x.name, a, n)
						checkClass(t, what, err, wantErr)
						if err == nil && !bytes.Equal(buf, want) {
							t.Fatalf("%s: contents differ from the model", what)
						}
						if err == nil {
							// Scribbling on the returned buffer must not
							// reach the disk.
							clear(buf)
						}
					}
				default:
					for _, x := range disks {
						if err := x.d.Barrier(); err != nil {
							t.Fatalf("step %d %s Barrier: %v", step, x.name, err)
						}
					}
				}
			}
			// Final full comparison, block by block and in one read.
			want, _ := m.read(0, size*BlockSize)
			for _, x := range disks {
				buf := make([]byte, size*BlockSize)
				if err := x.d.Read(0, buf); err != nil {
					t.Fatalf("%s: full read: %v", x.name, err)
				}
				if !bytes.Equal(buf, want) {
					for b := 0; b < size; b++ {
						if !bytes.Equal(buf[b*BlockSize:(b+1)*BlockSize], want[b*BlockSize:(b+1)*BlockSize]) {
							t.Errorf("%s: block %d differs from the model", x.name, b)
						}
					}
					t.FailNow()
				}
			}
		})
	}
}

func TestCheckRangeEdges(t *testing.T) {
	d := NewMemDisk(4)
	buf := make([]byte, BlockSize)
	if err := d.Read(3, buf); err != nil {
		t.Fatalf("read of the last block: %v", err)
	}
	if err := d.Write(3, buf); err != nil {
		t.Fatalf("write of the last block: %v", err)
	}
	if err := d.Read(0, make([]byte, 4*BlockSize)); err != nil {
		t.Fatalf("read of the whole disk: %v", err)
	}
	for _, c := range []struct {
		a uint64
		n int
	}{{4, BlockSize}, {3, 2 * BlockSize}, {0, 5 * BlockSize}, {^uint64(0), BlockSize}, {^uint64(0) - 2, 4 * BlockSize}} {
		if err := d.Read(c.a, make([]byte, c.n)); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Read(%d, %d bytes) = %v, want ErrOutOfRange", c.a, c.n, err)
		}
		if err := d.Write(c.a, make([]byte, c.n)); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Write(%d, %d bytes) = %v, want ErrOutOfRange", c.a, c.n, err)
		}
	}
	if err := d.Read(0, nil); err == nil {
		t.Error("Read with a nil buffer succeeded")
	}
	if err := d.Write(0, nil); err == nil {
		t.Error("Write with a nil buffer succeeded")
	}
}

func TestMemDiskClose(t *testing.T) {
	d := NewMemDisk(2)
	if err := d.Write(0, blockOf(1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if err := d.Read(0, make([]byte, BlockSize)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if err := d.Write(0, make([]byte, BlockSize)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := d.Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("Barrier after Close = %v, want ErrClosed", err)
	}
}

// readAll returns every block of d.
func readAll(t *testing.T, d Disk) [][]byte {
	t.Helper()
	out := make([][]byte, d.Size())
	for b := range out {
		out[b] = make([]byte, BlockSize)
		if err := d.Read(uint64(b), out[b]); err != nil {
			t.Fatalf("read block %d: %v", b, err)
		}
	}
	return out
}

func zeroBlock() []byte { return make([]byte, BlockSize) }

// crashScenario writes a first phase, barriers, then writes a second phase
// (overwriting some barriered blocks, several times, and writing fresh ones).
// It returns the durable image and, for each block, the values written
// since the barrier in order.
func crashScenario(t *testing.T, d *CrashDisk, rng *rand.Rand, tag *uint64) (durable [][]byte, since map[uint64][][]byte) {
	t.Helper()
	size := d.Size()
	durable = make([][]byte, size)
	for b := range durable {
		durable[b] = zeroBlock()
	}
	write := func(a uint64, n int) [][]byte {
		data := make([]byte, n*BlockSize)
		var blocks [][]byte
		for i := 0; i < n; i++ {
			*tag++
			blk := blockOf(*tag)
			copy(data[i*BlockSize:], blk)
			blocks = append(blocks, blk)
		}
		if err := d.Write(a, data); err != nil {
			t.Fatalf("Write(%d, %d blocks): %v", a, n, err)
		}
		return blocks
	}
	for i := 0; i < 6; i++ {
		n := 1 + rng.IntN(3)
		a := uint64(rng.IntN(int(size) - n + 1))
		for j, blk := range write(a, n) {
			durable[a+uint64(j)] = blk
		}
	}
	if err := d.Barrier(); err != nil {
		t.Fatal(err)
	}
	since = map[uint64][][]byte{}
	for i := 0; i < 8; i++ {
		n := 1 + rng.IntN(3)
		// A narrow address range so that blocks get several writes.
		a := uint64(rng.IntN(int(size)/2 - n + 1))
		for j, blk := range write(a, n) {
			since[a+uint64(j)] = append(since[a+uint64(j)], blk)
		}
	}
	return durable, since
}

func TestCrashNoneAndAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var tag uint64
	for iter := 0; iter < 20; iter++ {
		for _, all := range []bool{false, true} {
			d := NewCrashDisk(12)
			durable, since := crashScenario(t, d, rng, &tag)
			latest := make([][]byte, len(durable))
			copy(latest, durable)
			for b, ws := range since {
				latest[b] = ws[len(ws)-1]
			}
			// Reads before the crash see the latest writes.
			for b, got := range readAll(t, d) {
				if !bytes.Equal(got, latest[b]) {
					t.Fatalf("iter %d: before crash, block %d is not the latest write", iter, b)
				}
			}
			var nd *CrashDisk
			want := durable
			if all {
				nd = d.CrashAll()
				want = latest
			} else {
				nd = d.CrashNone()
			}
			for b, got := range readAll(t, nd) {
				if !bytes.Equal(got, want[b]) {
					t.Fatalf("iter %d (all=%v): after crash, block %d is wrong", iter, all, b)
				}
			}
			if blocks, _ := nd.PendingBlocks(); len(blocks) != 0 {
				t.Fatalf("fresh disk after crash has pending blocks %v", blocks)
			}
			// The successor is a working disk whose state is durable: a
			// second crash without writes keeps it.
			nd2 := nd.CrashNone()
			for b, got := range readAll(t, nd2) {
				if !bytes.Equal(got, want[b]) {
					t.Fatalf("iter %d: second crash lost block %d", iter, b)
				}
			}
		}
	}
}

func TestCrashRandomKeepsDurableOrWritten(t *testing.T) {
	// For every pending block, the post-crash value is the durable one or
	// one of the writes since the barrier; other blocks are durable. Across
	// seeds every choice (durable, first, middle, last write) must occur.
	seen := map[string]int{}
	var tag uint64
	for seed := range testseed.Each(t, testseed.Range(0, 200)...) {
		rng := rand.New(rand.NewPCG(seed, 99))
		d := NewCrashDisk(10)
		durable, since := crashScenario(t, d, rng, &tag)
		blocks, writes := d.PendingBlocks()
		if len(blocks) != len(since) {
			t.Fatalf("seed %d: PendingBlocks lists %d blocks, %d were written", seed, len(blocks), len(since))
		}
		for i, b := range blocks {
			if writes[i] != len(since[b]) {
				t.Fatalf("seed %d: block %d has %d pending writes, want %d", seed, b, writes[i], len(since[b]))
			}
		}
		nd := d.CrashRandom(rand.New(rand.NewPCG(seed, 1)))
		for b, got := range readAll(t, nd) {
			ws, pending := since[uint64(b)]
			if !pending {
				if !bytes.Equal(got, durable[b]) {
					t.Fatalf("seed %d: block %d had no pending write but changed", seed, b)
				}
				continue
			}
			k := -1
			if bytes.Equal(got, durable[b]) {
				k = 0
			}
			for i, w := range ws {
				if bytes.Equal(got, w) {
					k = i + 1
				}
			}
			switch {
			case k < 0:
				t.Fatalf("seed %d: block %d holds a value that was never written to it", seed, b)
			case k == 0:
				seen["durable"]++
			case k == len(ws):
				seen["last"]++
			case k == 1:
				seen["first"]++
			default:
				seen["middle"]++
			}
		}
		if err := d.Read(0, make([]byte, BlockSize)); !errors.Is(err, ErrCrashed) {
			t.Fatalf("seed %d: Read on the crashed disk = %v, want ErrCrashed", seed, err)
		}
	}
	for _, k := range []string{"durable", "first", "middle", "last"} {
		if _, one := testseed.Replaying(t); seen[k] == 0 && !one {
			t.Errorf("no crash kept the %s value of a block (counts %v)", k, seen)
		}
	}
}

func TestCrashPickArguments(t *testing.T) {
	d := NewCrashDisk(8)
	w := func(a uint64, tags ...uint64) {
		data := make([]byte, 0, len(tags)*BlockSize)
		for _, tg := range tags {
			data = append(data, blockOf(tg)...)
		}
		if err := d.Write(a, data); err != nil {
			t.Fatal(err)
		}
	}
	w(6, 100)
	if err := d.Barrier(); err != nil {
		t.Fatal(err)
	}
	w(5, 1, 2) // blocks 5, 6
	w(2, 3)    // block 2
	w(6, 4)    // block 6 again
	w(5, 5, 6) // blocks 5, 6 again
	type call struct {
		i     int
		block uint64
		n     int
	}
	var calls []call
	picks := map[uint64]int{5: 1, 6: 2, 2: 0}
	nd := d.Crash(func(i int, block uint64, n int) int {
		calls = append(calls, call{i, block, n})
		return picks[block]
	})
	want := []call{{0, 5, 2}, {1, 6, 3}, {2, 2, 1}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("pick calls = %v, want %v (first-write order, write counts)", calls, want)
	}
	got := readAll(t, nd)
	expect := map[int][]byte{5: blockOf(1), 6: blockOf(4), 2: zeroBlock()}
	for b, v := range expect {
		if !bytes.Equal(got[b], v) {
			t.Errorf("block %d: wrong value after pick %d", b, picks[uint64(b)])
		}
	}
	// An out-of-range pick keeps the durable value.
	nd = d.Crash(func(_ int, block uint64, n int) int { return n + 1 })
	got = readAll(t, nd)
	if !bytes.Equal(got[6], blockOf(100)) || !bytes.Equal(got[5], zeroBlock()) {
		t.Error("out-of-range pick did not keep the durable value")
	}
}

func TestCrashedDiskFails(t *testing.T) {
	d := NewCrashDisk(4)
	if err := d.Write(0, blockOf(1)); err != nil {
		t.Fatal(err)
	}
	nd := d.CrashAll()
	buf := make([]byte, BlockSize)
	if err := d.Read(0, buf); !errors.Is(err, ErrCrashed) {
		t.Errorf("Read after Crash = %v, want ErrCrashed", err)
	}
	if err := d.Write(0, buf); !errors.Is(err, ErrCrashed) {
		t.Errorf("Write after Crash = %v, want ErrCrashed", err)
	}
	if err := d.Barrier(); !errors.Is(err, ErrCrashed) {
		t.Errorf("Barrier after Crash = %v, want ErrCrashed", err)
	}
	// The successor works.
	if err := nd.Write(1, blockOf(2)); err != nil {
		t.Fatalf("successor Write: %v", err)
	}
	if err := nd.Read(0, buf); err != nil || !bytes.Equal(buf, blockOf(1)) {
		t.Fatalf("successor Read: %v, or wrong data", err)
	}
	// Stop crashes without a successor.
	nd.Stop()
	if err := nd.Read(0, buf); !errors.Is(err, ErrCrashed) {
		t.Errorf("Read after Stop = %v, want ErrCrashed", err)
	}
}

func TestCrashAfterWrites(t *testing.T) {
	for n := int64(0); n <= 6; n++ {
		d := NewCrashDisk(8)
		d.CrashAfterWrites(n)
		var err error
		written := int64(0)
		// Writes of 1, 2, 3 blocks: block writes are counted one by one.
		for i, size := range []int{1, 2, 3, 1} {
			data := make([]byte, 0, size*BlockSize)
			for j := 0; j < size; j++ {
				data = append(data, blockOf(uint64(written)+uint64(j)+1)...)
			}
			err = d.Write(uint64(i*2), data)
			if err != nil {
				break
			}
			written += int64(size)
		}
		if !errors.Is(err, ErrCrashed) {
			t.Fatalf("n=%d: write sequence ended with %v, want ErrCrashed", n, err)
		}
		if d.Writes != n {
			t.Errorf("n=%d: %d block writes counted, want exactly %d", n, d.Writes, n)
		}
		if err := d.Read(0, make([]byte, BlockSize)); !errors.Is(err, ErrCrashed) {
			t.Errorf("n=%d: Read after the limit = %v, want ErrCrashed", n, err)
		}
		if err := d.Barrier(); !errors.Is(err, ErrCrashed) {
			t.Errorf("n=%d: Barrier after the limit = %v, want ErrCrashed", n, err)
		}
		// Exactly the first n block writes are pending, the rest never
		// happened.
		_, ws := d.PendingBlocks()
		total := 0
		for _, w := range ws {
			total += w
		}
		if int64(total) != n {
			t.Errorf("n=%d: %d pending block writes, want %d", n, total, n)
		}
		got := readAll(t, d.CrashAll())
		nonzero := 0
		for _, b := range got {
			if !bytes.Equal(b, zeroBlock()) {
				nonzero++
			}
		}
		if int64(nonzero) != n {
			t.Errorf("n=%d: %d blocks survive CrashAll, want %d", n, nonzero, n)
		}
	}
	// No limit: a negative value.
	d := NewCrashDisk(2)
	d.CrashAfterWrites(-1)
	for i := 0; i < 100; i++ {
		if err := d.Write(0, make([]byte, 2*BlockSize)); err != nil {
			t.Fatalf("write %d with no limit: %v", i, err)
		}
	}
	// Barriers do not count as writes.
	d = NewCrashDisk(2)
	d.CrashAfterWrites(1)
	for i := 0; i < 3; i++ {
		if err := d.Barrier(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Write(0, blockOf(1)); err != nil {
		t.Fatalf("first write with limit 1: %v", err)
	}
	if err := d.Write(1, blockOf(2)); !errors.Is(err, ErrCrashed) {
		t.Fatalf("second write with limit 1 = %v, want ErrCrashed", err)
	}
}

func TestCrashEnumerationCount(t *testing.T) {
	d := NewCrashDisk(6)
	tag := uint64(1000)
	// Durable values for blocks 0..4.
	for b := uint64(0); b < 5; b++ {
		tag++
		if err := d.Write(b, blockOf(tag)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Barrier(); err != nil {
		t.Fatal(err)
	}
	// Pending: block 1 ×1, block 3 ×2, block 4 ×3, block 5 (never durable) ×2.
	for _, b := range []uint64{4, 1, 3, 4, 5, 3, 4, 5} {
		tag++
		if err := d.Write(b, blockOf(tag)); err != nil {
			t.Fatal(err)
		}
	}
	blocks, writes := d.PendingBlocks()
	if fmt.Sprint(blocks) != "[4 1 3 5]" || fmt.Sprint(writes) != "[3 1 2 2]" {
		t.Fatalf("PendingBlocks = %v %v, want [4 1 3 5] [3 1 2 2]", blocks, writes)
	}
	want := 1
	for _, n := range writes {
		want *= n + 1
	}
	states := map[string]bool{}
	choice := make([]int, len(blocks))
	for {
		nd := d.Crash(func(i int, block uint64, n int) int {
			if block != blocks[i] || n != writes[i] {
				t.Fatalf("pick(%d, %d, %d) does not match PendingBlocks", i, block, n)
			}
			return choice[i]
		})
		var key bytes.Buffer
		for _, b := range readAll(t, nd) {
			key.Write(b[:16])
		}
		states[key.String()] = true
		// Next choice vector (mixed radix).
		i := 0
		for ; i < len(choice); i++ {
			choice[i]++
			if choice[i] <= writes[i] {
				break
			}
			choice[i] = 0
		}
		if i == len(choice) {
			break
		}
	}
	if len(states) != want {
		t.Fatalf("enumeration gave %d distinct states, want %d", len(states), want)
	}
}

func TestFileDiskOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("OpenFile on a missing file succeeded")
	}
	for _, n := range []int{0, 1, BlockSize - 1} {
		p := filepath.Join(dir, fmt.Sprint("small", n))
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
		if d, err := OpenFile(p); err == nil {
			d.Close()
			t.Errorf("OpenFile on a %d-byte file succeeded", n)
		}
	}
	if _, err := OpenFile(dir); err == nil {
		t.Error("OpenFile on a directory succeeded")
	}
	if d, err := CreateFile(filepath.Join(dir, "zero"), 0, 0); err == nil {
		d.Close()
		t.Error("CreateFile with 0 blocks succeeded")
	}
	if _, err := CreateFile(filepath.Join(dir, "nodir", "x"), 4, 0); err == nil {
		t.Error("CreateFile in a missing directory succeeded")
	}
}

func TestFileDiskCreateSizeAndZero(t *testing.T) {
	p := filepath.Join(t.TempDir(), "disk")
	// Pre-existing garbage must be truncated away.
	if err := os.WriteFile(p, bytes.Repeat([]byte{0xff}, 10*BlockSize), 0o644); err != nil {
		t.Fatal(err)
	}
	// zeroBlocks larger than blocks is clamped.
	d, err := CreateFile(p, 5, 100)
	if err != nil {
		t.Fatal(err)
	}
	if d.Size() != 5 {
		t.Fatalf("Size() = %d, want 5", d.Size())
	}
	for b, got := range readAll(t, d) {
		if !bytes.Equal(got, zeroBlock()) {
			t.Fatalf("block %d of a fresh file is not zero", b)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 5*BlockSize {
		t.Fatalf("file is %d bytes, want %d", st.Size(), 5*BlockSize)
	}
}

func TestFileDiskCloseAndReopen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "disk")
	d, err := CreateFile(p, 6, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(1, append(blockOf(1), blockOf(2)...)); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(5, blockOf(3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	buf := make([]byte, BlockSize)
	if err := d.Read(0, buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if err := d.Write(0, buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := d.Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("Barrier after Close = %v, want ErrClosed", err)
	}

	d2, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.Size() != 6 {
		t.Fatalf("reopened Size() = %d, want 6", d2.Size())
	}
	want := [][]byte{zeroBlock(), blockOf(1), blockOf(2), zeroBlock(), zeroBlock(), blockOf(3)}
	for b, got := range readAll(t, d2) {
		if !bytes.Equal(got, want[b]) {
			t.Errorf("reopened block %d differs from what was written", b)
		}
	}
	// Range checks apply to the reopened size.
	if err := d2.Read(6, buf); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("Read(6) on a 6-block file = %v, want ErrOutOfRange", err)
	}
}

func TestFileDiskPartialTrailingBlock(t *testing.T) {
	// A file whose size is not a multiple of the block size: OpenFile must
	// not panic; if it accepts the file, the partial block is not
	// addressable.
	p := filepath.Join(t.TempDir(), "odd")
	if err := os.WriteFile(p, make([]byte, 2*BlockSize+100), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := OpenFile(p)
	if err != nil {
		return
	}
	defer d.Close()
	if d.Size() != 2 {
		t.Fatalf("Size() = %d for a file of 2 blocks and 100 bytes", d.Size())
	}
	if err := d.Read(2, make([]byte, BlockSize)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Read of the partial block = %v, want ErrOutOfRange", err)
	}
}

func TestWriteVecErrors(t *testing.T) {
	fd, err := CreateFile(filepath.Join(t.TempDir(), "disk"), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	for _, x := range []struct {
		name string
		d    Disk
	}{{"mem", NewMemDisk(4)}, {"crash", NewCrashDisk(4)}, {"file", fd}} {
		blk := blockOf(1)
		if err := WriteVec(x.d, 0, nil); err != nil {
			t.Errorf("%s: empty vector: %v", x.name, err)
		}
		if err := WriteVec(x.d, 4, [][]byte{blk}); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("%s: vector at the end of the disk = %v, want ErrOutOfRange", x.name, err)
		}
		if err := WriteVec(x.d, ^uint64(0), [][]byte{blk, blk}); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("%s: vector at max address = %v, want ErrOutOfRange", x.name, err)
		}
		for _, bad := range [][][]byte{{blk[:100]}, {{}}, {blk[:BlockSize-1], blk}} {
			if err := WriteVec(x.d, 0, bad); err == nil || errors.Is(err, ErrOutOfRange) {
				t.Errorf("%s: vector with a bad piece = %v, want a length error", x.name, err)
			}
		}
		// Nothing above was written.
		for b, got := range readAll(t, x.d) {
			if !bytes.Equal(got, zeroBlock()) {
				t.Errorf("%s: block %d written by a failed vector write", x.name, b)
			}
		}
		// A vector ending exactly at the end of the disk.
		if err := WriteVec(x.d, 1, [][]byte{append(blockOf(2), blockOf(3)...), blockOf(4)}); err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		want := [][]byte{zeroBlock(), blockOf(2), blockOf(3), blockOf(4)}
		for b, got := range readAll(t, x.d) {
			if !bytes.Equal(got, want[b]) {
				t.Errorf("%s: block %d wrong after a vector write", x.name, b)
			}
		}
	}
	_ = fd.Close()
	if err := fd.WriteVec(0, [][]byte{blockOf(1)}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteVec after Close = %v, want ErrClosed", err)
	}
}

func TestFileDiskWriteVecManyBuffers(t *testing.T) {
	// More one-block pieces than one pwritev call takes (IOV_MAX 1024).
	const n = 1500
	fd, err := CreateFile(filepath.Join(t.TempDir(), "disk"), n+3, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = blockOf(uint64(i) + 1)
	}
	if err := fd.WriteVec(2, bufs); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, fd)
	for b := range got {
		want := zeroBlock()
		if b >= 2 && b < n+2 {
			want = blockOf(uint64(b - 1))
		}
		if !bytes.Equal(got[b], want) {
			t.Fatalf("block %d wrong after a %d-piece vector write", b, n)
		}
	}
}

func TestCrashSnapshot(t *testing.T) {
	d := NewCrashDisk(4)
	if err := d.Write(0, blockOf(1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Barrier(); err != nil {
		t.Fatal(err)
	}
	for _, tg := range []uint64{2, 3} {
		if err := d.Write(0, blockOf(tg)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Write(1, blockOf(4)); err != nil {
		t.Fatal(err)
	}
	for k0 := 0; k0 <= 2; k0++ {
		for k1 := 0; k1 <= 1; k1++ {
			pick := func(i int, _ uint64, _ int) int { return []int{k0, k1}[i] }
			snap := readAll(t, d.Snapshot(pick))
			want0 := [][]byte{blockOf(1), blockOf(2), blockOf(3)}[k0]
			want1 := [][]byte{zeroBlock(), blockOf(4)}[k1]
			if !bytes.Equal(snap[0], want0) || !bytes.Equal(snap[1], want1) {
				t.Fatalf("Snapshot with picks %d,%d: wrong contents", k0, k1)
			}
		}
	}
	// The disk keeps running, with its pending writes intact.
	if err := d.Write(2, blockOf(5)); err != nil {
		t.Fatalf("Write after Snapshot: %v", err)
	}
	if blocks, _ := d.PendingBlocks(); len(blocks) != 3 {
		t.Fatalf("pending blocks after Snapshot: %v", blocks)
	}
	got := readAll(t, d.CrashAll())
	if !bytes.Equal(got[0], blockOf(3)) || !bytes.Equal(got[1], blockOf(4)) || !bytes.Equal(got[2], blockOf(5)) {
		t.Fatal("CrashAll after Snapshot lost writes")
	}
}
