package circular

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"

	"strata/journal/disk"
)

// Fuzz targets. Checksums stop random mutations early, so each target also
// runs on a copy of its input with the checksum recomputed, to reach the
// checks that come after it.

func FuzzDecodeHeader(f *testing.F) {
	for _, h := range []Header{
		{ID: 1, LogBlocks: 16, DiskBlocks: 64, Pos: 0},
		{ID: 0xfeedfacecafebeef, LogBlocks: MinLogBlocks, DiskBlocks: RingStart + MinLogBlocks + 1, Pos: 1 << 40},
		{ID: 3, LogBlocks: maxLogSize, DiskBlocks: ^uint64(0), Pos: ^uint64(0)},
	} {
		for which := uint32(0); which < 2; which++ {
			buf := encHeader(h, which)
			f.Add(buf[:hdrLen+4])
			f.Add(buf[:hdrLen])
			f.Add(buf[:hdrLen-1])
			m := bytes.Clone(buf[:hdrLen])
			m[20] ^= 0xff
			f.Add(m)
			m = bytes.Clone(buf[:hdrLen])
			binary.LittleEndian.PutUint64(m[24:], 2) // log too small
			fixHeaderCRC(m)
			f.Add(m)
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, hdrLen))

	check := func(t *testing.T, data []byte) {
		for which := uint32(0); which < 2; which++ {
			h, err := DecodeHeader(data, which)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFormatted) {
					t.Fatalf("block %d: error %v is neither ErrCorrupt nor ErrNotFormatted", which, err)
				}
				if errors.Is(err, ErrNotFormatted) && which != InstallHdrBlock {
					t.Fatalf("block %d: ErrNotFormatted for a logger header", which)
				}
				continue
			}
			if h.LogBlocks < MinLogBlocks || h.LogBlocks > maxLogSize || h.DiskBlocks <= h.DataStart() {
				t.Fatalf("block %d: accepted bad geometry %+v", which, h)
			}
			buf := encHeader(h, which)
			if !bytes.Equal(buf[:hdrLen], data[:hdrLen]) {
				t.Fatalf("block %d: accepted a header that does not re-encode to itself", which)
			}
			h2, err := DecodeHeader(buf, which)
			if err != nil || h2 != h {
				t.Fatalf("block %d: re-encoded %+v decodes to %+v, %v", which, h, h2, err)
			}
			// The other role must reject it.
			if _, err := DecodeHeader(data, 1-which); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("block %d header accepted as block %d (%v)", which, 1-which, err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		if len(data) >= hdrLen {
			fixed := bytes.Clone(data)
			fixHeaderCRC(fixed)
			check(t, fixed)
		}
	})
}

// fuzzHeader is the journal the record fuzzer decodes against.
var fuzzHeader = Header{ID: 0x0123456789abcdef, LogBlocks: 40, DiskBlocks: RingStart + 40 + 24}

// fixRecordCRC recomputes a record's checksum after a deliberate edit.
func fixRecordCRC(buf []byte) {
	if len(buf) < recHdrLen {
		return
	}
	binary.LittleEndian.PutUint32(buf[32:], 0)
	binary.LittleEndian.PutUint32(buf[32:], crc32.Checksum(buf, crcTable))
}

func FuzzDecodeRecord(f *testing.F) {
	h := fuzzHeader
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 2, 5} {
		for _, pos := range []uint64{0, 7, 1 << 33} {
			ups := randUpdates(rng, h, n)
			// Addresses at both edges of the data region.
			ups[0].Addr = h.DataStart()
			ups[n-1].Addr = h.DiskBlocks - 1
			buf := EncodeRecord(h, pos, ups, nil)
			f.Add(buf, pos)
			f.Add(buf, pos+1)
			f.Add(buf[:len(buf)-1], pos)
			m := bytes.Clone(buf)
			binary.LittleEndian.PutUint64(m[recHdrLen:], 0) // address 0
			fixRecordCRC(m)
			f.Add(m, pos)
			m = bytes.Clone(buf)
			binary.LittleEndian.PutUint32(m[24:], uint32(n+1)) // one block short
			fixRecordCRC(m)
			f.Add(m, pos)
			m = bytes.Clone(buf)
			m[len(m)-1] ^= 1
			f.Add(m, pos)
		}
	}
	f.Add([]byte{}, uint64(0))
	f.Add(make([]byte, bs), uint64(0))

	type outcome int
	const (
		rejected outcome = iota
		accepted
	)
	check := func(t *testing.T, data []byte, pos uint64, canonical bool) outcome {
		ups, err := DecodeRecord(h, pos, data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, errNoRecord) {
				t.Fatalf("error %v is neither ErrCorrupt nor 'no record'", err)
			}
			if ups != nil {
				t.Fatalf("updates returned with an error")
			}
			return rejected
		}
		if len(ups) == 0 {
			t.Fatalf("record with no updates accepted")
		}
		if uint64(len(data)) != RecordBlocks(len(ups))*bs {
			t.Fatalf("%d updates from %d bytes", len(ups), len(data))
		}
		for i, u := range ups {
			if u.Addr < h.DataStart() || u.Addr >= h.DiskBlocks {
				t.Fatalf("update %d: address %d outside [%d,%d)", i, u.Addr, h.DataStart(), h.DiskBlocks)
			}
			if len(u.Data) != bs {
				t.Fatalf("update %d: %d bytes of data", i, len(u.Data))
			}
		}
		enc := EncodeRecord(h, pos, ups, nil)
		if canonical {
			if !bytes.Equal(enc, data) {
				t.Fatalf("accepted record does not re-encode to its own bytes")
			}
		} else {
			// After a checksum fix-up only the reserved bytes, the
			// descriptor padding and so the checksum may differ.
			descEnd := int(DescBlocks(len(ups))) * bs
			used := recHdrLen + 8*len(ups)
			if !bytes.Equal(enc[:32], data[:32]) || !bytes.Equal(enc[recHdrLen:used], data[recHdrLen:used]) || !bytes.Equal(enc[descEnd:], data[descEnd:]) {
				t.Fatalf("accepted record differs from its re-encoding outside the reserved bytes")
			}
		}
		if _, err := DecodeRecord(h, pos, enc); err != nil {
			t.Fatalf("re-encoded record rejected: %v", err)
		}
		return accepted
	}
	f.Fuzz(func(t *testing.T, data []byte, pos uint64) {
		check(t, data, pos, true)
		if len(data) >= recHdrLen {
			fixed := bytes.Clone(data)
			fixRecordCRC(fixed)
			check(t, fixed, pos, false)
		}
	})
}

// fuzzImage is a formatted journal with a few records (some wrapping the
// ring) on a disk of 2 header blocks, a 24-block ring and 16 data blocks.
var fuzzImage = sync.OnceValue(func() []byte {
	const logBlocks = 24
	d := disk.NewMemDisk(RingStart + logBlocks + 16)
	if _, err := Format(d, logBlocks, 0xabcdef); err != nil {
		panic(err)
	}
	l, _, _, err := Recover(d)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	pos := uint64(0)
	for i, n := range []int{3, 4, 2, 5, 1, 3} { // records at 0, 4, 9, 12, 18, 20
		if i == 3 {
			// Install the first three so the next records wrap.
			if err := l.SetStart(pos); err != nil {
				panic(err)
			}
		}
		next, err := appendRec(l, pos, randUpdates(rng, l.Header(), n), pos)
		if err != nil {
			panic(err)
		}
		pos = next
	}
	img := make([]byte, d.Size()*bs)
	if err := d.Read(0, img); err != nil {
		panic(err)
	}
	return img
})

const (
	fuzzLogBlocks = 24
	fuzzMaxBlocks = 64

	fuzzRing    = 1 << 0 // write over the ring rather than from block 0
	fuzzFixHdr  = 1 << 1 // recompute the header checksums after writing
	fuzzOverlay = 1 << 2 // pad with the disk's own bytes rather than zeros
	fuzzSkip    = 1 << 3 // the next byte is a block offset into the ring
)

// FuzzRecover writes the input over a formatted journal and recovers it. The
// first byte is a mode (the fuzz* bits above); the rest is written, padded
// to whole blocks (at most fuzzMaxBlocks), from block 0 or from a ring block.
// The overlay mode lets a short input patch a header or a descriptor while
// the rest of the journal stays valid.
func FuzzRecover(f *testing.F) {
	img := fuzzImage()
	hdr := func(start, end uint64) []byte {
		m := bytes.Clone(img[:bs+hdrLen])
		binary.LittleEndian.PutUint64(m[40:], start)
		binary.LittleEndian.PutUint64(m[bs+40:], end)
		return m
	}
	// The whole journal, written back unchanged (zero padding) and with a
	// byte flipped in the middle of the ring.
	f.Add(append([]byte{0}, img[:(RingStart+fuzzLogBlocks)*bs]...))
	m := bytes.Clone(img[RingStart*bs : (RingStart+fuzzLogBlocks)*bs])
	m[len(m)/2] ^= 0x40
	f.Add(append([]byte{fuzzRing}, m...))
	// Nothing changed; a zeroed block 0; a zeroed ring block.
	f.Add([]byte{fuzzOverlay})
	f.Add([]byte{0})
	f.Add([]byte{fuzzRing | fuzzSkip, 5})
	// Headers with moved start and end hints (checksums fixed).
	for _, c := range [][2]uint64{{0, 0}, {12, 18}, {12, 30}, {12, 37}, {9, 12}, {24, 12}, {^uint64(0) - 3, ^uint64(0)}} {
		f.Add(append([]byte{fuzzFixHdr | fuzzOverlay}, hdr(c[0], c[1])...))
	}
	// Descriptor patches at each record slot: the first bytes of the record,
	// unchanged, with a bad count, and claiming another position.
	for _, p := range []uint64{0, 4, 9, 12, 18, 20} {
		slot := p % fuzzLogBlocks
		desc := img[(RingStart+slot)*bs : (RingStart+slot)*bs+recHdrLen+16]
		f.Add(append([]byte{fuzzRing | fuzzSkip | fuzzOverlay, byte(slot)}, desc...))
		m := bytes.Clone(desc)
		binary.LittleEndian.PutUint32(m[24:], 1)
		f.Add(append([]byte{fuzzRing | fuzzSkip | fuzzOverlay, byte(slot)}, m...))
		m = bytes.Clone(desc)
		binary.LittleEndian.PutUint64(m[16:], p+fuzzLogBlocks)
		f.Add(append([]byte{fuzzRing | fuzzSkip | fuzzOverlay, byte(slot)}, m...))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mode, data := data[0], data[1:]
		d := disk.NewMemDisk(uint64(len(img) / bs))
		if err := d.Write(0, img); err != nil {
			t.Fatal(err)
		}
		at := uint64(0)
		if mode&fuzzRing != 0 {
			at = RingStart
			if mode&fuzzSkip != 0 && len(data) > 0 {
				at += uint64(data[0]) % fuzzLogBlocks
				data = data[1:]
			}
		}
		nb := min((uint64(len(data))+bs-1)/bs, fuzzMaxBlocks, d.Size()-at)
		if nb > 0 {
			buf := make([]byte, nb*bs)
			if mode&fuzzOverlay != 0 {
				copy(buf, img[at*bs:])
			}
			copy(buf, data)
			if mode&fuzzFixHdr != 0 && at == 0 {
				fixHeaderCRC(buf[:bs])
				if nb > 1 {
					fixHeaderCRC(buf[bs : 2*bs])
				}
			}
			if err := d.Write(at, buf); err != nil {
				t.Fatal(err)
			}
		}
		before := make([]byte, d.Size()*bs)
		if err := d.Read(0, before); err != nil {
			t.Fatal(err)
		}

		l, start, recs, err := Recover(d)

		after := make([]byte, d.Size()*bs)
		if err := d.Read(0, after); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatal("Recover wrote to the disk")
		}
		if err != nil {
			if l != nil || recs != nil {
				t.Fatal("Recover returned a log or records with an error")
			}
			return
		}
		h := l.Header()
		if h.DiskBlocks > d.Size() || h.DataStart() >= h.DiskBlocks || h.LogBlocks < MinLogBlocks {
			t.Fatalf("recovered bad geometry %+v on a %d-block disk", h, d.Size())
		}
		pos := start
		total := uint64(0)
		for i, r := range recs {
			if r.Pos != pos {
				t.Fatalf("record %d at %d, want %d (start %d)", i, r.Pos, pos, start)
			}
			if len(r.Updates) == 0 || r.Blocks != RecordBlocks(len(r.Updates)) {
				t.Fatalf("record %d: %d blocks for %d updates", i, r.Blocks, len(r.Updates))
			}
			for _, u := range r.Updates {
				if u.Addr < h.DataStart() || u.Addr >= h.DiskBlocks || len(u.Data) != bs {
					t.Fatalf("record %d: update of block %d (%d bytes)", i, u.Addr, len(u.Data))
				}
			}
			pos += r.Blocks
			total += r.Blocks
		}
		if total > h.LogBlocks {
			t.Fatalf("records span %d blocks of a %d-block log", total, h.LogBlocks)
		}
		// Recovery is deterministic.
		_, start2, recs2, err := Recover(d)
		if err != nil || start2 != start || len(recs2) != len(recs) {
			t.Fatalf("second Recover: start %d, %d records, %v; first: start %d, %d records", start2, len(recs2), err, start, len(recs))
		}
	})
}
