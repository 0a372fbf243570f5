// Package circular is the on-disk format of the journal's write-ahead log: a
// fixed-size circular log of records plus two header blocks, one owned by
// the logger and one by the installer, so logging and installation never
// share a lock (GoJournal, Figure 8).
//
// Layout of a disk of D blocks with a log of N blocks:
//
//	block 0        installer header: start of the log (first record not yet installed)
//	block 1        logger header: a lower bound on the durable end of the log
//	blocks 2..N+1  the ring; logical position p lives in block 2 + p mod N
//	blocks N+2..   the data region
//
// A record is one group commit: descriptor blocks (magic, journal id, its own
// logical position, the home address of every data block, CRC-32C over the
// whole record) followed by the data blocks. Because a record names its own
// position and checksums its contents, recovery can tell a complete record
// from a torn one or a stale one left from an earlier lap without a header
// write, so a group commit needs one barrier rather than two.
//
// Guarantees: Recover returns exactly the records from the installer's start
// up to the first record that is torn, stale or absent; a record before the
// logger header's end that fails its checksum is corruption and is reported,
// as are headers that are torn, inconsistent or point out of range.
//
// Assumptions: the caller orders writes with barriers: a record is written
// and made durable before any record after it; the installer header is
// advanced only after the installed blocks are durable, and ring space is
// reused only after that header is durable.
package circular

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"strata/journal/disk"
)

const (
	// InstallHdrBlock holds the installer's header (start of the log).
	InstallHdrBlock = 0
	// LogHdrBlock holds the logger's header (durable end hint).
	LogHdrBlock = 1
	// RingStart is the first block of the ring.
	RingStart = 2

	hdrMagic   = 0x4a4154525453 // "STRATJ" little-endian-ish tag
	recMagic   = 0x4345524a     // "JREC"
	version    = 1
	hdrLen     = 52 // encoded header bytes, CRC last
	recHdrLen  = 40 // record descriptor header bytes
	maxLogSize = 1 << 24
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrNotFormatted means block 0 does not hold a journal header at all.
var ErrNotFormatted = errors.New("circular: disk holds no journal (bad magic in block 0)")

// ErrCorrupt means the on-disk journal is damaged in a way recovery cannot
// repair without losing committed data.
var ErrCorrupt = errors.New("circular: corrupt journal")

// Update is one block write: the new contents of disk block Addr.
type Update struct {
	Addr uint64
	Data []byte // BlockSize bytes
}

// Header is the decoded contents of either header block.
type Header struct {
	ID         uint64 // random per Format; records carry it so an old journal's records are stale
	LogBlocks  uint64
	DiskBlocks uint64
	Pos        uint64 // installer: start; logger: durable end lower bound
}

// Layout returns the geometry the header describes.
func (h Header) DataStart() uint64 { return RingStart + h.LogBlocks }

// EncodeHeader writes h into a BlockSize buffer for block which (0 or 1).
func EncodeHeader(h Header, which uint32, buf []byte) {
	clear(buf[:disk.BlockSize])
	binary.LittleEndian.PutUint64(buf[0:], hdrMagic)
	binary.LittleEndian.PutUint32(buf[8:], version)
	binary.LittleEndian.PutUint32(buf[12:], which)
	binary.LittleEndian.PutUint64(buf[16:], h.ID)
	binary.LittleEndian.PutUint64(buf[24:], h.LogBlocks)
	binary.LittleEndian.PutUint64(buf[32:], h.DiskBlocks)
	binary.LittleEndian.PutUint64(buf[40:], h.Pos)
	binary.LittleEndian.PutUint32(buf[48:], crc32.Checksum(buf[:48], crcTable))
}

// DecodeHeader parses a header block, checking magic, version, role,
// checksum and that the geometry is self-consistent.
func DecodeHeader(buf []byte, which uint32) (Header, error) {
	var h Header
	if len(buf) < hdrLen {
		return h, fmt.Errorf("%w: header block %d is %d bytes", ErrCorrupt, which, len(buf))
	}
	if binary.LittleEndian.Uint64(buf[0:]) != hdrMagic {
		if which == InstallHdrBlock {
			return h, ErrNotFormatted
		}
		return h, fmt.Errorf("%w: header block %d has a bad magic number", ErrCorrupt, which)
	}
	if got, want := binary.LittleEndian.Uint32(buf[48:]), crc32.Checksum(buf[:48], crcTable); got != want {
		return h, fmt.Errorf("%w: header block %d checksum mismatch (torn or damaged write)", ErrCorrupt, which)
	}
	if v := binary.LittleEndian.Uint32(buf[8:]); v != version {
		return h, fmt.Errorf("%w: header block %d has format version %d, this build reads %d", ErrCorrupt, which, v, version)
	}
	if w := binary.LittleEndian.Uint32(buf[12:]); w != which {
		return h, fmt.Errorf("%w: header block %d claims to be header %d", ErrCorrupt, which, w)
	}
	h.ID = binary.LittleEndian.Uint64(buf[16:])
	h.LogBlocks = binary.LittleEndian.Uint64(buf[24:])
	h.DiskBlocks = binary.LittleEndian.Uint64(buf[32:])
	h.Pos = binary.LittleEndian.Uint64(buf[40:])
	if h.LogBlocks < MinLogBlocks || h.LogBlocks > maxLogSize {
		return h, fmt.Errorf("%w: header block %d: log size %d blocks out of range [%d,%d]", ErrCorrupt, which, h.LogBlocks, MinLogBlocks, maxLogSize)
	}
	if h.DiskBlocks <= h.DataStart() {
		return h, fmt.Errorf("%w: header block %d: disk of %d blocks leaves no data region after a %d-block log", ErrCorrupt, which, h.DiskBlocks, h.LogBlocks)
	}
	return h, nil
}

// MinLogBlocks is the smallest ring Format accepts.
const MinLogBlocks = 4

// DescBlocks is the number of descriptor blocks a record of n data blocks needs.
func DescBlocks(n int) uint64 {
	return uint64((recHdrLen + 8*n + disk.BlockSize - 1) / disk.BlockSize)
}

// RecordBlocks is the ring space, in blocks, of a record of n data blocks.
func RecordBlocks(n int) uint64 { return DescBlocks(n) + uint64(n) }

// Format writes fresh headers for an empty log of logBlocks blocks, with a
// new journal id, and makes them durable. It does not touch the ring: stale
// records there carry another id or position.
func Format(d disk.Disk, logBlocks uint64, id uint64) (Header, error) {
	h := Header{ID: id, LogBlocks: logBlocks, DiskBlocks: d.Size()}
	if logBlocks < MinLogBlocks || logBlocks > maxLogSize {
		return h, fmt.Errorf("circular: log size %d blocks out of range [%d,%d]", logBlocks, MinLogBlocks, maxLogSize)
	}
	if d.Size() <= h.DataStart() {
		return h, fmt.Errorf("circular: disk of %d blocks is too small for a %d-block log and any data", d.Size(), logBlocks)
	}
	buf := make([]byte, 2*disk.BlockSize)
	EncodeHeader(h, InstallHdrBlock, buf[:disk.BlockSize])
	EncodeHeader(h, LogHdrBlock, buf[disk.BlockSize:])
	if err := d.Write(InstallHdrBlock, buf); err != nil {
		return h, fmt.Errorf("circular: format: %w", err)
	}
	if err := d.Barrier(); err != nil {
		return h, fmt.Errorf("circular: format: %w", err)
	}
	return h, nil
}
