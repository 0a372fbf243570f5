package wormtx

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"strata/journal"
	"strata/journal/disk"
)

// JournalStore is a Store on Strata's journal (GoJournal): the RM's
// write-ahead log is the journal's, every logged call one atomic journal
// operation committed without waiting, and Sync a journal flush, which
// the journal's logger shares among the operations committed before it
// (group commit).
//
// Layout of the journal's data region: block 0 a header (magic and the
// number V of vote slots); blocks 1..V vote slots, one vote record each
// (a free slot is zeros); after them the accounts, 256-byte objects
// allocated in order, each a key and its committed balance. Finish writes
// a committed transaction's balances and its record's Done in one
// operation, so a crash keeps both or neither.
//
// Limits: a vote record fits one block (a transaction with writes or
// reads of a few hundred accounts), an account key is at most
// MaxJournalKey bytes; Prepare refuses larger ones with ErrTooLarge (the
// RM then does not vote and the transaction aborts).
type JournalStore struct {
	j      *journal.Journal
	slots  uint64           // V
	bal    map[string]int64 // committed balances
	votes  map[uint64]Prepared
	slotOf map[uint64]uint64 // tx -> its vote slot
	free   []uint64          // free vote slots
	acct   map[string]journal.Addr
	naccts uint64 // accounts allocated
	sync   *groupSync
	owned  bool // Close closes j (OpenJournalDir opened it)
}

// DefaultJournalBlocks is the size of a new RM journal file in 4 KiB
// blocks (256 MiB: about 32,000 vote records kept at a time and 520,000
// accounts). Records are kept for 10 timeouts after their transaction
// ends, so an RM committing T transactions a second with timeout d needs
// about 10·d·T slots: 22,000 at 1,100 a second and d = 2 s, which a
// 64 MiB journal (8,000 slots) could not hold — its prepares then failed
// with "journal store full" and every transaction timed out.
const DefaultJournalBlocks = 65536

// OpenJournalDir opens the store in the journal file dir/tx.img, creating
// it with blocks blocks (0: DefaultJournalBlocks) the first time. Close
// closes the journal too.
func OpenJournalDir(dir string, blocks uint64) (*JournalStore, error) {
	if blocks == 0 {
		blocks = DefaultJournalBlocks
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j, _, err := journal.OpenFile(filepath.Join(dir, "tx.img"), blocks, journal.Options{})
	if err != nil {
		return nil, fmt.Errorf("wormtx: %w", err)
	}
	s, err := OpenJournalStore(j)
	if err != nil {
		j.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

const (
	jsMagic       = 0x57545831 // "WTX1": the header
	voteSlotMagic = 0x57545856 // "WTXV": a vote record
	acctMagic     = 0x57545841 // "WTXA": an account
	acctBytes     = 256
	acctHdr       = 4 + 4 + 8 + 1 // magic, CRC, balance, key length
	voteHdr       = 4 + 4 + 4     // magic, CRC, length
	acctsPerBlk   = disk.BlockSize / acctBytes
	maxVoteBytes  = disk.BlockSize - voteHdr
	// MaxJournalKey is the longest account key a JournalStore keeps.
	MaxJournalKey = acctBytes - acctHdr
)

// ErrTooLarge: a record or key does not fit the JournalStore's slots.
var ErrTooLarge = errors.New("wormtx: too large for the journal store")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenJournalStore recovers the store in j (formatting an empty journal
// on first use: half its data blocks for vote slots, half for accounts).
func OpenJournalStore(j *journal.Journal) (*JournalStore, error) {
	if j.Size() < 3 {
		return nil, fmt.Errorf("wormtx: a journal of %d data blocks is too small", j.Size())
	}
	s := &JournalStore{j: j, bal: map[string]int64{}, votes: map[uint64]Prepared{}, slotOf: map[uint64]uint64{}, acct: map[string]journal.Addr{}}
	op := j.Begin()
	hdr, err := op.ReadBuf(journal.Addr{Blkno: 0}, journal.BlockBits)
	if err != nil {
		return nil, err
	}
	switch magic := binary.LittleEndian.Uint32(hdr.Data); magic {
	case 0:
		s.slots = (j.Size() - 1) / 2
		b := make([]byte, disk.BlockSize)
		binary.LittleEndian.PutUint32(b, jsMagic)
		binary.LittleEndian.PutUint64(b[4:], s.slots)
		w := j.Begin()
		if err := w.OverWrite(journal.Addr{Blkno: 0}, journal.BlockBits, b); err != nil {
			return nil, err
		}
		if _, err := w.Commit(true); err != nil {
			return nil, fmt.Errorf("wormtx: format the journal store: %w", err)
		}
	case jsMagic:
		s.slots = binary.LittleEndian.Uint64(hdr.Data[4:])
		if s.slots == 0 || s.slots >= j.Size()-1 {
			return nil, fmt.Errorf("wormtx: journal store header: %d vote slots in %d blocks", s.slots, j.Size())
		}
	default:
		return nil, fmt.Errorf("wormtx: block 0 of the journal is not a WormTX store (magic %#x)", magic)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.sync = newGroupSync(j.Flush)
	return s, nil
}

// load reads the vote slots and the accounts.
func (s *JournalStore) load() error {
	op := s.j.Begin()
	for slot := uint64(1); slot <= s.slots; slot++ {
		buf, err := op.ReadBuf(journal.Addr{Blkno: slot}, journal.BlockBits)
		if err != nil {
			return err
		}
		p, used, err := decodeVoteSlot(buf.Data)
		if err != nil {
			return fmt.Errorf("wormtx: vote slot %d: %w", slot, err)
		}
		if !used {
			s.free = append(s.free, slot)
			continue
		}
		s.votes[p.Tx], s.slotOf[p.Tx] = p, slot
	}
	slices.Reverse(s.free) // hand out low slots first
	// Accounts are allocated in order and a crash keeps a prefix of the
	// operations, so the first empty object ends them.
	for ; ; s.naccts++ {
		a, ok := s.acctAddr(s.naccts)
		if !ok {
			break
		}
		buf, err := op.ReadBuf(a, acctBytes*8)
		if err != nil {
			return err
		}
		key, bal, used, err := decodeAccount(buf.Data)
		if err != nil {
			return fmt.Errorf("wormtx: account object %d: %w", s.naccts, err)
		}
		if !used {
			break
		}
		s.bal[key], s.acct[key] = bal, a
	}
	return nil
}

// acctAddr is the address of account object i, if the region holds it.
func (s *JournalStore) acctAddr(i uint64) (journal.Addr, bool) {
	blk := s.slots + 1 + i/acctsPerBlk
	if blk >= s.j.Size() {
		return journal.Addr{}, false
	}
	return journal.Addr{Blkno: blk, Off: (i % acctsPerBlk) * acctBytes * 8}, true
}

func encodeVoteSlot(p Prepared) ([]byte, error) {
	rec, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if len(rec) > maxVoteBytes {
		return nil, fmt.Errorf("%w: a vote record of %d bytes (a slot holds %d)", ErrTooLarge, len(rec), maxVoteBytes)
	}
	b := make([]byte, disk.BlockSize)
	binary.LittleEndian.PutUint32(b, voteSlotMagic)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(rec)))
	copy(b[voteHdr:], rec)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:voteHdr+len(rec)], castagnoli))
	return b, nil
}

// decodeVoteSlot reads a vote slot: used is false for a free (zero) one.
func decodeVoteSlot(b []byte) (p Prepared, used bool, err error) {
	if len(b) < voteHdr {
		return p, false, errors.New("short slot")
	}
	switch binary.LittleEndian.Uint32(b) {
	case 0:
		return p, false, nil
	case voteSlotMagic:
	default:
		return p, false, fmt.Errorf("bad magic %#x", binary.LittleEndian.Uint32(b))
	}
	n := int(binary.LittleEndian.Uint32(b[8:]))
	if n > len(b)-voteHdr {
		return p, false, fmt.Errorf("record length %d", n)
	}
	if crc32.Checksum(b[8:voteHdr+n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return p, false, errors.New("checksum mismatch")
	}
	if err := json.Unmarshal(b[voteHdr:voteHdr+n], &p); err != nil {
		return p, false, err
	}
	return p, true, nil
}

func encodeAccount(key string, bal int64) []byte {
	b := make([]byte, acctBytes)
	binary.LittleEndian.PutUint32(b, acctMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(bal))
	b[16] = byte(len(key))
	copy(b[acctHdr:], key)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

func decodeAccount(b []byte) (key string, bal int64, used bool, err error) {
	if len(b) != acctBytes {
		return "", 0, false, fmt.Errorf("%d bytes", len(b))
	}
	switch binary.LittleEndian.Uint32(b) {
	case 0:
		return "", 0, false, nil
	case acctMagic:
	default:
		return "", 0, false, fmt.Errorf("bad magic %#x", binary.LittleEndian.Uint32(b))
	}
	if crc32.Checksum(b[8:], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return "", 0, false, errors.New("checksum mismatch")
	}
	n := int(b[16])
	if n > MaxJournalKey {
		return "", 0, false, fmt.Errorf("key length %d", n)
	}
	return string(b[acctHdr : acctHdr+n]), int64(binary.LittleEndian.Uint64(b[8:])), true, nil
}

// commit commits op without waiting (durable at the next Sync).
func commit(op *journal.Op) error {
	_, err := op.Commit(false)
	return err
}

// Balances implements Store.
func (s *JournalStore) Balances() map[string]int64 { return maps.Clone(s.bal) }

// Votes implements Store.
func (s *JournalStore) Votes() []Prepared {
	var ps []Prepared
	for _, tx := range slices.Sorted(maps.Keys(s.votes)) {
		ps = append(ps, s.votes[tx])
	}
	return ps
}

// Vote implements Store.
func (s *JournalStore) Vote(tx uint64) (Prepared, bool) {
	p, ok := s.votes[tx]
	return p, ok
}

// Prepare implements Store.
func (s *JournalStore) Prepare(p Prepared) error {
	for k := range p.Writes {
		if len(k) > MaxJournalKey {
			return fmt.Errorf("%w: account key of %d bytes (at most %d)", ErrTooLarge, len(k), MaxJournalKey)
		}
	}
	b, err := encodeVoteSlot(p)
	if err != nil {
		return err
	}
	slot, ok := s.slotOf[p.Tx]
	if !ok {
		if len(s.free) == 0 {
			return fmt.Errorf("wormtx: journal store full: %d vote records kept", len(s.votes))
		}
		slot = s.free[len(s.free)-1]
	}
	op := s.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: slot}, journal.BlockBits, b); err != nil {
		return err
	}
	if err := commit(op); err != nil {
		return fmt.Errorf("wormtx: log a vote: %w", err)
	}
	if !ok {
		s.free = s.free[:len(s.free)-1]
	}
	p.Writes, p.Reads, p.Vote = maps.Clone(p.Writes), slices.Clone(p.Reads), slices.Clone(p.Vote)
	s.votes[p.Tx], s.slotOf[p.Tx] = p, slot
	return nil
}

// Finish implements Store: the balances and the record's Done in one
// operation.
func (s *JournalStore) Finish(tx uint64, commitTx bool) error {
	p, ok := s.votes[tx]
	if !ok || p.Done {
		return nil
	}
	p.Done = true
	b, err := encodeVoteSlot(p)
	if err != nil {
		return err
	}
	op := s.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: s.slotOf[tx]}, journal.BlockBits, b); err != nil {
		return err
	}
	added := uint64(0)
	newAcct := map[string]journal.Addr{}
	if commitTx {
		for _, k := range slices.Sorted(maps.Keys(p.Writes)) {
			a, ok := s.acct[k]
			if !ok {
				if a, ok = s.acctAddr(s.naccts + added); !ok {
					return fmt.Errorf("wormtx: journal store full: %d accounts", s.naccts)
				}
				added++
				newAcct[k] = a
			}
			if err := op.OverWrite(a, acctBytes*8, encodeAccount(k, p.Writes[k])); err != nil {
				return err
			}
		}
	}
	if err := commit(op); err != nil {
		return fmt.Errorf("wormtx: log an outcome: %w", err)
	}
	s.naccts += added
	maps.Copy(s.acct, newAcct)
	if commitTx {
		maps.Copy(s.bal, p.Writes)
	}
	s.votes[tx] = p
	return nil
}

// Forget implements Store: the record's slot is zeroed and reused.
func (s *JournalStore) Forget(tx uint64) error {
	slot, ok := s.slotOf[tx]
	if !ok {
		return nil
	}
	op := s.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: slot}, journal.BlockBits, make([]byte, disk.BlockSize)); err != nil {
		return err
	}
	if err := commit(op); err != nil {
		return fmt.Errorf("wormtx: drop a vote record: %w", err)
	}
	delete(s.votes, tx)
	delete(s.slotOf, tx)
	s.free = append(s.free, slot)
	return nil
}

// Sync implements Store: a journal flush, shared by the Syncs waiting.
func (s *JournalStore) Sync(done func(error)) { s.sync.sync(done) }

// Close flushes; Syncs still waiting get ErrClosed. The journal stays
// open unless OpenJournalDir opened it.
func (s *JournalStore) Close() error {
	s.sync.close()
	if s.owned {
		return s.j.Close()
	}
	return s.j.Flush()
}
