// Command gojournal is a benchmark worker that drives the published GoJournal
// package (github.com/mit-pdos/go-journal, pinned at v0.5.4) through its jrnl
// layer over a goose FileDisk whose barrier is fdatasync, as Strata's is
// (-barrier fdatasync, the default; see disk.go), or goose's own fsync
// (-barrier fsync: the FileDisk unchanged, GoJournal's default).
//
// Each of G worker goroutines repeatedly runs one journal operation:
//
//	op := jrnl.Begin(log)
//	op.OverWrite(<128-byte inode object>)   // block B + g/32, bit offset (g%32)*1024
//	op.OverWrite(<4096-byte data block>)    // block B + 64 + g
//	op.CommitWait(wait)
//
// where B = wal.LOGDISKBLOCKS (513), the first block after the on-disk log.
// Objects are disjoint per worker, so no locks are taken. With -wait=false each
// worker calls log.Flush() after every -flush-every of its own operations.
//
// After a 200ms warmup, operations that complete within the measured window
// are counted and their latency (Begin to CommitWait return, excluding any
// Flush) is recorded. One JSON line is printed on stdout at the end.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goose-lang/goose/machine/disk"
	"github.com/mit-pdos/go-journal/addr"
	"github.com/mit-pdos/go-journal/common"
	"github.com/mit-pdos/go-journal/jrnl"
	"github.com/mit-pdos/go-journal/obj"
	"github.com/mit-pdos/go-journal/wal"
)

const (
	blockSize = disk.BlockSize // 4096 bytes

	// dataStart is B: the first block address usable for data. The write-ahead
	// log occupies blocks [0, wal.LOGDISKBLOCKS): two header blocks followed by
	// wal.LOGSZ (511) log blocks. common.LOGSIZE is the same value (513).
	dataStart = wal.LOGDISKBLOCKS

	inodeBytes     = common.INODESZ               // 128
	inodeBits      = inodeBytes * 8               // 1024
	inodesPerBlock = blockSize / inodeBytes       // 32
	inodeBlocks    = 64                           // inode region: blocks [B, B+64)
	maxGoroutines  = inodeBlocks * inodesPerBlock // 2048 inode slots
	dataBlockBits  = common.NBITBLOCK             // 4096*8

	warmup          = 200 * time.Millisecond
	shutdownTimeout = 30 * time.Second
)

// Measurement phases.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

type result struct {
	System     string  `json:"system"`
	Goroutines int     `json:"goroutines"`
	Wait       bool    `json:"wait"`
	Ops        int     `json:"ops"`
	Seconds    float64 `json:"seconds"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	Barrier    string  `json:"barrier"`
}

// versions are what -version prints: the modules this binary was built
// with, from its build information.
type versions struct {
	GoJournal string `json:"go_journal"`
	Goose     string `json:"goose"`
	Go        string `json:"go"`
}

func buildVersions() (versions, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versions{}, errors.New("no build information in the binary")
	}
	v := versions{Go: bi.GoVersion}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		switch d.Path {
		case "github.com/mit-pdos/go-journal":
			v.GoJournal = d.Version
		case "github.com/goose-lang/goose":
			v.Goose = d.Version
		}
	}
	return v, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "gojournal-bench: %v\n", err)
		os.Exit(1)
	}
}

// fileBlocks returns the size of path in 4096-byte blocks, and whether it
// exists. Works for regular files and block devices.
func fileBlocks(path string) (uint64, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, true, fmt.Errorf("size of %s: %w", path, err)
	}
	return uint64(size) / blockSize, true, nil
}

func run() error {
	var (
		path       = flag.String("file", "", "disk file to use (created with -blocks blocks if it does not exist)")
		blocksFlag = flag.Uint64("blocks", 0, "number of 4096-byte blocks of the disk (default: file size / 4096)")
		goroutines = flag.Int("goroutines", 1, "number of concurrent workers")
		duration   = flag.Duration("duration", 2*time.Second, "measured run time (after a 200ms warmup)")
		wait       = flag.Bool("wait", true, "commit with CommitWait(wait)")
		flushEvery = flag.Int("flush-every", 16, "with -wait=false, each worker calls log.Flush() after every N of its own ops (0 = never)")
		barrier    = flag.String("barrier", barrierFdatasync, "the disk's barrier: fdatasync (Strata's) or fsync (goose FileDisk's own)")
		version    = flag.Bool("version", false, "print the go-journal, goose and Go versions as JSON and exit")
	)
	flag.Parse()
	if flag.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	if *version {
		v, err := buildVersions()
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(v)
	}
	if *barrier != barrierFdatasync && *barrier != barrierFsync {
		return fmt.Errorf("-barrier %q: want %s or %s", *barrier, barrierFdatasync, barrierFsync)
	}

	if *path == "" {
		return errors.New("-file is required")
	}
	G := *goroutines
	if G < 1 || G > int(maxGoroutines) {
		return fmt.Errorf("-goroutines must be in [1, %d], got %d", maxGoroutines, G)
	}
	if *duration <= 0 {
		return fmt.Errorf("-duration must be positive, got %v", *duration)
	}
	if *flushEvery < 0 {
		return fmt.Errorf("-flush-every must be >= 0, got %d", *flushEvery)
	}

	curBlocks, exists, err := fileBlocks(*path)
	if err != nil {
		return err
	}
	nblocks := *blocksFlag
	if nblocks == 0 {
		if !exists {
			return fmt.Errorf("%s does not exist and -blocks was not given", *path)
		}
		nblocks = curBlocks
	}
	need := dataStart + inodeBlocks + uint64(G)
	if nblocks < need {
		return fmt.Errorf("disk has %d blocks, need at least %d (B=%d + %d inode blocks + %d data blocks)",
			nblocks, need, dataStart, inodeBlocks, G)
	}
	if exists && nblocks != curBlocks {
		fmt.Fprintf(os.Stderr, "gojournal-bench: note: resizing %s from %d to %d blocks\n", *path, curBlocks, nblocks)
	}

	// goose's NewFileDisk opens with O_RDWR|O_CREAT and ftruncates regular
	// files to numBlocks*4096 bytes; openDisk sets the barrier.
	d, err := openDisk(*path, nblocks, *barrier)
	if err != nil {
		return fmt.Errorf("open disk %s: %w", *path, err)
	}
	defer d.Close()

	// Recovers the log (or initializes it from an all-zero disk) and starts
	// the logger and installer goroutines.
	log := obj.MkLog(d)

	var phase atomic.Int32 // phaseWarmup
	lats := make([][]time.Duration, G)
	errs := make(chan error, G)
	failed := make(chan struct{})
	var failOnce sync.Once
	var wg sync.WaitGroup
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			l, err := worker(log, uint64(g), *wait, *flushEvery, &phase)
			lats[g] = l
			if err != nil {
				errs <- fmt.Errorf("worker %d: %w", g, err)
				failOnce.Do(func() { close(failed) })
			}
		}(g)
	}

	var start, end time.Time
	select {
	case <-time.After(warmup):
		start = time.Now()
		phase.Store(phaseMeasure)
		select {
		case <-time.After(*duration):
		case <-failed:
		}
		end = time.Now()
	case <-failed:
	}
	phase.Store(phaseDone)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}

	// Make everything durable, then stop the logger/installer goroutines.
	if err := withTimeout(shutdownTimeout, func() {
		log.Flush()
		log.Shutdown()
	}); err != nil {
		return fmt.Errorf("flush/shutdown: %w", err)
	}

	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	secs := end.Sub(start).Seconds()
	res := result{
		System:     "go-journal",
		Goroutines: G,
		Wait:       *wait,
		Ops:        len(all),
		Seconds:    round(secs, 6),
		OpsPerSec:  round(float64(len(all))/secs, 3),
		P50us:      round(percentileUs(all, 0.50), 3),
		P99us:      round(percentileUs(all, 0.99), 3),
		Barrier:    *barrier,
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// worker runs journal operations until phase becomes phaseDone and returns the
// latencies of the operations that completed during phaseMeasure.
func worker(log *obj.Log, g uint64, wait bool, flushEvery int, phase *atomic.Int32) (lats []time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	inodeAddr := addr.MkAddr(dataStart+g/inodesPerBlock, (g%inodesPerBlock)*inodeBits)
	dataAddr := addr.MkAddr(dataStart+inodeBlocks+g, 0)
	lats = make([]time.Duration, 0, 1<<16)
	var iter uint64
	for phase.Load() != phaseDone {
		iter++
		// Fresh buffers every op: the obj layer hands whole-block buffers to
		// the WAL without copying, and the WAL keeps them until installed.
		ino := make([]byte, inodeBytes)
		binary.LittleEndian.PutUint64(ino, iter)
		data := make([]byte, blockSize)
		binary.LittleEndian.PutUint64(data, iter)
		binary.LittleEndian.PutUint64(data[8:], g)

		t0 := time.Now()
		op := jrnl.Begin(log)
		op.OverWrite(inodeAddr, inodeBits, ino)
		op.OverWrite(dataAddr, dataBlockBits, data)
		ok := op.CommitWait(wait)
		lat := time.Since(t0)
		if !ok {
			return lats, errors.New("CommitWait returned false")
		}
		if phase.Load() == phaseMeasure {
			lats = append(lats, lat)
		}
		if !wait && flushEvery > 0 && iter%uint64(flushEvery) == 0 {
			log.Flush()
		}
	}
	return lats, nil
}

// percentileUs returns the nearest-rank p-quantile of sorted, in microseconds.
func percentileUs(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return float64(sorted[i]) / float64(time.Microsecond)
}

func round(x float64, digits int) float64 {
	s := math.Pow(10, float64(digits))
	return math.Round(x*s) / s
}

func withTimeout(timeout time.Duration, f func()) error {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("timed out after %v", timeout)
	}
}
