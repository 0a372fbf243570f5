package circular

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"strata/internal/testseed"
	"strata/journal/disk"
)

const bs = disk.BlockSize

// ---------------------------------------------------------------- headers

func encHeader(h Header, which uint32) []byte {
	buf := make([]byte, bs)
	EncodeHeader(h, which, buf)
	return buf
}

// fixHeaderCRC recomputes the header checksum after a deliberate edit.
func fixHeaderCRC(buf []byte) {
	binary.LittleEndian.PutUint32(buf[48:], crc32.Checksum(buf[:48], crc32.MakeTable(crc32.Castagnoli)))
}

func TestHeaderRoundTrip(t *testing.T) {
	hs := []Header{
		{ID: 1, LogBlocks: MinLogBlocks, DiskBlocks: RingStart + MinLogBlocks + 1, Pos: 0},
		{ID: 0xdeadbeefcafef00d, LogBlocks: 16, DiskBlocks: 100, Pos: 12345},
		{ID: ^uint64(0), LogBlocks: maxLogSize, DiskBlocks: 1 << 40, Pos: ^uint64(0)},
	}
	for _, h := range hs {
		for _, which := range []uint32{InstallHdrBlock, LogHdrBlock} {
			buf := encHeader(h, which)
			got, err := DecodeHeader(buf, which)
			if err != nil {
				t.Fatalf("decode %+v as block %d: %v", h, which, err)
			}
			if got != h {
				t.Fatalf("block %d: decoded %+v, encoded %+v", which, got, h)
			}
			// Only the first hdrLen bytes matter; a dirty buffer is cleared.
			dirty := bytes.Repeat([]byte{0x5a}, bs)
			EncodeHeader(h, which, dirty)
			if !bytes.Equal(dirty, buf) {
				t.Fatalf("EncodeHeader into a dirty buffer differs from a fresh encoding")
			}
			if !bytes.Equal(buf[hdrLen:], make([]byte, bs-hdrLen)) {
				t.Fatalf("EncodeHeader left non-zero bytes past the header")
			}
		}
	}
	// The two roles encode differently.
	if bytes.Equal(encHeader(hs[1], 0), encHeader(hs[1], 1)) {
		t.Fatal("headers for block 0 and block 1 are identical")
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	h := Header{ID: 77, LogBlocks: 16, DiskBlocks: 64, Pos: 5}
	isCorrupt := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", what, err)
		}
	}

	t.Run("magic", func(t *testing.T) {
		// Block 0 without the magic is an unformatted disk; block 1
		// without it is damage.
		zero := make([]byte, bs)
		if _, err := DecodeHeader(zero, InstallHdrBlock); !errors.Is(err, ErrNotFormatted) || errors.Is(err, ErrCorrupt) {
			t.Errorf("zero block 0: got %v, want ErrNotFormatted", err)
		}
		isCorrupt(t, "zero block 1", func() error { _, err := DecodeHeader(zero, LogHdrBlock); return err }())
		buf := encHeader(h, 0)
		buf[3] ^= 0x10
		if _, err := DecodeHeader(buf, InstallHdrBlock); !errors.Is(err, ErrNotFormatted) {
			t.Errorf("bad magic block 0: got %v, want ErrNotFormatted", err)
		}
	})

	t.Run("flipped byte", func(t *testing.T) {
		for _, which := range []uint32{0, 1} {
			for i := 0; i < hdrLen; i++ {
				for _, mask := range []byte{0x01, 0x80, 0xff} {
					buf := encHeader(h, which)
					buf[i] ^= mask
					_, err := DecodeHeader(buf, which)
					what := fmt.Sprintf("block %d byte %d ^ %#x", which, i, mask)
					if which == InstallHdrBlock && i < 8 {
						if !errors.Is(err, ErrNotFormatted) {
							t.Errorf("%s: got %v, want ErrNotFormatted", what, err)
						}
						continue
					}
					isCorrupt(t, what, err)
				}
			}
		}
	})

	t.Run("role", func(t *testing.T) {
		_, err := DecodeHeader(encHeader(h, LogHdrBlock), InstallHdrBlock)
		isCorrupt(t, "block 1 header read as block 0", err)
		_, err = DecodeHeader(encHeader(h, InstallHdrBlock), LogHdrBlock)
		isCorrupt(t, "block 0 header read as block 1", err)
	})

	t.Run("version", func(t *testing.T) {
		buf := encHeader(h, 0)
		binary.LittleEndian.PutUint32(buf[8:], version+1)
		fixHeaderCRC(buf)
		_, err := DecodeHeader(buf, 0)
		isCorrupt(t, "future version", err)
	})

	t.Run("short", func(t *testing.T) {
		for _, n := range []int{0, 8, hdrLen - 1} {
			_, err := DecodeHeader(encHeader(h, 1)[:n], 1)
			isCorrupt(t, fmt.Sprintf("%d-byte buffer", n), err)
		}
		// Exactly hdrLen bytes is enough.
		if got, err := DecodeHeader(encHeader(h, 1)[:hdrLen], 1); err != nil || got != h {
			t.Errorf("%d-byte buffer: %+v, %v", hdrLen, got, err)
		}
	})

	t.Run("geometry", func(t *testing.T) {
		for _, c := range []struct {
			h  Header
			ok bool
		}{
			{Header{ID: 1, LogBlocks: 0, DiskBlocks: 100}, false},
			{Header{ID: 1, LogBlocks: MinLogBlocks - 1, DiskBlocks: 100}, false},
			{Header{ID: 1, LogBlocks: MinLogBlocks, DiskBlocks: 100}, true},
			{Header{ID: 1, LogBlocks: maxLogSize, DiskBlocks: maxLogSize + RingStart + 1}, true},
			{Header{ID: 1, LogBlocks: maxLogSize + 1, DiskBlocks: 1 << 40}, false},
			{Header{ID: 1, LogBlocks: ^uint64(0), DiskBlocks: ^uint64(0)}, false},
			{Header{ID: 1, LogBlocks: 16, DiskBlocks: RingStart + 16}, false},    // no data region
			{Header{ID: 1, LogBlocks: 16, DiskBlocks: 5}, false},                 // smaller than the ring
			{Header{ID: 1, LogBlocks: 16, DiskBlocks: 0}, false},                 // empty
			{Header{ID: 1, LogBlocks: 16, DiskBlocks: RingStart + 16 + 1}, true}, // one data block
		} {
			for _, which := range []uint32{0, 1} {
				got, err := DecodeHeader(encHeader(c.h, which), which)
				if c.ok {
					if err != nil || got != c.h {
						t.Errorf("%+v block %d: got %+v, %v; want it accepted", c.h, which, got, err)
					}
				} else {
					isCorrupt(t, fmt.Sprintf("%+v block %d", c.h, which), err)
				}
			}
		}
	})
}

func TestFormatValidation(t *testing.T) {
	d := disk.NewMemDisk(RingStart + 16 + 1)
	if _, err := Format(d, MinLogBlocks-1, 1); err == nil {
		t.Error("Format with a too-small log succeeded")
	}
	if _, err := Format(d, maxLogSize+1, 1); err == nil {
		t.Error("Format with a too-large log succeeded")
	}
	if _, err := Format(d, 17, 1); err == nil {
		t.Error("Format leaving no data region succeeded")
	}
	// The failed calls wrote nothing.
	if _, _, _, err := Recover(d); !errors.Is(err, ErrNotFormatted) {
		t.Fatalf("Recover after failed Formats = %v, want ErrNotFormatted", err)
	}
	h, err := Format(d, 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Header{ID: 9, LogBlocks: 16, DiskBlocks: RingStart + 17}); h != want {
		t.Fatalf("Format returned %+v, want %+v", h, want)
	}
	if h.DataStart() != RingStart+16 {
		t.Fatalf("DataStart = %d", h.DataStart())
	}
	buf := make([]byte, 2*bs)
	if err := d.Read(0, buf); err != nil {
		t.Fatal(err)
	}
	for which := uint32(0); which < 2; which++ {
		got, err := DecodeHeader(buf[which*bs:(which+1)*bs], which)
		if err != nil || got != h {
			t.Fatalf("header block %d after Format: %+v, %v", which, got, err)
		}
	}
	// Format on a closed disk reports the disk error.
	_ = d.Close()
	if _, err := Format(d, 16, 9); !errors.Is(err, disk.ErrClosed) {
		t.Fatalf("Format on a closed disk = %v, want ErrClosed", err)
	}
}

// ---------------------------------------------------------------- records

func randUpdates(rng *rand.Rand, h Header, n int) []Update {
	ups := make([]Update, n)
	span := h.DiskBlocks - h.DataStart()
	var seed [32]byte
	for i := 0; i < 32; i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], rng.Uint64())
	}
	all := make([]byte, n*bs)
	_, _ = rand.NewChaCha8(seed).Read(all)
	for i := range ups {
		ups[i] = Update{Addr: h.DataStart() + rng.Uint64N(span), Data: all[i*bs : (i+1)*bs : (i+1)*bs]}
	}
	return ups
}

func sameUpdates(a, b []Update) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d updates, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Addr != b[i].Addr {
			return fmt.Errorf("update %d: addr %d, want %d", i, a[i].Addr, b[i].Addr)
		}
		if !bytes.Equal(a[i].Data, b[i].Data) {
			return fmt.Errorf("update %d (addr %d): data differs", i, a[i].Addr)
		}
	}
	return nil
}

func TestDescBlocks(t *testing.T) {
	for _, c := range []struct {
		n    int
		desc uint64
	}{{1, 1}, {2, 1}, {507, 1}, {508, 2}, {509, 2}, {1000, 2}, {1019, 2}, {1020, 3}} {
		if got := DescBlocks(c.n); got != c.desc {
			t.Errorf("DescBlocks(%d) = %d, want %d", c.n, got, c.desc)
		}
		if got := RecordBlocks(c.n); got != c.desc+uint64(c.n) {
			t.Errorf("RecordBlocks(%d) = %d, want %d", c.n, got, c.desc+uint64(c.n))
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	h := Header{ID: 0x1234567890abcdef, LogBlocks: 1100, DiskBlocks: RingStart + 1100 + 5000}
	rng := rand.New(rand.NewPCG(1, 2))
	// A reused, dirty buffer must give the same bytes as a fresh one.
	dirty := bytes.Repeat([]byte{0xc3}, 3000*bs)
	for _, n := range []int{1, 2, 507, 508, 509, 1000} {
		ups := randUpdates(rng, h, n)
		ups[0].Addr = h.DataStart()
		ups[n-1].Addr = h.DiskBlocks - 1
		pos := rng.Uint64N(1 << 40)
		buf := EncodeRecord(h, pos, ups, nil)
		if uint64(len(buf)) != RecordBlocks(n)*bs {
			t.Fatalf("n=%d: record is %d bytes, want %d blocks", n, len(buf), RecordBlocks(n))
		}
		if again := EncodeRecord(h, pos, ups, dirty[:0]); !bytes.Equal(again, buf) {
			t.Fatalf("n=%d: encoding into a dirty buffer differs", n)
		}
		got, err := DecodeRecord(h, pos, buf)
		if err != nil {
			t.Fatalf("n=%d: decode: %v", n, err)
		}
		if err := sameUpdates(got, ups); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// Data blocks follow the descriptor blocks in order.
		d0 := DescBlocks(n) * bs
		if !bytes.Equal(buf[d0:d0+bs], ups[0].Data) {
			t.Fatalf("n=%d: first data block is not right after the descriptor", n)
		}
	}
}

func TestEncodeDescIsRecordPrefix(t *testing.T) {
	h := Header{ID: 3, LogBlocks: 1100, DiskBlocks: RingStart + 1100 + 50}
	rng := rand.New(rand.NewPCG(4, 5))
	dirty := bytes.Repeat([]byte{0x77}, 3*bs)
	for _, n := range []int{1, 507, 508} {
		ups := randUpdates(rng, h, n)
		rec := EncodeRecord(h, 99, ups, nil)
		desc := EncodeDesc(h, 99, ups, dirty[:0])
		if uint64(len(desc)) != DescBlocks(n)*bs || !bytes.Equal(desc, rec[:len(desc)]) {
			t.Fatalf("n=%d: EncodeDesc (%d bytes) is not the start of EncodeRecord", n, len(desc))
		}
	}
}

func TestDecodeRecordRejects(t *testing.T) {
	h := Header{ID: 0xfeedface, LogBlocks: 1100, DiskBlocks: RingStart + 1100 + 64}
	rng := rand.New(rand.NewPCG(3, 4))
	noRecord := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: accepted", what)
		}
		if errors.Is(err, ErrCorrupt) || !errors.Is(err, errNoRecord) {
			t.Fatalf("%s: got %v, want a 'no record' error", what, err)
		}
	}
	for _, n := range []int{1, 2, 508} {
		ups := randUpdates(rng, h, n)
		const pos = 1_000_003
		buf := EncodeRecord(h, pos, ups, nil)
		for _, p := range []uint64{pos - 1, pos + 1, pos + h.LogBlocks, pos - h.LogBlocks, 0} {
			_, err := DecodeRecord(h, p, buf)
			noRecord(t, fmt.Sprintf("n=%d at wrong position %d", n, p), err)
		}
		other := h
		other.ID++
		_, err := DecodeRecord(other, pos, buf)
		noRecord(t, fmt.Sprintf("n=%d with another journal id", n), err)

		// Wrong length: a block short, a block extra.
		_, err = DecodeRecord(h, pos, buf[:len(buf)-bs])
		noRecord(t, fmt.Sprintf("n=%d truncated", n), err)
		_, err = DecodeRecord(h, pos, append(bytes.Clone(buf), make([]byte, bs)...))
		noRecord(t, fmt.Sprintf("n=%d with an extra block", n), err)

		// Flipped bits: every byte of small records; for big ones the
		// descriptor header, a random sample and the last byte.
		var offs []int
		if n <= 2 {
			for i := range buf {
				offs = append(offs, i)
			}
		} else {
			for i := 0; i < recHdrLen+16; i++ {
				offs = append(offs, i)
			}
			for i := 0; i < 30; i++ {
				offs = append(offs, rng.IntN(len(buf)))
			}
			offs = append(offs, len(buf)-1)
		}
		for _, i := range offs {
			bit := byte(1) << rng.IntN(8)
			buf[i] ^= bit
			_, err := DecodeRecord(h, pos, buf)
			buf[i] ^= bit
			noRecord(t, fmt.Sprintf("n=%d bit %#x of byte %d flipped", n, bit, i), err)
		}
		if _, err := DecodeRecord(h, pos, buf); err != nil {
			t.Fatalf("n=%d: restored record rejected: %v", n, err)
		}
	}
	// Degenerate buffers.
	for _, b := range [][]byte{nil, make([]byte, 10), make([]byte, bs)} {
		_, err := DecodeRecord(h, 0, b)
		noRecord(t, fmt.Sprintf("%d-byte buffer", len(b)), err)
	}
	// A record that claims more blocks than the log holds.
	small := Header{ID: h.ID, LogBlocks: 8, DiskBlocks: RingStart + 8 + 64}
	big := EncodeRecord(small, 0, randUpdates(rng, small, 8), nil)
	_, err := DecodeRecord(small, 0, big)
	noRecord(t, "record larger than the log", err)
}

func TestDecodeRecordEmpty(t *testing.T) {
	// EncodeRecord accepts no updates, but such a record is never valid.
	h := Header{ID: 5, LogBlocks: 64, DiskBlocks: RingStart + 64 + 10}
	buf := EncodeRecord(h, 3, nil, nil)
	if len(buf) != bs {
		t.Fatalf("empty record is %d bytes, want one block", len(buf))
	}
	ups, err := DecodeRecord(h, 3, buf)
	if err == nil || errors.Is(err, ErrCorrupt) {
		t.Fatalf("empty record: %d updates, %v; want a 'no record' error", len(ups), err)
	}
}

func TestDecodeRecordBadAddress(t *testing.T) {
	h := Header{ID: 5, LogBlocks: 1100, DiskBlocks: RingStart + 1100 + 10}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 3, 520} {
		for _, bad := range []uint64{0, InstallHdrBlock, LogHdrBlock, RingStart, h.DataStart() - 1, h.DiskBlocks, h.DiskBlocks + 1, ^uint64(0)} {
			ups := randUpdates(rng, h, n)
			ups[rng.IntN(n)].Addr = bad
			buf := EncodeRecord(h, 42, ups, nil)
			if _, err := DecodeRecord(h, 42, buf); !errors.Is(err, ErrCorrupt) {
				t.Errorf("n=%d with address %d: got %v, want ErrCorrupt", n, bad, err)
			}
		}
	}
}

func TestDecodeRecordReservedBytes(t *testing.T) {
	// The reserved descriptor bytes and the descriptor padding are covered by
	// the checksum but not otherwise checked: a record with a correct
	// checksum and non-zero reserved bytes decodes to the same updates.
	h := Header{ID: 5, LogBlocks: 64, DiskBlocks: RingStart + 64 + 10}
	ups := randUpdates(rand.New(rand.NewPCG(9, 9)), h, 3)
	buf := EncodeRecord(h, 7, ups, nil)
	buf[36] = 1
	buf[bs-1] = 1
	binary.LittleEndian.PutUint32(buf[32:], 0)
	binary.LittleEndian.PutUint32(buf[32:], crc32.Checksum(buf, crcTable))
	got, err := DecodeRecord(h, 7, buf)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := sameUpdates(got, ups); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------- log

// appendRec appends a record and then writes the logger header naming
// durableEnd, as a logger that updates the header with every record does.
func appendRec(l *Log, pos uint64, ups []Update, durableEnd uint64) (uint64, error) {
	next, err := l.Append(pos, ups)
	if err != nil {
		return next, err
	}
	return next, l.SetEnd(durableEnd)
}

// expRec is a record the test expects Recover to return.
type expRec struct {
	pos uint64
	ups []Update
}

func checkRecovered(t *testing.T, d disk.Disk, wantStart uint64, want []expRec) *Log {
	t.Helper()
	l, start, recs, err := Recover(d)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if start != wantStart {
		t.Fatalf("Recover start = %d, want %d", start, wantStart)
	}
	if len(recs) != len(want) {
		var got []uint64
		for _, r := range recs {
			got = append(got, r.Pos)
		}
		var exp []uint64
		for _, r := range want {
			exp = append(exp, r.pos)
		}
		t.Fatalf("Recover returned records at %v, want %v", got, exp)
	}
	for i, r := range recs {
		if r.Pos != want[i].pos {
			t.Fatalf("record %d at %d, want %d", i, r.Pos, want[i].pos)
		}
		if r.Blocks != RecordBlocks(len(want[i].ups)) {
			t.Fatalf("record %d: %d blocks, want %d", i, r.Blocks, RecordBlocks(len(want[i].ups)))
		}
		if err := sameUpdates(r.Updates, want[i].ups); err != nil {
			t.Fatalf("record %d at %d: %v", i, r.Pos, err)
		}
	}
	return l
}

func newFormatted(t *testing.T, logBlocks, dataBlocks uint64, id uint64) (*disk.MemDisk, *Log) {
	t.Helper()
	d := disk.NewMemDisk(RingStart + logBlocks + dataBlocks)
	if _, err := Format(d, logBlocks, id); err != nil {
		t.Fatal(err)
	}
	l, start, recs, err := Recover(d)
	if err != nil || start != 0 || len(recs) != 0 {
		t.Fatalf("Recover of a fresh journal: start %d, %d records, %v", start, len(recs), err)
	}
	if h := l.Header(); h.ID != id || h.LogBlocks != logBlocks || h.DiskBlocks != d.Size() {
		t.Fatalf("Recover header %+v", h)
	}
	return d, l
}

func TestLogAppendRecoverWrap(t *testing.T) {
	const logBlocks = 16
	d, l := newFormatted(t, logBlocks, 32, 0xabc)
	h := l.Header()
	rng := rand.New(rand.NewPCG(11, 12))
	var live []expRec // records from start, in order
	start, end := uint64(0), uint64(0)
	wrapped := 0
	for step := 0; step < 400; step++ {
		n := 1 + rng.IntN(6)
		if end+RecordBlocks(n)-start > logBlocks {
			// Out of room: install the oldest record.
			if len(live) == 0 {
				t.Fatal("no room in an empty log")
			}
			start = live[0].pos + RecordBlocks(len(live[0].ups))
			live = live[1:]
			if err := l.SetStart(start); err != nil {
				t.Fatal(err)
			}
		} else {
			ups := randUpdates(rng, h, n)
			if (end%logBlocks)+RecordBlocks(n) > logBlocks {
				wrapped++
			}
			next, err := appendRec(l, end, ups, end)
			if err != nil {
				t.Fatal(err)
			}
			if next != end+RecordBlocks(n) {
				t.Fatalf("Append returned %d, want %d", next, end+RecordBlocks(n))
			}
			live = append(live, expRec{end, ups})
			end = next
		}
		if step%7 == 0 {
			checkRecovered(t, d, start, live)
		}
	}
	checkRecovered(t, d, start, live)
	if end < 10*logBlocks || wrapped < 10 {
		t.Fatalf("test did not exercise wrapping: end %d, %d wrapping records", end, wrapped)
	}
}

func TestLogOnFileDisk(t *testing.T) {
	// Append on a FileDisk writes with pwritev, split in two where a record
	// wraps; records with spilled descriptors too.
	const logBlocks = 1100
	fd, err := disk.CreateFile(filepath.Join(t.TempDir(), "j"), RingStart+logBlocks+40, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := Format(fd, logBlocks, 0xf11e); err != nil {
		t.Fatal(err)
	}
	l, _, _, err := Recover(fd)
	if err != nil {
		t.Fatal(err)
	}
	h := l.Header()
	rng := rand.New(rand.NewPCG(21, 21))
	var live []expRec
	start, end := uint64(0), uint64(0)
	add := func(n int) {
		t.Helper()
		for end+RecordBlocks(n)-start > logBlocks {
			start = live[0].pos + RecordBlocks(len(live[0].ups))
			live = live[1:]
		}
		if err := l.SetStart(start); err != nil {
			t.Fatal(err)
		}
		ups := randUpdates(rng, h, n)
		next, err := appendRec(l, end, ups, end)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, expRec{end, ups})
		end = next
		if err := fd.Barrier(); err != nil {
			t.Fatal(err)
		}
		checkRecovered(t, fd, start, live)
	}
	// Records that wrap with `room` blocks left before the end of the ring:
	// inside a 2-block descriptor, between descriptor and data (1- and
	// 2-block descriptors), inside the data, and not at all.
	for _, c := range []struct{ room, n int }{{1, 600}, {2, 600}, {1, 5}, {40, 600}, {3, 2}, {700, 600}} {
		// A filler record brings the end to the wanted ring offset.
		gap := (logBlocks - uint64(c.room) - end%logBlocks + logBlocks) % logBlocks
		if gap == 1 {
			add(1) // 2 blocks; the gap becomes logBlocks-1
			gap = logBlocks - 1
		}
		if gap > 0 {
			k := int(gap) - 1
			for RecordBlocks(k) > gap {
				k--
			}
			if RecordBlocks(k) != gap {
				t.Fatalf("no filler record of %d blocks", gap)
			}
			add(k)
		}
		if got := logBlocks - end%logBlocks; got != uint64(c.room) {
			t.Fatalf("room before the ring end is %d, want %d", got, c.room)
		}
		add(c.n)
	}
	if end < 3*logBlocks {
		t.Fatalf("only %d blocks logged", end)
	}
}

func TestLogStartSkipsInstalled(t *testing.T) {
	d, l := newFormatted(t, 16, 8, 1)
	h := l.Header()
	rng := rand.New(rand.NewPCG(1, 1))
	a := randUpdates(rng, h, 2)
	b := randUpdates(rng, h, 4)
	c := randUpdates(rng, h, 1)
	p1, _ := appendRec(l, 0, a, 0)
	p2, _ := appendRec(l, p1, b, p1)
	p3, err := appendRec(l, p2, c, p2)
	if err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, 0, []expRec{{0, a}, {p1, b}, {p2, c}})
	if err := l.SetStart(p1); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, p1, []expRec{{p1, b}, {p2, c}})
	if err := l.SetStart(p3); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, p3, nil)
	// The installer passed the logger's end hint: still fine.
	l2 := checkRecovered(t, d, p3, nil)
	if l2.Header().ID != 1 {
		t.Fatal("wrong id")
	}
}

func TestLogStaleLapStopsScan(t *testing.T) {
	const logBlocks = 16
	d, l := newFormatted(t, logBlocks, 8, 7)
	h := l.Header()
	rng := rand.New(rand.NewPCG(2, 2))
	// Lap 0: four records of 4 blocks fill the ring exactly.
	var lap0 []expRec
	pos := uint64(0)
	for i := 0; i < 4; i++ {
		ups := randUpdates(rng, h, 3)
		next, err := appendRec(l, pos, ups, pos)
		if err != nil {
			t.Fatal(err)
		}
		lap0 = append(lap0, expRec{pos, ups})
		pos = next
	}
	checkRecovered(t, d, 0, lap0)
	// Install them all; every slot still holds a valid lap-0 record whose
	// position is a lap behind.
	if err := l.SetStart(logBlocks); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, logBlocks, nil)
	// One lap-1 record of the same size: the next slot holds the lap-0
	// record at position 4, which must not be taken for position 20.
	ups := randUpdates(rng, h, 3)
	if _, err := appendRec(l, logBlocks, ups, logBlocks); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, logBlocks, []expRec{{logBlocks, ups}})

	// A lap-1 record written at a lap-0 position (as a buggy logger would)
	// is stale too.
	ups2 := randUpdates(rng, h, 3)
	rec := EncodeRecord(h, 4, ups2, nil)
	if err := d.Write(RingStart+4, rec); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, logBlocks, []expRec{{logBlocks, ups}})
}

func TestLogReformatHidesOldJournal(t *testing.T) {
	d, l := newFormatted(t, 16, 8, 100)
	h := l.Header()
	rng := rand.New(rand.NewPCG(3, 3))
	pos := uint64(0)
	var old []expRec
	for i := 0; i < 3; i++ {
		ups := randUpdates(rng, h, 3)
		next, err := appendRec(l, pos, ups, pos)
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, expRec{pos, ups})
		pos = next
	}
	checkRecovered(t, d, 0, old)
	if _, err := Format(d, 16, 200); err != nil {
		t.Fatal(err)
	}
	l2 := checkRecovered(t, d, 0, nil)
	if l2.Header().ID != 200 {
		t.Fatalf("recovered id %d, want 200", l2.Header().ID)
	}
	// A same-size record of the new journal at 0: the old journal's record
	// at position 4 (right position, wrong id) must not follow it.
	ups := randUpdates(rng, h, 3)
	if _, err := appendRec(l2, 0, ups, 0); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, d, 0, []expRec{{0, ups}})
}

// --------------------------------------------------------- corruption

// formattedWithRecords formats a 16-block log on a disk of 40 blocks and
// appends records of 2 and 3 data blocks at 0, 3 and 7 (the last one's
// Append names the second record's end as durable).
func formattedWithRecords(t *testing.T) (*disk.MemDisk, *Log, []expRec) {
	t.Helper()
	d, l := newFormatted(t, 16, 22, 0x5eed)
	h := l.Header()
	rng := rand.New(rand.NewPCG(4, 4))
	var recs []expRec
	pos := uint64(0)
	for _, n := range []int{2, 3, 2} {
		ups := randUpdates(rng, h, n)
		next, err := appendRec(l, pos, ups, pos)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, expRec{pos, ups})
		pos = next
	}
	return d, l, recs
}

func readBlock(t *testing.T, d disk.Disk, a uint64) []byte {
	t.Helper()
	b := make([]byte, bs)
	if err := d.Read(a, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeBlock(t *testing.T, d disk.Disk, a uint64, b []byte) {
	t.Helper()
	if err := d.Write(a, b); err != nil {
		t.Fatal(err)
	}
}

func wantCorrupt(t *testing.T, d disk.Disk, what string, mentions ...string) {
	t.Helper()
	l, _, recs, err := Recover(d)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: Recover = %v (%d records), want ErrCorrupt", what, err, len(recs))
	}
	if l != nil || recs != nil {
		t.Fatalf("%s: Recover returned a log or records with an error", what)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: error %q does not mention %q", what, err, m)
		}
	}
}

func TestRecoverBadHeaders(t *testing.T) {
	for which := uint64(0); which < 2; which++ {
		name := fmt.Sprintf("header block %d", which)
		// Garbled: a flipped byte after the magic.
		for _, off := range []int{8, 13, 20, 30, 41, 47, 49} {
			d, _, _ := formattedWithRecords(t)
			b := readBlock(t, d, which)
			b[off] ^= 0x40
			writeBlock(t, d, which, b)
			wantCorrupt(t, d, fmt.Sprintf("block %d byte %d garbled", which, off), name)
		}
		// Torn: the first half of a new header (a different Pos) with the
		// rest of the old one.
		d, l, _ := formattedWithRecords(t)
		old := readBlock(t, d, which)
		h := l.Header()
		h.Pos = 0x0102030405060708
		nw := encHeader(h, uint32(which))
		torn := append(bytes.Clone(nw[:44]), old[44:]...)
		writeBlock(t, d, which, torn)
		wantCorrupt(t, d, fmt.Sprintf("block %d torn", which), name)
		// All zeros.
		d, _, _ = formattedWithRecords(t)
		writeBlock(t, d, which, make([]byte, bs))
		// Block 0 zeroed while block 1 is a valid header is damage, not an
		// unformatted disk: it must never look reformattable.
		wantCorrupt(t, d, fmt.Sprintf("zeroed block %d", which), name)
		if which == InstallHdrBlock {
			writeBlock(t, d, LogHdrBlock, make([]byte, bs))
			if _, _, _, err := Recover(d); !errors.Is(err, ErrNotFormatted) {
				t.Fatalf("both headers zeroed: Recover = %v, want ErrNotFormatted", err)
			}
		}
	}
}

func TestRecoverInconsistentHeaders(t *testing.T) {
	mods := map[string]func(*Header){
		"id":    func(h *Header) { h.ID++ },
		"log":   func(h *Header) { h.LogBlocks = 8 },
		"disk":  func(h *Header) { h.DiskBlocks-- },
		"disk2": func(h *Header) { h.DiskBlocks += 1000 },
	}
	for name, mod := range mods {
		for which := uint32(0); which < 2; which++ {
			d, l, _ := formattedWithRecords(t)
			h := l.Header()
			h.Pos = 3
			mod(&h)
			writeBlock(t, d, uint64(which), encHeader(h, which))
			wantCorrupt(t, d, fmt.Sprintf("block %d with a different %s", which, name))
		}
	}
	// The two blocks swapped: each is in the wrong role.
	d, _, _ := formattedWithRecords(t)
	b0, b1 := readBlock(t, d, 0), readBlock(t, d, 1)
	writeBlock(t, d, 0, b1)
	writeBlock(t, d, 1, b0)
	wantCorrupt(t, d, "swapped header blocks", "header block 0")
}

func TestRecoverTruncatedDisk(t *testing.T) {
	big := disk.NewMemDisk(100)
	if _, err := Format(big, 16, 3); err != nil {
		t.Fatal(err)
	}
	small := disk.NewMemDisk(50)
	buf := make([]byte, 50*bs)
	if err := big.Read(0, buf); err != nil {
		t.Fatal(err)
	}
	if err := small.Write(0, buf); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, small, "50-block copy of a 100-block journal", "truncat")
	// A disk that grew is fine.
	bigger := disk.NewMemDisk(120)
	if err := big.Read(0, buf[:2*bs]); err != nil {
		t.Fatal(err)
	}
	if err := bigger.Write(0, buf[:2*bs]); err != nil {
		t.Fatal(err)
	}
	l, _, _, err := Recover(bigger)
	if err != nil {
		t.Fatalf("Recover of a grown disk: %v", err)
	}
	if l.Header().DiskBlocks != 100 {
		t.Fatalf("grown disk: header says %d blocks, want the formatted 100", l.Header().DiskBlocks)
	}
	// Too small to hold any journal.
	if _, _, _, err := Recover(disk.NewMemDisk(RingStart + MinLogBlocks)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Recover of a tiny disk = %v, want ErrCorrupt", err)
	}
}

func TestRecoverEndHint(t *testing.T) {
	setHint := func(t *testing.T, d disk.Disk, l *Log, start, hint uint64) {
		h := l.Header()
		h.Pos = start
		writeBlock(t, d, InstallHdrBlock, encHeader(h, InstallHdrBlock))
		h.Pos = hint
		writeBlock(t, d, LogHdrBlock, encHeader(h, LogHdrBlock))
	}
	d, l, recs := formattedWithRecords(t) // records at 0, 3, 7; end 10
	setHint(t, d, l, 0, 17)
	wantCorrupt(t, d, "end hint more than a ring past start", "more than a log")
	setHint(t, d, l, 0, ^uint64(0))
	wantCorrupt(t, d, "end hint at max", "more than a log")
	setHint(t, d, l, 0, 16)
	wantCorrupt(t, d, "end hint past the last record", "before the logged end")
	setHint(t, d, l, 0, 11)
	wantCorrupt(t, d, "end hint just past the last record")
	setHint(t, d, l, 0, 10)
	checkRecovered(t, d, 0, recs)
	setHint(t, d, l, 0, 8) // inside the last record
	checkRecovered(t, d, 0, recs)
	setHint(t, d, l, 3, 0) // hint behind start: lags by design
	checkRecovered(t, d, 3, recs[1:])
	setHint(t, d, l, 10, 3)
	checkRecovered(t, d, 10, nil)

	// A ring exactly full of records with the hint a whole ring past start.
	d, l = newFormatted(t, 16, 8, 9)
	h := l.Header()
	rng := rand.New(rand.NewPCG(5, 5))
	var full []expRec
	pos := uint64(32)
	if err := l.SetStart(pos); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		ups := randUpdates(rng, h, 3)
		next, err := appendRec(l, pos, ups, pos)
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, expRec{pos, ups})
		pos = next
	}
	setHint(t, d, l, 32, 48)
	checkRecovered(t, d, 32, full)
	setHint(t, d, l, 32, 49)
	wantCorrupt(t, d, "hint one past a full ring")
}

// ringBlock is the disk block of logical position p in a 16-block ring.
func ringBlock(p uint64) uint64 { return RingStart + p%16 }

func TestRecoverCorruptRecordBeforeEnd(t *testing.T) {
	// Records A at 0 (3 blocks), B at 3 (4 blocks), C at 7 (3 blocks); the
	// last Append named 7 as the durable end, so A and B are before it.
	for i, rec := range []int{0, 1} {
		for _, off := range []uint64{0, 1} { // descriptor, first data block
			d, _, recs := formattedWithRecords(t)
			a := ringBlock(recs[rec].pos + off*DescBlocks(len(recs[rec].ups)))
			b := readBlock(t, d, a)
			b[1234] ^= 1
			writeBlock(t, d, a, b)
			wantCorrupt(t, d, fmt.Sprintf("damaged record %d (block %d) before the logged end", i, a), "before the logged end")
		}
	}
}

func TestRecoverTornTail(t *testing.T) {
	for _, off := range []uint64{0, 1} { // descriptor, first data block
		d, _, recs := formattedWithRecords(t) // hint 7: C at 7 is not before it
		last := recs[len(recs)-1]
		a := ringBlock(last.pos + off*DescBlocks(len(last.ups)))
		b := readBlock(t, d, a)
		b[100] ^= 0x80
		writeBlock(t, d, a, b)
		checkRecovered(t, d, 0, recs[:len(recs)-1])

		// With the logger header lagging at 3, damage to B (at 3) is a torn
		// tail too: the log simply ends before it.
		h, _, _, err := Recover(d)
		if err != nil {
			t.Fatal(err)
		}
		hdr := h.Header()
		hdr.Pos = 3
		writeBlock(t, d, LogHdrBlock, encHeader(hdr, LogHdrBlock))
		m := ringBlock(recs[1].pos + 1)
		b = readBlock(t, d, m)
		b[5] ^= 1
		writeBlock(t, d, m, b)
		checkRecovered(t, d, 0, recs[:1])
	}
}

func TestRecoverRecordOverrunningStart(t *testing.T) {
	// S (2 blocks) at start 4, then a checksummed record R at 6 of 15 blocks:
	// R runs one block past start+LogBlocks, over S's descriptor slot. R's
	// last data block is S's descriptor, so S still reads back intact; R
	// must not be returned, as it overlaps the live log.
	const logBlocks = 16
	d, l := newFormatted(t, logBlocks, 8, 31)
	h := l.Header()
	rng := rand.New(rand.NewPCG(6, 6))
	if err := l.SetStart(4); err != nil {
		t.Fatal(err)
	}
	sUps := randUpdates(rng, h, 1)
	sEnc := EncodeRecord(h, 4, sUps, nil)
	rUps := randUpdates(rng, h, 14)
	rUps[13].Data = sEnc[:bs]
	rEnc := EncodeRecord(h, 6, rUps, nil)
	if uint64(len(rEnc)) != 15*bs {
		t.Fatalf("R is %d blocks", len(rEnc)/bs)
	}
	// Slots 6..15, then 0..4: R's last block lands on slot 4 (S's desc).
	if err := d.Write(RingStart+6, rEnc[:10*bs]); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(RingStart, rEnc[10*bs:]); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(RingStart+4, sEnc); err != nil {
		t.Fatal(err)
	}
	// R on its own is a valid record.
	if _, err := DecodeRecord(h, 6, rEnc); err != nil {
		t.Fatalf("R does not decode: %v", err)
	}
	checkRecovered(t, d, 4, []expRec{{4, sUps}})
	// With the logger header claiming R is durable, that is corruption.
	if err := l.SetEnd(20); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, d, "record overrunning the start before the logged end", "before the logged end")
}

func TestRecoverBadAddressIsCorrupt(t *testing.T) {
	// A checksummed record naming a block outside the data region is
	// corruption even past the logger's end.
	d, l, recs := formattedWithRecords(t)
	h := l.Header()
	ups := randUpdates(rand.New(rand.NewPCG(8, 8)), h, 1)
	ups[0].Addr = RingStart + 3
	if _, err := appendRec(l, 10, ups, 10); err != nil {
		t.Fatal(err)
	}
	wantCorrupt(t, d, "record with a ring address", "outside the data region")
	_ = recs
}

func TestRecoverDiskErrors(t *testing.T) {
	d, _, _ := formattedWithRecords(t)
	_ = d.Close()
	_, _, _, err := Recover(d)
	if !errors.Is(err, disk.ErrClosed) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Recover on a closed disk = %v, want ErrClosed", err)
	}
}

func TestRecoverWritesNothing(t *testing.T) {
	d, _, _ := formattedWithRecords(t)
	before := make([]byte, d.Size()*bs)
	if err := d.Read(0, before); err != nil {
		t.Fatal(err)
	}
	cd := disk.NewCrashDisk(d.Size())
	if err := cd.Write(0, before); err != nil {
		t.Fatal(err)
	}
	if err := cd.Barrier(); err != nil {
		t.Fatal(err)
	}
	w := cd.Writes
	if _, _, _, err := Recover(cd); err != nil {
		t.Fatal(err)
	}
	if cd.Writes != w || cd.Barriers != 1 {
		t.Fatalf("Recover made %d writes and %d barriers", cd.Writes-w, cd.Barriers-1)
	}
}

// ------------------------------------------------------ crash consistency

// TestCrashConsistency follows the documented protocol (a barrier after each
// record, and after each start advance before reusing ring space), crashes
// the disk at a random point with a random subset of the unbarriered writes
// surviving, and checks that recovery succeeds and returns every committed
// record from the recovered start, plus possibly the one in flight; then it
// continues from the recovered state for a few more crash cycles.
func TestCrashConsistency(t *testing.T) {
	const logBlocks = 16
	var inflightKept, inflightLost, newStart, oldStart int
	for seed := range testseed.Each(t, testseed.Range(0, 100)...) {
		rng := rand.New(rand.NewPCG(seed, 77))
		d := disk.NewCrashDisk(RingStart + logBlocks + 12)
		if _, err := Format(d, logBlocks, 1000+seed); err != nil {
			t.Fatal(err)
		}
		var committed []expRec // from the durable start
		durableStart := uint64(0)
		for cycle := 0; cycle < 4; cycle++ {
			l, start, recs, err := Recover(d)
			if err != nil {
				t.Fatalf("seed %d cycle %d: Recover: %v", seed, cycle, err)
			}
			_ = recs
			h := l.Header()
			end := start
			if n := len(committed); n > 0 {
				end = committed[n-1].pos + RecordBlocks(len(committed[n-1].ups))
			}
			if rng.IntN(3) == 0 {
				d.CrashAfterWrites(-1) // crash only at the end
			} else {
				d.CrashAfterWrites(int64(rng.IntN(40)))
			}
			var inflight *expRec
			pendingStart := durableStart
			for step := 0; step < 30; step++ {
				n := 1 + rng.IntN(4)
				if end+RecordBlocks(n)-durableStart > logBlocks {
					if len(committed) == 0 {
						t.Fatal("no room in an empty log")
					}
					pendingStart = committed[0].pos + RecordBlocks(len(committed[0].ups))
					if err := l.SetStart(pendingStart); err != nil {
						break
					}
					if err := d.Barrier(); err != nil {
						t.Fatalf("barrier after a successful write: %v", err)
					}
					durableStart = pendingStart
					committed = committed[1:]
					continue
				}
				ups := randUpdates(rng, h, n)
				inflight = &expRec{end, ups}
				next, err := l.Append(end, ups)
				if err != nil {
					break
				}
				// The logger header is a lower bound written now and then:
				// naming the durable end either with the record or after
				// the record's barrier.
				hdr := rng.IntN(3)
				if hdr == 1 {
					if err := l.SetEnd(end); err != nil {
						break
					}
				}
				if err := d.Barrier(); err != nil {
					t.Fatalf("barrier after a successful write: %v", err)
				}
				committed = append(committed, *inflight)
				inflight = nil
				end = next
				if hdr == 2 {
					if err := l.SetEnd(end); err != nil {
						break
					}
				}
			}
			// Sometimes leave unbarriered work behind: an append, a start
			// advance, or both.
			if inflight == nil && rng.IntN(2) == 0 {
				n := 1 + rng.IntN(3)
				if end+RecordBlocks(n)-durableStart <= logBlocks {
					ups := randUpdates(rng, h, n)
					inflight = &expRec{end, ups}
					if _, err := l.Append(end, ups); err == nil && rng.IntN(2) == 0 {
						_ = l.SetEnd(end)
					}
				}
			}
			if pendingStart == durableStart && len(committed) > 0 && rng.IntN(3) == 0 {
				pendingStart = committed[0].pos + RecordBlocks(len(committed[0].ups))
				_ = l.SetStart(pendingStart)
			}
			nd := d.CrashRandom(rng)

			_, gotStart, got, err := Recover(nd)
			if err != nil {
				t.Fatalf("seed %d cycle %d: Recover after crash: %v", seed, cycle, err)
			}
			if gotStart != durableStart && gotStart != pendingStart {
				t.Fatalf("seed %d cycle %d: start %d, want %d or %d", seed, cycle, gotStart, durableStart, pendingStart)
			}
			want := committed
			for len(want) > 0 && want[0].pos < gotStart {
				want = want[1:]
			}
			if len(got) == len(want)+1 && inflight != nil {
				want = append(append([]expRec(nil), want...), *inflight)
				inflightKept++
			} else if inflight != nil {
				inflightLost++
			}
			if pendingStart != durableStart {
				if gotStart == pendingStart {
					newStart++
				} else {
					oldStart++
				}
			}
			checkRecovered(t, nd, gotStart, want)
			committed = append([]expRec(nil), want...)
			durableStart = gotStart
			d = nd
		}
	}
	// The seeds must have produced every kind of crash outcome.
	if _, one := testseed.Replaying(t); !one && (inflightKept == 0 || inflightLost == 0 || newStart == 0 || oldStart == 0) {
		t.Fatalf("crash outcomes not all exercised: in-flight record kept %d, lost %d; unbarriered start kept %d, lost %d",
			inflightKept, inflightLost, newStart, oldStart)
	}
	t.Logf("in-flight record kept %d, lost %d; unbarriered start kept %d, lost %d", inflightKept, inflightLost, newStart, oldStart)
}
