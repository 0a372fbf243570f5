package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/goose-lang/goose/machine/disk"
	"golang.org/x/sys/unix"
)

// The fdatasync disk is goose's FileDisk with another barrier: data goose
// writes reads back through it, its barrier descriptor is the same file,
// and Close releases both descriptors.
func TestFdatasyncDiskIsGooseFileDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	d, err := openDisk(path, 16, barrierFdatasync)
	if err != nil {
		t.Fatal(err)
	}
	fd, ok := d.(fdatasyncDisk)
	if !ok {
		t.Fatalf("openDisk(fdatasync) = %T, want fdatasyncDisk", d)
	}
	var byPath, bySync unix.Stat_t
	if err := unix.Stat(path, &byPath); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(fd.syncFd, &bySync); err != nil {
		t.Fatal(err)
	}
	if byPath.Ino != bySync.Ino || byPath.Dev != bySync.Dev {
		t.Fatalf("the barrier's descriptor is inode %d/%d, the disk file %d/%d", bySync.Dev, bySync.Ino, byPath.Dev, byPath.Ino)
	}
	if byPath.Size != 16*int64(disk.BlockSize) {
		t.Errorf("file is %d bytes, want 16 blocks", byPath.Size)
	}
	b := bytes.Repeat([]byte{7}, int(disk.BlockSize))
	d.Write(3, b)
	d.Barrier()
	if got := d.Read(3); !bytes.Equal(got, b) {
		t.Errorf("block 3 reads back %v..., want 7s", got[:4])
	}
	if d.Size() != 16 {
		t.Errorf("Size = %d, want 16", d.Size())
	}
	d.Close()
	if err := unix.Fstat(fd.syncFd, &bySync); err == nil {
		t.Errorf("the barrier's descriptor is still open after Close")
	}
}

func TestFsyncDiskIsGooseUnchanged(t *testing.T) {
	d, err := openDisk(filepath.Join(t.TempDir(), "d.img"), 4, barrierFsync)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, ok := d.(disk.FileDisk); !ok {
		t.Fatalf("openDisk(fsync) = %T, want goose's disk.FileDisk", d)
	}
}

func TestBadBarrier(t *testing.T) {
	if _, err := openDisk(filepath.Join(t.TempDir(), "d.img"), 4, "sync_file_range"); err == nil {
		t.Fatal("openDisk accepted an unknown barrier")
	}
}
