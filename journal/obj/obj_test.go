package obj

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// Install and Extract against a bit-array model: random objects written
// into a block change exactly their own bits.
func TestInstallExtractModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	blk := make([]byte, BlockBits/8)
	model := make([]bool, BlockBits)
	for i := 0; i < 3000; i++ {
		var off, sz uint64
		switch rng.IntN(3) {
		case 0:
			off, sz = uint64(rng.IntN(BlockBits)), 1
		case 1:
			sz = uint64(8 * (1 + rng.IntN(256)))
			off = 8 * uint64(rng.IntN(int(BlockBits-sz)/8+1))
		default:
			off, sz = 0, BlockBits
		}
		if err := Check(Addr{Off: off}, sz, 1); err != nil {
			t.Fatalf("valid object %d@%d rejected: %v", sz, off, err)
		}
		val := make([]byte, max(sz/8, 1))
		for k := range val {
			val[k] = byte(rng.Uint32())
		}
		if sz == 1 {
			val[0] &= 1
		}
		Install(blk, off, sz, val)
		for b := uint64(0); b < sz; b++ {
			if sz == 1 {
				model[off] = val[0] == 1
			} else {
				model[off+b] = val[b/8]>>(b%8)&1 == 1
			}
		}
		if got := Extract(blk, off, sz); !bytes.Equal(got, val) {
			t.Fatalf("Extract(%d@%d) = %x, installed %x", sz, off, got[:min(8, len(got))], val[:min(8, len(val))])
		}
	}
	for b := 0; b < BlockBits; b++ {
		if (blk[b/8]>>(b%8)&1 == 1) != model[b] {
			t.Fatalf("bit %d differs from the model", b)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	bad := []struct {
		a  Addr
		sz uint64
	}{
		{Addr{Blkno: 10}, 8}, {Addr{Off: 1}, 8}, {Addr{}, 9}, {Addr{}, 0},
		{Addr{Off: BlockBits - 8}, 16}, {Addr{Off: BlockBits}, 1}, {Addr{Off: 1 << 63}, 8},
	}
	for _, c := range bad {
		if err := Check(c.a, c.sz, 10); !errors.Is(err, ErrObject) {
			t.Errorf("Check(%+v, %d) = %v, want ErrObject", c.a, c.sz, err)
		}
	}
}
