package disk

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// WriteVec must store exactly what a sequence of Writes would, on a disk
// with pwritev (FileDisk) and on one without (MemDisk), and reject bad input.
func TestWriteVecMatchesWrite(t *testing.T) {
	fd, err := CreateFile(filepath.Join(t.TempDir(), "v.img"), 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	md := NewMemDisk(64)
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 50; round++ {
		var bufs [][]byte
		n := uint64(0)
		for k := 1 + rng.IntN(5); k > 0; k-- {
			b := make([]byte, (1+rng.IntN(3))*BlockSize)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			bufs = append(bufs, b)
			n += uint64(len(b) / BlockSize)
		}
		a := uint64(rng.IntN(int(64 - n)))
		if err := WriteVec(fd, a, bufs); err != nil {
			t.Fatal(err)
		}
		for _, b := range bufs {
			md.Write(a, b)
			a += uint64(len(b) / BlockSize)
		}
	}
	x, y := make([]byte, 64*BlockSize), make([]byte, 64*BlockSize)
	fd.Read(0, x)
	md.Read(0, y)
	if !bytes.Equal(x, y) {
		t.Fatal("pwritev contents differ from sequential writes")
	}
	if err := fd.WriteVec(63, [][]byte{make([]byte, 2*BlockSize)}); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("vector past the end: %v", err)
	}
	if err := fd.WriteVec(0, [][]byte{make([]byte, 100)}); err == nil {
		t.Error("vector with a partial block accepted")
	}
}

// A bad vector write on a disk without pwritev writes nothing at all.
func TestWriteVecFallbackIsAllOrNothing(t *testing.T) {
	md := NewMemDisk(4)
	blk := bytes.Repeat([]byte{7}, BlockSize)
	if err := WriteVec(md, 3, [][]byte{blk, blk}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("overrun: %v", err)
	}
	if err := WriteVec(md, 0, [][]byte{blk, blk[:10]}); err == nil {
		t.Fatal("partial block accepted")
	}
	got := make([]byte, 4*BlockSize)
	md.Read(0, got)
	if !bytes.Equal(got, make([]byte, 4*BlockSize)) {
		t.Fatal("a rejected vector write changed the disk")
	}
}

func TestOpenFileRejectsPartialBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "odd.img")
	if err := os.WriteFile(p, make([]byte, 2*BlockSize+100), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenFile(p); err == nil {
		d.Close()
		t.Fatal("OpenFile accepted a file that is not a whole number of blocks")
	}
}
