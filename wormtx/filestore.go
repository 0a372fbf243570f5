package wormtx

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// FileStore is a Store in a directory: an append-only log file
// (votes.log) of JSON records, each written to the file when logged and
// made durable by the next Sync: one goroutine fsyncs the file for every
// Sync waiting when it starts, so RMs under load share fsyncs (group
// commit). Opening replays the log and rewrites it compacted (the
// balances and the vote records still kept), so it grows only between
// restarts.
type FileStore struct {
	path string
	// f, bal and votes belong to the RM's calls (never concurrent);
	// the syncer goroutine only fsyncs f, which is safe beside a write.
	f     *os.File
	bal   map[string]int64
	votes map[uint64]Prepared

	syncMu  sync.Mutex
	waiting []func(error) // Syncs not yet started (guarded by syncMu)
	closed  bool          // guarded by syncMu
	kick    chan struct{} // wakes the syncer (capacity 1)
	stopped chan struct{} // closed when the syncer has returned
}

// fileRecord is one line of the log.
type fileRecord struct {
	Op       string           `json:"op"` // "balances", "prepare", "finish", "forget"
	Balances map[string]int64 `json:"balances,omitempty"`
	Vote     *Prepared        `json:"vote,omitempty"`
	Tx       uint64           `json:"tx,omitempty"`
	Commit   bool             `json:"commit,omitempty"`
}

// OpenFileStore opens (creating) the store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &FileStore{path: filepath.Join(dir, "votes.log"), bal: map[string]int64{}, votes: map[uint64]Prepared{}}
	if f, err := os.Open(s.path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		line := 0
		for sc.Scan() {
			line++
			var r fileRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				// A torn last line (a crash mid-append) is dropped: its
				// call never returned. Anything else is damage.
				if !sc.Scan() {
					break
				}
				f.Close()
				return nil, fmt.Errorf("wormtx: %s line %d: %w", s.path, line, err)
			}
			if err := s.apply(r); err != nil {
				f.Close()
				return nil, fmt.Errorf("wormtx: %s line %d: %w", s.path, line, err)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("wormtx: read %s: %w", s.path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := s.compact(); err != nil {
		return nil, err
	}
	s.kick, s.stopped = make(chan struct{}, 1), make(chan struct{})
	go s.syncer()
	return s, nil
}

// ErrClosed is what a Sync pending when the store closes reports.
var ErrClosed = errors.New("wormtx: store closed")

// syncer fsyncs the log for the Syncs waiting, in batches, until Close;
// it answers those left at Close with ErrClosed.
func (s *FileStore) syncer() {
	defer close(s.stopped)
	for {
		_, open := <-s.kick
		s.syncMu.Lock()
		batch, closed := s.waiting, s.closed
		s.waiting = nil
		s.syncMu.Unlock()
		if len(batch) > 0 {
			var err error
			if closed {
				err = ErrClosed
			} else if err = s.f.Sync(); err != nil {
				err = fmt.Errorf("wormtx: sync %s: %w", s.path, err)
			}
			for _, done := range batch {
				done(err)
			}
		}
		if !open {
			return
		}
	}
}

// Sync implements Store.
func (s *FileStore) Sync(done func(error)) {
	s.syncMu.Lock()
	if s.closed {
		s.syncMu.Unlock()
		done(ErrClosed)
		return
	}
	s.waiting = append(s.waiting, done)
	select { // under syncMu: Close cannot close kick meanwhile
	case s.kick <- struct{}{}:
	default: // a wake-up is pending: it will see this one
	}
	s.syncMu.Unlock()
}

func (s *FileStore) apply(r fileRecord) error {
	switch r.Op {
	case "balances":
		maps.Copy(s.bal, r.Balances)
	case "prepare":
		if r.Vote == nil {
			return errors.New("prepare record without a vote")
		}
		s.votes[r.Vote.Tx] = *r.Vote
	case "finish":
		p, ok := s.votes[r.Tx]
		if !ok || p.Done {
			return nil
		}
		if r.Commit {
			maps.Copy(s.bal, p.Writes)
		}
		p.Done = true
		s.votes[r.Tx] = p
	case "forget":
		delete(s.votes, r.Tx)
	default:
		return fmt.Errorf("unknown record %q", r.Op)
	}
	return nil
}

// compact writes the state as a fresh log and swaps it in.
func (s *FileStore) compact() error {
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	err = enc.Encode(fileRecord{Op: "balances", Balances: s.bal})
	for _, tx := range slices.Sorted(maps.Keys(s.votes)) {
		if err == nil {
			p := s.votes[tx]
			err = enc.Encode(fileRecord{Op: "prepare", Vote: &p})
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		return fmt.Errorf("wormtx: compact %s: %w", s.path, err)
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		_ = d.Sync() // the rename survives a crash
		d.Close()
	}
	s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o644)
	return err
}

// append logs r (durable at the next Sync), then applies it.
func (s *FileStore) append(r fileRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("wormtx: append to %s: %w", s.path, err)
	}
	return s.apply(r)
}

// Close fsyncs and closes the log; Syncs still waiting get ErrClosed.
func (s *FileStore) Close() error {
	s.syncMu.Lock()
	if s.closed {
		s.syncMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.kick)
	s.syncMu.Unlock()
	<-s.stopped
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Balances implements Store.
func (s *FileStore) Balances() map[string]int64 { return maps.Clone(s.bal) }

// Votes implements Store.
func (s *FileStore) Votes() []Prepared {
	var ps []Prepared
	for _, tx := range slices.Sorted(maps.Keys(s.votes)) {
		ps = append(ps, s.votes[tx])
	}
	return ps
}

// Vote implements Store.
func (s *FileStore) Vote(tx uint64) (Prepared, bool) {
	p, ok := s.votes[tx]
	return p, ok
}

// Prepare implements Store.
func (s *FileStore) Prepare(p Prepared) error { return s.append(fileRecord{Op: "prepare", Vote: &p}) }

// Finish implements Store.
func (s *FileStore) Finish(tx uint64, commit bool) error {
	return s.append(fileRecord{Op: "finish", Tx: tx, Commit: commit})
}

// Forget implements Store.
func (s *FileStore) Forget(tx uint64) error { return s.append(fileRecord{Op: "forget", Tx: tx}) }
