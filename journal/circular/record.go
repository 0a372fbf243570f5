package circular

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"strata/journal/disk"
)

// errNoRecord marks a position that does not hold a valid record of this
// journal at this position: the end of the log unless it lies before the
// logger's durable end.
var errNoRecord = errors.New("no valid record")

// recInfo is a parsed descriptor header.
type recInfo struct {
	pos   uint64
	nData int
	nDesc uint64
}

func (r recInfo) blocks() uint64 { return r.nDesc + uint64(r.nData) }

// EncodeDesc writes into buf (grown as needed) and returns the descriptor
// blocks of the record for ups at logical position pos; the record on disk
// is these blocks followed by each update's data block.
func EncodeDesc(h Header, pos uint64, ups []Update, buf []byte) []byte {
	nDesc := DescBlocks(len(ups))
	size := int(nDesc) * disk.BlockSize
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	desc := buf[:size]
	clear(desc)
	binary.LittleEndian.PutUint32(desc[0:], recMagic)
	binary.LittleEndian.PutUint32(desc[4:], version)
	binary.LittleEndian.PutUint64(desc[8:], h.ID)
	binary.LittleEndian.PutUint64(desc[16:], pos)
	binary.LittleEndian.PutUint32(desc[24:], uint32(len(ups)))
	binary.LittleEndian.PutUint32(desc[28:], uint32(nDesc))
	// desc[32:36] is the CRC, zero while summing; desc[36:40] reserved.
	for i, u := range ups {
		binary.LittleEndian.PutUint64(desc[recHdrLen+8*i:], u.Addr)
	}
	c := crc32.Update(0, crcTable, desc)
	for _, u := range ups {
		c = crc32.Update(c, crcTable, u.Data[:disk.BlockSize])
	}
	binary.LittleEndian.PutUint32(desc[32:], c)
	return desc
}

// EncodeRecord returns the whole record for ups at pos as one buffer.
func EncodeRecord(h Header, pos uint64, ups []Update, buf []byte) []byte {
	desc := EncodeDesc(h, pos, ups, nil)
	buf = append(buf[:0], desc...)
	for _, u := range ups {
		buf = append(buf, u.Data[:disk.BlockSize]...)
	}
	return buf
}

// parseDesc checks the first descriptor block of a record expected at pos.
func parseDesc(h Header, pos uint64, first []byte) (recInfo, error) {
	var r recInfo
	if len(first) < recHdrLen {
		return r, errNoRecord
	}
	if binary.LittleEndian.Uint32(first[0:]) != recMagic ||
		binary.LittleEndian.Uint32(first[4:]) != version ||
		binary.LittleEndian.Uint64(first[8:]) != h.ID ||
		binary.LittleEndian.Uint64(first[16:]) != pos {
		return r, errNoRecord
	}
	r.pos = pos
	n := binary.LittleEndian.Uint32(first[24:])
	r.nDesc = uint64(binary.LittleEndian.Uint32(first[28:]))
	if n == 0 || uint64(n) > h.LogBlocks || r.nDesc != DescBlocks(int(n)) || r.nDesc+uint64(n) > h.LogBlocks {
		return r, fmt.Errorf("%w: record at log position %d: %d data blocks with %d descriptor blocks do not fit a %d-block log", errNoRecord, pos, n, r.nDesc, h.LogBlocks)
	}
	r.nData = int(n)
	return r, nil
}

// DecodeRecord checks a whole record read from logical position pos (buf
// holds exactly its blocks) and returns its updates, which alias buf.
func DecodeRecord(h Header, pos uint64, buf []byte) ([]Update, error) {
	r, err := parseDesc(h, pos, buf)
	if err != nil {
		return nil, err
	}
	if uint64(len(buf)) != r.blocks()*disk.BlockSize {
		return nil, fmt.Errorf("%w: record at %d is %d blocks, buffer holds %d bytes", errNoRecord, pos, r.blocks(), len(buf))
	}
	want := binary.LittleEndian.Uint32(buf[32:])
	c := crc32.Update(0, crcTable, buf[:32])
	c = crc32.Update(c, crcTable, []byte{0, 0, 0, 0})
	c = crc32.Update(c, crcTable, buf[36:])
	if c != want {
		return nil, fmt.Errorf("%w: record at log position %d fails its checksum", errNoRecord, pos)
	}
	descEnd := int(r.nDesc) * disk.BlockSize
	ups := make([]Update, r.nData)
	for i := range ups {
		a := binary.LittleEndian.Uint64(buf[recHdrLen+8*i:])
		if a < h.DataStart() || a >= h.DiskBlocks {
			// The checksum matched, so this was written this way: a bug or
			// deliberate damage, not a torn write.
			return nil, fmt.Errorf("%w: record at log position %d names block %d outside the data region [%d,%d)", ErrCorrupt, pos, a, h.DataStart(), h.DiskBlocks)
		}
		ups[i] = Update{Addr: a, Data: buf[descEnd+i*disk.BlockSize : descEnd+(i+1)*disk.BlockSize]}
	}
	return ups, nil
}
