// Package killtest checks the journal against real process death: a child
// process commits numbered operations on a FileDisk and prints an
// acknowledgement after each Commit(true) returns; the parent kills it with
// SIGKILL at a random moment, recovers the file and checks that every
// acknowledged operation is present and that no operation is half there.
//
// Each worker g owns two objects: a 128-byte inode-like record in a shared
// block (32 per block, so neighbours share blocks as in GoNFS) and a whole
// data block. Operation i of worker g writes (g, i) into both, so after
// recovery both must name the same i, at least the last acknowledged one.
package killtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"strata/journal"
	"strata/journal/disk"
)

const (
	inodeBits  = 128 * 8
	perBlock   = journal.BlockBits / inodeBits
	dataBase   = 64         // first data block of the workers
	recMagic   = 0x5354524b // "STRK"
	diskBlocks = 8192
	logBlocks  = 256
)

func inodeAddr(g int) journal.Addr {
	return journal.Addr{Blkno: uint64(g / perBlock), Off: uint64(g%perBlock) * inodeBits}
}

func dataAddr(g int) journal.Addr { return journal.Addr{Blkno: dataBase + uint64(g)} }

// encode fills b with worker g's record for operation i, checksummed.
func encode(b []byte, g int, i uint64) {
	clear(b)
	binary.LittleEndian.PutUint32(b[0:], recMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(g))
	binary.LittleEndian.PutUint64(b[8:], i)
	for k := 24; k+8 <= len(b); k += 8 {
		binary.LittleEndian.PutUint64(b[k:], i^uint64(k)*0x9e3779b97f4a7c15)
	}
	binary.LittleEndian.PutUint32(b[16:], crc32.ChecksumIEEE(b[24:]))
}

// decode returns the operation number stored in b for worker g; 0 for a
// never-written (all zero) record.
func decode(b []byte, g int) (uint64, error) {
	if binary.LittleEndian.Uint32(b[0:]) == 0 && binary.LittleEndian.Uint64(b[8:]) == 0 {
		for _, c := range b {
			if c != 0 {
				return 0, errors.New("record has no magic but is not zero")
			}
		}
		return 0, nil
	}
	if binary.LittleEndian.Uint32(b[0:]) != recMagic {
		return 0, errors.New("bad magic")
	}
	if got := int(binary.LittleEndian.Uint32(b[4:])); got != g {
		return 0, fmt.Errorf("record of worker %d found in worker %d's object", got, g)
	}
	if binary.LittleEndian.Uint32(b[16:]) != crc32.ChecksumIEEE(b[24:]) {
		return 0, errors.New("record checksum mismatch (torn object)")
	}
	return binary.LittleEndian.Uint64(b[8:]), nil
}

// Worker opens (formatting if absent) the journal file at path and has
// goroutines workers commit operations until ctx ends, writing "ack G I" to
// out after each Commit(true) returns. Each worker resumes after the
// operation number it finds on disk.
func Worker(ctx context.Context, path string, goroutines int, out io.Writer) error {
	j, err := openOrCreate(path)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	w := bufio.NewWriter(out)
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			errs <- func() error {
				b, err := j.Begin().ReadBuf(dataAddr(g), journal.BlockBits)
				if err != nil {
					return err
				}
				next, err := decode(b.Data, g)
				if err != nil {
					return fmt.Errorf("worker %d: %w", g, err)
				}
				ino := make([]byte, inodeBits/8)
				blk := make([]byte, disk.BlockSize)
				for i := next + 1; ctx.Err() == nil; i++ {
					op := j.Begin()
					encode(ino, g, i)
					encode(blk, g, i)
					if err := op.OverWrite(inodeAddr(g), inodeBits, ino); err != nil {
						return err
					}
					if err := op.OverWrite(dataAddr(g), journal.BlockBits, blk); err != nil {
						return err
					}
					if _, err := op.Commit(true); err != nil {
						return err
					}
					mu.Lock()
					fmt.Fprintf(w, "ack %d %d\n", g, i)
					err := w.Flush()
					mu.Unlock()
					if err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	var first error
	for g := 0; g < goroutines; g++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return errors.Join(first, j.Close())
}

func openOrCreate(path string) (*journal.Journal, error) {
	d, err := disk.OpenFile(path)
	if errors.Is(err, os.ErrNotExist) {
		d, err = disk.CreateFile(path, diskBlocks, 2+logBlocks)
		if err == nil {
			err = journal.Format(d, logBlocks)
		}
	}
	if err != nil {
		return nil, err
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		d.Close()
		return nil, err
	}
	return j, nil
}

// Result describes one kill-and-recover round.
type Result struct {
	Acked     int           // acknowledgements read before the kill
	KilledAt  time.Duration // time from start to SIGKILL
	Recovered map[int]uint64
	LastAck   map[int]uint64
	Replayed  uint64 // updates replayed by recovery
}

// Round starts the child made by cmd (which must run Worker on path and
// write acknowledgements to stdout), kills it with SIGKILL after a random
// delay in [minDelay, maxDelay) measured from its first acknowledgement,
// recovers path and checks it. It returns a descriptive error on any
// violation.
func Round(ctx context.Context, cmd *exec.Cmd, path string, goroutines int, rng *rand.Rand, minDelay, maxDelay time.Duration) (Result, error) {
	res := Result{LastAck: map[int]uint64{}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start child: %w", err)
	}
	firstAck := make(chan struct{})
	done := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ack" {
				continue
			}
			g, err1 := strconv.Atoi(f[1])
			i, err2 := strconv.ParseUint(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				done <- fmt.Errorf("child printed a malformed line %q", sc.Text())
				return
			}
			mu.Lock()
			res.Acked++
			res.LastAck[g] = max(res.LastAck[g], i)
			mu.Unlock()
			once.Do(func() { close(firstAck) })
		}
		done <- nil
	}()
	select {
	case <-firstAck:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return res, fmt.Errorf("child made no progress in 30s; stderr: %s", stderr.String())
	case <-ctx.Done():
		cmd.Process.Kill()
		cmd.Wait()
		return res, ctx.Err()
	}
	time.Sleep(minDelay + time.Duration(rng.Int64N(int64(maxDelay-minDelay)+1)))
	res.KilledAt = time.Since(start)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return res, fmt.Errorf("kill child: %w", err)
	}
	if err := <-done; err != nil {
		cmd.Wait()
		return res, err
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		return res, fmt.Errorf("child did not die of SIGKILL (%v); stderr: %s", werr, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	rec, replayed, err := Verify(path, goroutines, res.LastAck)
	res.Recovered, res.Replayed = rec, replayed
	return res, err
}

// Verify recovers the journal at path and checks every worker's objects
// against the last acknowledged operation numbers. It returns the recovered
// operation number of each worker.
func Verify(path string, goroutines int, lastAck map[int]uint64) (map[int]uint64, uint64, error) {
	d, err := disk.OpenFile(path)
	if err != nil {
		return nil, 0, err
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		d.Close()
		return nil, 0, fmt.Errorf("recovery failed: %w", err)
	}
	defer j.Close()
	got := map[int]uint64{}
	var errs []error
	op := j.Begin()
	for g := 0; g < goroutines; g++ {
		ib, err := op.ReadBuf(inodeAddr(g), inodeBits)
		if err != nil {
			return nil, 0, err
		}
		db, err := op.ReadBuf(dataAddr(g), journal.BlockBits)
		if err != nil {
			return nil, 0, err
		}
		iv, err1 := decode(ib.Data, g)
		dv, err2 := decode(db.Data, g)
		switch {
		case err1 != nil || err2 != nil:
			errs = append(errs, fmt.Errorf("worker %d: corrupt object after recovery: %v %v", g, err1, err2))
		case iv != dv:
			errs = append(errs, fmt.Errorf("worker %d: operation not atomic: inode says %d, data block says %d", g, iv, dv))
		case iv < lastAck[g]:
			errs = append(errs, fmt.Errorf("worker %d: acknowledged operation %d lost, recovered only %d", g, lastAck[g], iv))
		}
		got[g] = iv
	}
	return got, j.Stats().Recovered, errors.Join(errs...)
}
