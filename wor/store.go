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
// allocated in order; a slot holds magic, flags, addr, promised ballot,
// accepted ballot, value length, partition, a CRC and the value. Two more
// kinds of slot reuse the layout: a partition's epoch state (addr: the
// partition, promised: the epoch, flags bit 1: active) and a free slot
// (never written by this version: reclaimed slots keep their old register
// until reused, and recovery frees the registers of trimmed segments).
//
// A register's flags: bit 0, a value is accepted; bit 2, it is known
// chosen (acceptor.chosen = accBallot; the ec engine's Phase 3). Records
// written before bit 2 existed read as not chosen, which is what they
// were; a reader without bit 2 ignores it, losing only the hint.
const (
	slotChosen = 4          // flags bit of a register slot: chosen = accBallot
	slotMagic  = 0x574f5232 // "WOR2": a register
	partMagic  = 0x574f5250 // "WORP": a partition's epoch state
	freeMagic  = 0x574f5246 // "WORF": a reclaimed slot
	floorMagic = 0x574f524c // "WORL": a segment's floor (keylog.go): addr the segment, promised the floor
	slotHdr    = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4
	// MaxPersistentValue is the largest value persistent mode stores (one
	// block per register in this version).
	MaxPersistentValue = disk.BlockSize - slotHdr
)

// ErrTooLarge: a value too large for the server's storage mode.
var ErrTooLarge = errors.New("wor: value too large for this server's storage")

// slotKind tells the kinds of slot apart.
type slotKind int

const (
	slotEmpty slotKind = iota // never written
	slotReg
	slotPart
	slotFree
	slotFloor
)

func encodeSlot(magic uint32, addr uint64, a *acceptor, flags uint32) []byte {
	b := make([]byte, disk.BlockSize)
	binary.LittleEndian.PutUint32(b[0:], magic)
	if a.has {
		flags |= 1
	}
	binary.LittleEndian.PutUint32(b[4:], flags)
	binary.LittleEndian.PutUint64(b[8:], addr)
	binary.LittleEndian.PutUint64(b[16:], a.promised)
	binary.LittleEndian.PutUint64(b[24:], a.accBallot)
	binary.LittleEndian.PutUint32(b[32:], uint32(len(a.value)))
	binary.LittleEndian.PutUint32(b[36:], a.part)
	copy(b[slotHdr:], a.value)
	binary.LittleEndian.PutUint32(b[40:], crc32.ChecksumIEEE(append(b[:40:40], a.value...)))
	return b
}

// decodeSlot returns what a slot block holds; flags are the slot's flag
// bits above bit 0 (which is a.has).
func decodeSlot(b []byte) (kind slotKind, addr uint64, a acceptor, flags uint32, err error) {
	magic := binary.LittleEndian.Uint32(b[0:])
	switch magic {
	case 0:
		return slotEmpty, 0, a, 0, nil
	case slotMagic:
		kind = slotReg
	case partMagic:
		kind = slotPart
	case freeMagic:
		kind = slotFree
	case floorMagic:
		kind = slotFloor
	default:
		return 0, 0, a, 0, fmt.Errorf("wor: slot has a bad magic number %#x", magic)
	}
	n := binary.LittleEndian.Uint32(b[32:])
	if n > MaxPersistentValue {
		return 0, 0, a, 0, fmt.Errorf("wor: slot value length %d out of range", n)
	}
	if binary.LittleEndian.Uint32(b[40:]) != crc32.ChecksumIEEE(append(b[:40:40], b[slotHdr:slotHdr+int(n)]...)) {
		return 0, 0, a, 0, fmt.Errorf("wor: slot checksum mismatch")
	}
	addr = binary.LittleEndian.Uint64(b[8:])
	flags = binary.LittleEndian.Uint32(b[4:])
	a.has = flags&1 != 0
	a.promised = binary.LittleEndian.Uint64(b[16:])
	a.accBallot = binary.LittleEndian.Uint64(b[24:])
	a.part = binary.LittleEndian.Uint32(b[36:])
	a.value = append([]byte(nil), b[slotHdr:slotHdr+int(n)]...)
	return kind, addr, a, flags &^ 1, nil
}

// journalStore keeps acceptor state in a journal.
type journalStore struct {
	j      *journal.Journal
	slots  map[uint64]uint64 // register addr -> slot (block)
	parts  map[uint32]uint64 // partition -> slot of its epoch state
	floors map[uint64]uint64 // segment -> slot of its floor
	free   []uint64          // reclaimed slots
	next   uint64            // slots below next were written at least once
}

// load reads every slot up to the first never-written one. Slots are
// allocated in order and the journal recovers a prefix of commits, so no
// written slot follows an empty one.
func (s *journalStore) load() (accs map[uint64]*acceptor, parts map[uint32]partState, floors map[uint64]uint64, err error) {
	accs = map[uint64]*acceptor{}
	parts = map[uint32]partState{}
	floors = map[uint64]uint64{}
	op := s.j.Begin()
	for s.next = 0; s.next < s.j.Size(); s.next++ {
		buf, err := op.ReadBuf(journal.Addr{Blkno: s.next}, journal.BlockBits)
		if err != nil {
			return nil, nil, nil, err
		}
		kind, addr, a, flags, err := decodeSlot(buf.Data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("slot %d: %w", s.next, err)
		}
		switch kind {
		case slotEmpty:
			return accs, parts, floors, nil
		case slotReg:
			s.slots[addr] = s.next
			// Values stay in their slots until read (Server.loaded), so
			// recovery holds only the registers' ballots in memory.
			a.spilled, a.value = a.has, nil
			if flags&slotChosen != 0 && a.has {
				a.chosen = a.accBallot
			}
			accs[addr] = &a
		case slotPart:
			s.parts[uint32(addr)] = s.next
			parts[uint32(addr)] = partState{epoch: uint32(a.promised), active: flags&2 != 0}
		case slotFree:
			s.free = append(s.free, s.next)
		case slotFloor:
			s.floors[addr] = s.next
			floors[addr] = a.promised
		}
	}
	return accs, parts, floors, nil
}

// slot returns the slot of a register, allocating one if it has none.
func (s *journalStore) slot(addr uint64) (uint64, error) {
	if slot, ok := s.slots[addr]; ok {
		return slot, nil
	}
	slot, err := s.alloc()
	if err != nil {
		return 0, err
	}
	s.slots[addr] = slot
	return slot, nil
}

// alloc takes a reclaimed slot, or the next never-used one.
func (s *journalStore) alloc() (uint64, error) {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot, nil
	}
	if s.next >= s.j.Size() {
		return 0, fmt.Errorf("wor: journal full: %d slots in use", s.next)
	}
	s.next++
	return s.next - 1, nil
}

func (s *journalStore) write(slot uint64, b []byte) error {
	op := s.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: slot}, journal.BlockBits, b); err != nil {
		return err
	}
	_, err := op.Commit(false)
	return err
}

// slotOf returns the slot that holds key's record in m (a partition's
// epoch state, a segment's floor), allocating one the first time.
func slotOf[K comparable](s *journalStore, m map[K]uint64, key K) (uint64, error) {
	if slot, ok := m[key]; ok {
		return slot, nil
	}
	slot, err := s.alloc()
	if err != nil {
		return 0, err
	}
	m[key] = slot
	return slot, nil
}

// savePart records a partition's epoch state.
func (s *journalStore) savePart(part uint32, st partState) error {
	slot, err := slotOf(s, s.parts, part)
	if err != nil {
		return err
	}
	flags := uint32(0)
	if st.active {
		flags = 2
	}
	return s.write(slot, encodeSlot(partMagic, uint64(part), &acceptor{promised: uint64(st.epoch)}, flags))
}

// saveFloor records a segment's floor (keylog.go).
func (s *journalStore) saveFloor(seg, floor uint64) error {
	slot, err := slotOf(s, s.floors, seg)
	if err != nil {
		return err
	}
	return s.write(slot, encodeSlot(floorMagic, seg, &acceptor{promised: floor}, 0))
}

// releaseFloor reclaims the floor slot of a trimmed segment: the trim
// mark, not the floor, now tells recovery its registers are garbage, and
// a floor recovered for a trimmed segment is ignored.
func (s *journalStore) releaseFloor(seg uint64) {
	slot, ok := s.floors[seg]
	if !ok {
		return
	}
	delete(s.floors, seg)
	s.free = append(s.free, slot)
}

// release reclaims the slot of a register whose segment was trimmed. The
// slot is not rewritten: the segment's trim mark, durable before the trim
// was acknowledged and never reclaimed, tells recovery that whatever
// register of the segment a slot still holds is garbage; a slot reused by
// a later register is overwritten by that register's commit.
func (s *journalStore) release(addr uint64) {
	slot, ok := s.slots[addr]
	if !ok {
		return
	}
	delete(s.slots, addr)
	s.free = append(s.free, slot)
}

// value reads a register's accepted value back from its slot (the
// latest state this store was given for it: committed, if not yet
// durable, operations are read too).
func (s *journalStore) value(addr uint64) ([]byte, error) {
	slot, ok := s.slots[addr]
	if !ok {
		return nil, fmt.Errorf("wor: register %#x has no journal slot", addr)
	}
	buf, err := s.j.Begin().ReadBuf(journal.Addr{Blkno: slot}, journal.BlockBits)
	if err != nil {
		return nil, fmt.Errorf("wor: read slot %d: %w", slot, err)
	}
	kind, got, a, _, err := decodeSlot(buf.Data)
	switch {
	case err != nil:
		return nil, fmt.Errorf("wor: slot %d: %w", slot, err)
	case kind != slotReg || got != addr:
		return nil, fmt.Errorf("wor: slot %d holds %#x, not register %#x", slot, got, addr)
	}
	return a.value, nil
}

// save appends the register's new state to the journal (in the caller's
// order: the caller holds the server lock). Durability comes with flush.
func (s *journalStore) save(addr uint64, a *acceptor) error {
	if a.spilled {
		// The slot is rewritten whole: without its value it would lose it.
		return fmt.Errorf("wor: register %#x saved without its value (a bug)", addr)
	}
	if len(a.value) > MaxPersistentValue {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(a.value), MaxPersistentValue)
	}
	slot, err := s.slot(addr)
	if err != nil {
		return err
	}
	flags := uint32(0)
	if a.chosen != 0 {
		flags = slotChosen
	}
	return s.write(slot, encodeSlot(slotMagic, addr, a, flags))
}
