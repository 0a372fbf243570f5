package circular

import (
	"errors"
	"fmt"

	"strata/journal/disk"
)

// Log writes records and headers of one formatted journal. Append and
// SetStart may run concurrently (logger and installer); each on its own is
// called by one goroutine at a time.
type Log struct {
	d      disk.Disk
	h      Header
	recBuf []byte   // logger only: descriptor blocks
	vec    [][]byte // logger only
	lhdr   []byte   // logger only
	ihdr   []byte   // installer only
}

// Record is one recovered group commit.
type Record struct {
	Pos     uint64 // logical ring position
	Blocks  uint64 // ring space it occupies
	Updates []Update
}

func newLog(d disk.Disk, h Header) *Log {
	return &Log{d: d, h: h, lhdr: make([]byte, disk.BlockSize), ihdr: make([]byte, disk.BlockSize)}
}

// Header returns the journal's geometry and id (Pos is meaningless).
func (l *Log) Header() Header { return l.h }

func (l *Log) ringRead(pos uint64, buf []byte) error {
	n := l.h.LogBlocks
	off := pos % n
	first := min(uint64(len(buf)/disk.BlockSize), n-off)
	if err := l.d.Read(RingStart+off, buf[:first*disk.BlockSize]); err != nil {
		return err
	}
	if rest := buf[first*disk.BlockSize:]; len(rest) > 0 {
		return l.d.Read(RingStart, rest)
	}
	return nil
}

// Append writes the record for ups at position pos without a barrier and
// returns the position after it. The caller must have checked that the ring
// has RecordBlocks(len(ups)) free blocks at pos.
func (l *Log) Append(pos uint64, ups []Update) (uint64, error) {
	if len(ups) == 0 {
		return pos, fmt.Errorf("circular: empty record at %d (recovery would stop there)", pos)
	}
	if RecordBlocks(len(ups)) > l.h.LogBlocks {
		return pos, fmt.Errorf("circular: record of %d blocks does not fit a %d-block log", len(ups), l.h.LogBlocks)
	}
	l.recBuf = EncodeDesc(l.h, pos, ups, l.recBuf)
	// Write descriptor and data blocks in place (one vectored write unless
	// the record wraps): no copy of the data into a record buffer.
	l.vec = append(l.vec[:0], l.recBuf)
	for _, u := range ups {
		l.vec = append(l.vec, u.Data[:disk.BlockSize])
	}
	n := l.h.LogBlocks
	off := pos % n
	room := (n - off) * disk.BlockSize
	var first, rest [][]byte
	for i, b := range l.vec {
		if room == 0 {
			rest = l.vec[i:]
			break
		}
		if uint64(len(b)) <= room {
			first = append(first, b)
			room -= uint64(len(b))
			continue
		}
		first = append(first, b[:room])
		rest = append([][]byte{b[room:]}, l.vec[i+1:]...)
		break
	}
	if err := disk.WriteVec(l.d, RingStart+off, first); err != nil {
		return pos, fmt.Errorf("circular: log record at %d: %w", pos, err)
	}
	if len(rest) > 0 {
		if err := disk.WriteVec(l.d, RingStart, rest); err != nil {
			return pos, fmt.Errorf("circular: log record at %d (wrapped part): %w", pos, err)
		}
	}
	return pos + RecordBlocks(len(ups)), nil
}

// SetEnd writes the logger header naming durableEnd, which must already be
// durable, without a barrier. The header is only a lower bound (recovery
// trusts checksummed records past it), so the logger may write it rarely.
func (l *Log) SetEnd(durableEnd uint64) error {
	h := l.h
	h.Pos = durableEnd
	EncodeHeader(h, LogHdrBlock, l.lhdr)
	if err := l.d.Write(LogHdrBlock, l.lhdr); err != nil {
		return fmt.Errorf("circular: logger header: %w", err)
	}
	return nil
}

// SetStart writes the installer header naming start, without a barrier.
func (l *Log) SetStart(start uint64) error {
	h := l.h
	h.Pos = start
	EncodeHeader(h, InstallHdrBlock, l.ihdr)
	if err := l.d.Write(InstallHdrBlock, l.ihdr); err != nil {
		return fmt.Errorf("circular: installer header: %w", err)
	}
	return nil
}

// Recover reads the headers and every record from the installer's start to
// the end of the log. It writes nothing.
func Recover(d disk.Disk) (*Log, uint64, []Record, error) {
	if d.Size() < RingStart+MinLogBlocks+1 {
		return nil, 0, nil, fmt.Errorf("%w: disk of %d blocks is too small to hold a journal", ErrCorrupt, d.Size())
	}
	hb := make([]byte, 2*disk.BlockSize)
	if err := d.Read(InstallHdrBlock, hb); err != nil {
		return nil, 0, nil, fmt.Errorf("circular: read headers: %w", err)
	}
	ih, err := DecodeHeader(hb[:disk.BlockSize], InstallHdrBlock)
	if errors.Is(err, ErrNotFormatted) {
		if _, lerr := DecodeHeader(hb[disk.BlockSize:], LogHdrBlock); lerr == nil {
			// Block 1 is a valid header, so this is a damaged journal, not
			// an empty disk: never let a caller reformat it as one.
			return nil, 0, nil, fmt.Errorf("%w: header block 0 (installer) is damaged but the logger header is valid", ErrCorrupt)
		}
	}
	if err != nil {
		return nil, 0, nil, err
	}
	lh, err := DecodeHeader(hb[disk.BlockSize:], LogHdrBlock)
	if err != nil {
		return nil, 0, nil, err
	}
	if lh.ID != ih.ID || lh.LogBlocks != ih.LogBlocks || lh.DiskBlocks != ih.DiskBlocks {
		return nil, 0, nil, fmt.Errorf("%w: the two header blocks describe different journals", ErrCorrupt)
	}
	if ih.DiskBlocks > d.Size() {
		return nil, 0, nil, fmt.Errorf("%w: journal was formatted for %d blocks but the disk has only %d (truncated file?)", ErrCorrupt, ih.DiskBlocks, d.Size())
	}
	start, endHint := ih.Pos, lh.Pos
	// The logger header lags by design, so it may name a point the installer
	// has passed; it can never be more than a ring ahead of the start.
	if endHint > start && endHint-start > ih.LogBlocks {
		return nil, 0, nil, fmt.Errorf("%w: logged end %d is more than a log (%d blocks) past start %d", ErrCorrupt, endHint, ih.LogBlocks, start)
	}
	l := newLog(d, ih)
	var recs []Record
	pos := start
	first := make([]byte, disk.BlockSize)
	for pos-start < ih.LogBlocks {
		ups, blocks, err := l.readRecord(pos, first, ih.LogBlocks-(pos-start))
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return nil, 0, nil, err
			}
			if !errors.Is(err, errNoRecord) {
				return nil, 0, nil, fmt.Errorf("circular: recover: %w", err)
			}
			if pos < endHint {
				return nil, 0, nil, fmt.Errorf("%w: log position %d is before the logged end %d but holds no valid record (%v)", ErrCorrupt, pos, endHint, err)
			}
			break
		}
		recs = append(recs, Record{Pos: pos, Blocks: blocks, Updates: ups})
		pos += blocks
	}
	if pos < endHint {
		return nil, 0, nil, fmt.Errorf("%w: log ends at %d before the logged end %d", ErrCorrupt, pos, endHint)
	}
	return l, start, recs, nil
}

func (l *Log) readRecord(pos uint64, first []byte, room uint64) ([]Update, uint64, error) {
	if err := l.ringRead(pos, first); err != nil {
		return nil, 0, err
	}
	r, err := parseDesc(l.h, pos, first)
	if err != nil {
		return nil, 0, err
	}
	if r.blocks() > room {
		return nil, 0, fmt.Errorf("%w: record at %d of %d blocks overruns the ring", errNoRecord, pos, r.blocks())
	}
	buf := make([]byte, r.blocks()*disk.BlockSize)
	if err := l.ringRead(pos, buf); err != nil {
		return nil, 0, err
	}
	ups, err := DecodeRecord(l.h, pos, buf)
	return ups, r.blocks(), err
}
