package wor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"strata/journal"
	"strata/journal/disk"
)

// Persistent acceptor state: one journal block per register (a slot),
// allocated in order; a slot holds magic, addr, promised ballot, accepted
// ballot, the value and a CRC.
const (
	slotMagic = 0x574f5253 // "WORS"
	slotHdr   = 4 + 4 + 8 + 8 + 8 + 4 + 4
	// MaxPersistentValue is the largest value persistent mode stores (one
	// block per register in this version).
	MaxPersistentValue = disk.BlockSize - slotHdr
)

// ErrTooLarge: a value too large for the server's storage mode.
var ErrTooLarge = errors.New("wor: value too large for this server's storage")

// journalStore keeps acceptor state in a journal.
type journalStore struct {
	j     *journal.Journal
	slots map[uint64]uint64 // addr -> slot (block)
	next  uint64
}

func encodeSlot(addr uint64, a *acceptor) []byte {
	b := make([]byte, disk.BlockSize)
	binary.LittleEndian.PutUint32(b[0:], slotMagic)
	flags := uint32(0)
	if a.has {
		flags = 1
	}
	binary.LittleEndian.PutUint32(b[4:], flags)
	binary.LittleEndian.PutUint64(b[8:], addr)
	binary.LittleEndian.PutUint64(b[16:], a.promised)
	binary.LittleEndian.PutUint64(b[24:], a.accBallot)
	binary.LittleEndian.PutUint32(b[32:], uint32(len(a.value)))
	copy(b[slotHdr:], a.value)
	binary.LittleEndian.PutUint32(b[36:], crc32.ChecksumIEEE(append(b[:36:36], b[slotHdr:slotHdr+len(a.value)]...)))
	return b
}

// decodeSlot returns the register in a slot block; ok is false for a
// never-written (all-zero) slot.
func decodeSlot(b []byte) (addr uint64, a acceptor, ok bool, err error) {
	if binary.LittleEndian.Uint32(b[0:]) == 0 {
		return 0, a, false, nil
	}
	if binary.LittleEndian.Uint32(b[0:]) != slotMagic {
		return 0, a, false, fmt.Errorf("wor: slot has a bad magic number")
	}
	n := binary.LittleEndian.Uint32(b[32:])
	if n > MaxPersistentValue {
		return 0, a, false, fmt.Errorf("wor: slot value length %d out of range", n)
	}
	if binary.LittleEndian.Uint32(b[36:]) != crc32.ChecksumIEEE(append(b[:36:36], b[slotHdr:slotHdr+int(n)]...)) {
		return 0, a, false, fmt.Errorf("wor: slot checksum mismatch")
	}
	addr = binary.LittleEndian.Uint64(b[8:])
	a.has = binary.LittleEndian.Uint32(b[4:])&1 != 0
	a.promised = binary.LittleEndian.Uint64(b[16:])
	a.accBallot = binary.LittleEndian.Uint64(b[24:])
	a.value = append([]byte(nil), b[slotHdr:slotHdr+int(n)]...)
	return addr, a, true, nil
}

// load reads every slot up to the first never-written one. Slots are
// allocated in order and the journal recovers a prefix of commits, so no
// written slot follows an empty one.
func (s *journalStore) load() (map[uint64]*acceptor, error) {
	accs := map[uint64]*acceptor{}
	op := s.j.Begin()
	for s.next = 0; s.next < s.j.Size(); s.next++ {
		buf, err := op.ReadBuf(journal.Addr{Blkno: s.next}, journal.BlockBits)
		if err != nil {
			return nil, err
		}
		addr, a, ok, err := decodeSlot(buf.Data)
		if err != nil {
			return nil, fmt.Errorf("slot %d: %w", s.next, err)
		}
		if !ok {
			break
		}
		s.slots[addr] = s.next
		accs[addr] = &a
	}
	return accs, nil
}

// save appends the register's new state to the journal (in the caller's
// order: the caller holds the server lock). Durability comes with flush.
func (s *journalStore) save(addr uint64, a *acceptor) error {
	if len(a.value) > MaxPersistentValue {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(a.value), MaxPersistentValue)
	}
	slot, ok := s.slots[addr]
	if !ok {
		if s.next >= s.j.Size() {
			return fmt.Errorf("wor: journal full: %d registers", s.next)
		}
		slot = s.next
		s.next++
		s.slots[addr] = slot
	}
	op := s.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: slot}, journal.BlockBits, encodeSlot(addr, a)); err != nil {
		return err
	}
	_, err := op.Commit(false)
	return err
}
