package main

import (
	"fmt"

	"github.com/goose-lang/goose/machine/disk"
	"golang.org/x/sys/unix"
)

// Barriers the worker offers (-barrier).
const (
	// barrierFdatasync is Strata's barrier (journal/disk.FileDisk.Barrier):
	// the like-for-like setting, and the default.
	barrierFdatasync = "fdatasync"
	// barrierFsync is goose's own FileDisk unchanged: GoJournal's default.
	barrierFsync = "fsync"
)

// openDisk opens path as GoJournal's disk with the barrier asked for. Both
// are goose's disk.FileDisk, opened by goose's NewFileDisk (O_RDWR|O_CREAT,
// ftruncate to numBlocks blocks, pread and pwrite of whole blocks); only
// Barrier differs.
func openDisk(path string, numBlocks uint64, barrier string) (disk.Disk, error) {
	switch barrier {
	case barrierFsync, barrierFdatasync:
	default:
		return nil, fmt.Errorf("-barrier %q: want %s or %s", barrier, barrierFdatasync, barrierFsync)
	}
	d, err := disk.NewFileDisk(path, numBlocks)
	if err != nil {
		return nil, err
	}
	if barrier == barrierFsync {
		return d, nil
	}
	// goose keeps its descriptor unexported, so the wrapper opens the file
	// a second time (same O_RDWR access) for its fdatasync. fsync(2) and
	// fdatasync(2) flush the file's dirty pages whichever descriptor wrote
	// them: the data goose's pwrite put in the page cache is on the disk
	// when this returns, as with goose's own fsync on its descriptor.
	fd, err := unix.Open(path, unix.O_RDWR, 0)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("open %s for fdatasync: %w", path, err)
	}
	return fdatasyncDisk{FileDisk: d, syncFd: fd}, nil
}

// fdatasyncDisk is goose's FileDisk whose Barrier is fdatasync instead of
// fsync: reads, writes and the size are goose's own methods. fdatasync
// skips the inode metadata that reading the data back does not need (the
// modification time); the file is prepared before the run (allocated,
// written with zeros, synced), so the blocks the log overwrites need no
// allocation and both barriers flush the same data.
type fdatasyncDisk struct {
	disk.FileDisk
	syncFd int
}

var _ disk.Disk = fdatasyncDisk{}

// Barrier panics on failure, as goose's does.
func (d fdatasyncDisk) Barrier() {
	if err := unix.Fdatasync(d.syncFd); err != nil {
		panic("file sync failed: " + err.Error())
	}
}

// Close closes both descriptors (goose's Close panics on failure).
func (d fdatasyncDisk) Close() {
	d.FileDisk.Close()
	if err := unix.Close(d.syncFd); err != nil {
		panic(err)
	}
}
