package fs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/internal/testseed"
)

// wantCorrupt asserts that err reports damage (ErrCorrupt, hence ErrIO) as
// a *CorruptError naming inode inum and, if bn is not 0, block bn.
func wantCorrupt(t *testing.T, what string, err error, inum Inum, bn uint64) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrIO) {
		t.Fatalf("%s: error %v, want ErrCorrupt (and ErrIO)", what, err)
	}
	ce, ok := errors.AsType[*CorruptError](err)
	if !ok {
		t.Fatalf("%s: error %v is not a *CorruptError", what, err)
	}
	if ce.Inode != inum || (bn != 0 && ce.Block != bn) {
		t.Fatalf("%s: damage reported at inode %d block %d, want inode %d block %d (%v)", what, ce.Inode, ce.Block, inum, bn, err)
	}
}

// allocState is what a failed operation must leave as it was in memory.
type allocState struct {
	ifree, bfree       uint64
	ifreeing, bfreeing int
	ibad               int
}

func allocsOf(f *FS) allocState {
	f.ialloc.mu.Lock()
	defer f.ialloc.mu.Unlock()
	f.balloc.mu.Lock()
	defer f.balloc.mu.Unlock()
	return allocState{f.ialloc.free, f.balloc.free, len(f.ialloc.freeing), len(f.balloc.freeing), len(f.ialloc.bad)}
}

// problems runs Check and returns its problems (sorted).
func problems(t *testing.T, f *FS) []string {
	t.Helper()
	r, err := f.Check()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	p := slices.Clone(r.Problems)
	slices.Sort(p)
	return p
}

// readAll reads a whole file.
func readAll(t *testing.T, f *FS, h Handle) []byte {
	t.Helper()
	data, eof, _, err := f.Read(h, 0, 1<<20)
	if err != nil || !eof {
		t.Fatalf("read inode %d: %d bytes, eof %v, %v", h.Ino, len(data), eof, err)
	}
	return data
}

// lookupPath resolves a path from the root.
func lookupPath(t *testing.T, f *FS, path string) Handle {
	t.Helper()
	h := f.Root()
	for _, name := range strings.Split(path, "/") {
		var err error
		if h, _, _, err = f.Lookup(h, name); err != nil {
			t.Fatalf("lookup %s: %v", path, err)
		}
	}
	return h
}

// TestDamageFailsOperations damages a populated image in ways an
// operation runs into, then runs the operations: each must fail with
// ErrCorrupt naming the damaged inode (and block), not panic and not
// change anything: the in-memory allocators are as before, Check reports
// exactly the problems it reported before the operation, and the files
// the damage does not touch still read back and can be changed.
func TestDamageFailsOperations(t *testing.T) {
	// check is an operation that must meet the damage, and whether its
	// report may name any block.
	type check struct {
		run      func(f *FS, x *fixture) error
		anyBlock bool
	}
	type op struct {
		name string
		// run returns the operation's error and the inode and block the
		// damage report must name (block 0: any).
		check
	}
	type dmg struct {
		name   string
		damage func(t *testing.T, x *fixture) (inum Inum, bn uint64) // where the damage is
		reopen bool
		ops    []op
		// touched lists the files of intact whose content the damage
		// changes or hides.
		touched []string
		// quarantine: the operations may take one inode number out of the
		// allocator (inode free in the bitmap but in use).
		quarantine bool
		// spreads: a block in use is free in the bitmap, so the allocator
		// hands it out again to the operations after the damage (as the
		// package documents: only Check sees this).
		spreads bool
	}
	intact := []string{"a", "b", "big", "d/c"}
	root := func(f *FS) Handle { return f.Root() }
	h := func(f *FS, x *fixture, inum Inum) Handle {
		return Handle{Ino: inum, Gen: rawInode(t, f, inum).gen}
	}
	remove := func(dir func(*FS, *fixture) Handle, name string) func(*FS, *fixture) error {
		return func(f *FS, x *fixture) error { _, _, err := f.Remove(dir(f, x), name, ts(10)); return err }
	}
	rootDir := func(f *FS, _ *fixture) Handle { return root(f) }
	truncate := func(inum func(*fixture) Inum, size uint64) func(*FS, *fixture) error {
		return func(f *FS, x *fixture) error {
			_, _, err := f.SetAttr(h(f, x, inum(x)), SetAttr{Size: u64p(size)}, nil, ts(10))
			return err
		}
	}
	var where struct {
		inum Inum
		bn   uint64
	}
	at := func(run func(*FS, *fixture) error) check { return check{run: run} }
	atInode := func(run func(*FS, *fixture) error) check { return check{run: run, anyBlock: true} }
	fileA := func(x *fixture) Inum { return x.a }
	cases := []dmg{
		{
			name: "block of a file free in the bitmap", reopen: true, spreads: true,
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bn := x.ptr(t, x.a, 1)
				putBit(t, x.f, x.f.sb.blockBitAddr(bn), 0)
				return x.a, bn
			},
			ops: []op{
				{"remove", at(remove(rootDir, "a"))},
				{"truncate to 0", at(truncate(fileA, 0))},
				{"truncate to 1 block", at(truncate(fileA, 100))},
			},
		},
		{
			name: "file names one block twice",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bn, old := x.ptr(t, x.a, 2), x.ptr(t, x.a, 1)
				editInode(t, x.f, x.a, func(ip *inode) { ip.ptr[1] = uint32(bn); ip.used-- })
				putBit(t, x.f, x.f.sb.blockBitAddr(old), 0) // the bitmap agrees with the maps, but for the block named twice
				return x.a, bn
			},
			reopen:  true,
			touched: []string{"a"},
			ops:     []op{{"remove", at(remove(rootDir, "a"))}, {"truncate", at(truncate(fileA, 0))}},
		},
		{
			name:    "data pointer outside the data area",
			touched: []string{"a"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.a, func(ip *inode) { ip.ptr[1] = 2 })
				return x.a, 2
			},
			ops: []op{
				{"read", at(func(f *FS, x *fixture) error { _, _, _, err := f.Read(h(f, x, x.a), 0, 3*blockSize); return err })},
				{"partial write", at(func(f *FS, x *fixture) error {
					_, _, err := f.Write(h(f, x, x.a), blockSize+10, []byte("xy"), true, ts(10))
					return err
				})},
				{"remove", at(remove(rootDir, "a"))},
			},
		},
		{
			name:    "indirect pointer past the end of the disk",
			touched: []string{"big"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bad := x.f.sb.nblocks + 100
				editInode(t, x.f, x.big, func(ip *inode) { ip.ptr[nDirect] = uint32(bad) })
				return x.big, bad
			},
			ops: []op{
				{"read past the direct blocks", at(func(f *FS, x *fixture) error {
					_, _, _, err := f.Read(h(f, x, x.big), 10*blockSize, 100)
					return err
				})},
				{"write past the direct blocks", at(func(f *FS, x *fixture) error {
					_, _, err := f.Write(h(f, x, x.big), 10*blockSize, []byte("x"), true, ts(10))
					return err
				})},
				{"truncate", at(truncate(func(x *fixture) Inum { return x.big }, 0))},
			},
		},
		{
			name:    "absurd file size",
			touched: []string{"b"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.b, func(ip *inode) { ip.size = 1 << 50 })
				return x.b, 0
			},
			ops: []op{
				{"getattr", atInode(func(f *FS, x *fixture) error {
					_, err := f.GetAttr(Handle{Ino: x.b, Gen: rawInode(t, f, x.b).gen})
					return err
				})},
				{"read", atInode(func(f *FS, x *fixture) error { _, _, _, err := f.Read(h(f, x, x.b), 1<<45, 10); return err })},
				{"lookup", atInode(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(f.Root(), "b"); return err })},
			},
		},
		{
			name:    "inode of bad type",
			touched: []string{"b"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.b, func(ip *inode) { ip.typ = 42 })
				return x.b, 0
			},
			ops: []op{
				{"getattr", atInode(func(f *FS, x *fixture) error {
					_, err := f.GetAttr(Handle{Ino: x.b, Gen: rawInode(t, f, x.b).gen})
					return err
				})},
				{"remove", atInode(remove(rootDir, "b"))},
			},
		},
		{
			name:    "entry names an inode outside the table",
			touched: []string{"b"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
					es[entryIndex(t, es, "b")].inum = 1 << 40
					return es
				})
				return rootInum, 0
			},
			ops: []op{
				{"lookup", atInode(func(f *FS, _ *fixture) error { _, _, _, err := f.Lookup(f.Root(), "b"); return err })},
				{"remove", atInode(remove(rootDir, "b"))},
				{"rename", atInode(func(f *FS, _ *fixture) error {
					_, _, _, _, err := f.Rename(f.Root(), "b", f.Root(), "b2", ts(10))
					return err
				})},
				{"rename onto it", atInode(func(f *FS, _ *fixture) error {
					_, _, _, _, err := f.Rename(f.Root(), "a", f.Root(), "b", ts(10))
					return err
				})},
				{"create over it", atInode(func(f *FS, _ *fixture) error {
					_, _, _, _, err := f.Create(f.Root(), "b", Unchecked, SetAttr{}, 0, 0, 0, ts(10))
					return err
				})},
				{"readdir", atInode(func(f *FS, _ *fixture) error { _, _, _, _, err := f.ReadDir(f.Root(), 0, 0, 100, true); return err })},
			},
		},
		{
			name:    "entry names a free inode",
			touched: []string{"b"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
					es[entryIndex(t, es, "b")].inum = 200
					return es
				})
				return rootInum, 0
			},
			ops: []op{
				{"lookup", atInode(func(f *FS, _ *fixture) error { _, _, _, err := f.Lookup(f.Root(), "b"); return err })},
				{"remove", atInode(remove(rootDir, "b"))},
			},
		},
		{
			name: "entry names its own directory",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				g := x.ino(t, x.d).gen
				editLeaf(t, x.f, x.ptr(t, x.d, 0), false, func(es []dent) []dent {
					return append(es, dent{key: x.f.hash("self") << 8, inum: x.d, gen: g, name: "self"})
				})
				return x.d, 0
			},
			ops: []op{
				{"rmdir", atInode(func(f *FS, x *fixture) error {
					_, _, err := f.Rmdir(h(f, x, x.d), "self", ts(10))
					return err
				})},
				{"rename", atInode(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.Rename(h(f, x, x.d), "self", f.Root(), "moved", ts(10))
					return err
				})},
			},
		},
		{
			name:    "garbage in a directory leaf",
			touched: []string{"d/c"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bn := x.ptr(t, x.d, 0)
				b := rawBlock(t, x.f, bn)
				binary16(b[2:], 60000)
				putBlock(t, x.f, bn, b)
				return x.d, bn
			},
			ops: []op{
				{"lookup", at(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(h(f, x, x.d), "c"); return err })},
				{"readdir", at(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.ReadDir(h(f, x, x.d), 0, 0, 100, false)
					return err
				})},
				{"create", at(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.Create(h(f, x, x.d), "new", Guarded, SetAttr{}, 0, 0, 0, ts(10))
					return err
				})},
				{"remove", at(remove(func(f *FS, x *fixture) Handle { return h(f, x, x.d) }, "c"))},
			},
		},
		{
			name:    "directory node of bad kind",
			touched: []string{"d/c"},
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bn := x.ptr(t, x.d, 0)
				b := rawBlock(t, x.f, bn)
				b[0] = 77
				putBlock(t, x.f, bn, b)
				return x.d, bn
			},
			ops: []op{
				{"lookup", at(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(h(f, x, x.d), "c"); return err })},
				{"mkdir", at(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.Mkdir(h(f, x, x.d), "new", SetAttr{}, 0, 0, ts(10))
					return err
				})},
			},
		},
		{
			name: "internal directory node with too many keys",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				bn, _ := x.wideChildren(t)
				b := rawBlock(t, x.f, bn)
				binary16(b[2:], 65535)
				putBlock(t, x.f, bn, b)
				return x.wide, bn
			},
			ops: []op{
				{"lookup", at(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(h(f, x, x.wide), "x"); return err })},
				{"create", at(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.Create(h(f, x, x.wide), "x", Guarded, SetAttr{}, 0, 0, 0, ts(10))
					return err
				})},
				{"readdir", at(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.ReadDir(h(f, x, x.wide), 0, 0, 1000, false)
					return err
				})},
			},
		},
		{
			name: "directory nodes in a loop",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				// Every child of wide's root is the root itself: a walk
				// would go 16 levels down 340 ways each without the bounds.
				bn, in := x.wideChildren(t)
				for i := range in.children {
					in.children[i] = bn
				}
				putBlock(t, x.f, bn, encodeInner(in))
				return x.wide, 0
			},
			ops: []op{
				{"readdir", atInode(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.ReadDir(h(f, x, x.wide), 0, 0, 1000, false)
					return err
				})},
				{"lookup", atInode(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(h(f, x, x.wide), "x"); return err })},
				{"create", atInode(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.Create(h(f, x, x.wide), "x", Guarded, SetAttr{}, 0, 0, 0, ts(10))
					return err
				})},
			},
		},
		{
			name: "directory nodes shared down a chain",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				// wide's root leads to a chain of 5 full internal nodes whose
				// children are all the next one: 341^5 paths to one leaf.
				bn, in := x.wideChildren(t)
				chain := freeDataBlocks(t, x.f, 5)
				next := in.children[0] // a leaf
				for _, c := range chain {
					n := inner{children: []uint64{next}}
					for k := 1; k <= maxInternalN; k++ {
						n.keys = append(n.keys, uint64(k)<<40)
						n.children = append(n.children, next)
					}
					putBlock(t, x.f, c, encodeInner(n))
					next = c
				}
				putBlock(t, x.f, bn, encodeInner(inner{children: []uint64{next}}))
				return x.wide, 0
			},
			// A full listing meets the sharing; a lookup follows one path
			// down the chain, which may be within the tree's size.
			ops: []op{
				{"readdir", atInode(func(f *FS, x *fixture) error {
					_, _, _, _, err := f.ReadDir(h(f, x, x.wide), 0, 0, 1<<30, false)
					return err
				})},
			},
		},
		{
			name: "inode in use free in the inode bitmap", reopen: true,
			quarantine: true,
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				putBit(t, x.f, x.f.sb.inodeBitAddr(x.b), 0)
				return x.b, 0
			},
			ops: []op{
				// The allocator hands out the lowest free inode: b's.
				{"create", atInode(func(f *FS, _ *fixture) error {
					_, _, _, _, err := f.Create(f.Root(), "new", Guarded, SetAttr{}, 0, 0, 0, ts(10))
					return err
				})},
				{"remove", atInode(remove(rootDir, "b"))},
			},
		},
		{
			name: "free inode of bad type", quarantine: true,
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				next := Inum(1) // the inode the next create gets
				for x.f.ialloc.isUsed(uint64(next)) {
					next++
				}
				editInode(t, x.f, next, func(ip *inode) { ip.typ = 99 })
				return next, 0
			},
			ops: []op{{"create", atInode(func(f *FS, _ *fixture) error {
				_, _, _, _, err := f.Create(f.Root(), "new", Guarded, SetAttr{}, 0, 0, 0, ts(10))
				return err
			})}},
		},
		{
			name: "symlink with a bad size",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.l, func(ip *inode) { ip.size = 1 << 20 })
				return x.l, 0
			},
			ops: []op{{"readlink", atInode(func(f *FS, x *fixture) error { _, _, err := f.Readlink(h(f, x, x.l)); return err })}},
		},
		{
			name: "directory's parent outside the table",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.e, func(ip *inode) { ip.ptr[1] = 1 << 31 })
				return x.e, 0
			},
			ops: []op{
				{"lookup ..", atInode(func(f *FS, x *fixture) error { _, _, _, err := f.Lookup(h(f, x, x.e), ".."); return err })},
				{"readdir", atInode(func(f *FS, x *fixture) error { _, _, _, _, err := f.ReadDir(h(f, x, x.e), 0, 0, 10, false); return err })},
			},
		},
		{
			name: "used count of a file 0 with blocks mapped",
			damage: func(t *testing.T, x *fixture) (Inum, uint64) {
				editInode(t, x.f, x.b, func(ip *inode) { ip.used = 0 })
				return x.b, x.ptr(t, x.b, 0)
			},
			ops: []op{{"remove", at(remove(rootDir, "b"))}},
		},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			x := newFixture(t)
			want := map[string][]byte{}
			for _, p := range intact {
				want[p] = readAll(t, x.f, lookupPath(t, x.f, p))
			}
			where.inum, where.bn = c.damage(t, x)
			f := x.f
			if c.reopen {
				f = reopen(t, f)
			}
			before := problems(t, f)
			if len(before) == 0 {
				t.Fatal("the damage is not visible to Check")
			}
			for _, o := range c.ops {
				allocs := allocsOf(f)
				var err error
				withDeadline(t, o.name, func() { err = o.run(f, x) })
				bn := where.bn
				if o.anyBlock {
					bn = 0
				}
				wantCorrupt(t, o.name, err, where.inum, bn)
				if got := allocsOf(f); got != allocs && !(c.quarantine && got.ifree == allocs.ifree-1 && got.ibad == allocs.ibad+1) {
					t.Fatalf("%s: allocators %+v after the failed operation, %+v before", o.name, got, allocs)
				}
				if after := problems(t, f); !slices.Equal(after, before) {
					t.Fatalf("%s: after the failed operation Check reports:\n  %s\nbefore:\n  %s", o.name, strings.Join(after, "\n  "), strings.Join(before, "\n  "))
				}
			}
			// Files the damage does not touch read back, and the file
			// system still takes changes that add no problem.
			for _, p := range intact {
				if slices.Contains(c.touched, p) {
					continue
				}
				if got := readAll(t, f, lookupPath(t, f, p)); !bytes.Equal(got, want[p]) {
					t.Fatalf("%s: %d bytes read back, %d written", p, len(got), len(want[p]))
				}
			}
			dh, _, _, _, err := f.Mkdir(f.Root(), "afterwards", SetAttr{}, 0, 0, ts(20))
			if err != nil {
				t.Fatalf("mkdir after the damage: %v", err)
			}
			fh, _, _, _, err := f.Create(dh, "file", Guarded, SetAttr{}, 0, 0, 0, ts(20))
			if err != nil {
				t.Fatalf("create after the damage: %v", err)
			}
			if _, _, err := f.Write(fh, 0, bytes.Repeat([]byte("z"), 3*blockSize), true, ts(21)); err != nil {
				t.Fatalf("write after the damage: %v", err)
			}
			if _, _, err := f.Remove(dh, "file", ts(22)); err != nil {
				t.Fatalf("remove after the damage: %v", err)
			}
			if after := problems(t, f); !slices.Equal(after, before) && !c.spreads {
				t.Fatalf("after more operations Check reports:\n  %s\nbefore:\n  %s", strings.Join(after, "\n  "), strings.Join(before, "\n  "))
			}
		})
	}
}

// withDeadline runs fn and fails the test if it takes more than 30 s.
func withDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still running after 30 s", what)
	}
}

func binary16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }

// fsSentinels are the errors every failing operation must wrap.
var fsSentinels = []error{ErrNoEnt, ErrExist, ErrNotDir, ErrIsDir, ErrNotEmpty, ErrNameTooLong, ErrStale,
	ErrNoSpace, ErrMLink, ErrInval, ErrFBig, ErrBadCookie, ErrNotSync, ErrIO}

func knownErr(err error) bool {
	return slices.ContainsFunc(fsSentinels, func(s error) bool { return errors.Is(err, s) })
}

// TestDamageRandom corrupts random bytes of random metadata blocks of a
// populated image (superblock, bitmaps, orphan table, inode table,
// directory nodes, indirect blocks), opens it and runs random operations,
// then Check: nothing may panic or hang (each round has a deadline), every
// error must be one of the file system's (ErrCorrupt for damage), and Open
// either works or fails with an error. Seeds come from testseed: a failed
// round prints its replay command (STRATA_SEED=N); STRATA_SEEDS=K runs K
// rounds.
func TestDamageRandom(t *testing.T) {
	rounds := 60
	if raceEnabled {
		rounds = 20
	}
	stats := map[string]int{}
	for s := range testseed.Each(t, testseed.Fresh(rounds)...) {
		stats[guardedDamageRound(t, s)]++
	}
	t.Logf("outcomes: %v", stats)
}

// guardedDamageRound runs damageRound under a deadline, and turns a panic
// into a failure of the seed (only to name it: the file system itself must
// return errors, never panic).
func guardedDamageRound(t *testing.T, seed uint64) string {
	// No deadline can stop a goroutine that hangs: the watchdog names the
	// seed, prints every goroutine and ends the test binary.
	watchdog := time.AfterFunc(60*time.Second, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "TestDamageRandom: seed %d still running after 60 s (a hang?); replay: %s=%d go test ./nfs/fs -run '^TestDamageRandom$'\n%s", seed, testseed.SeedVar, seed, buf[:n])
		os.Exit(2)
	})
	defer watchdog.Stop()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return damageRound(t, seed)
}

// damageRound runs one round and returns its outcome.
func damageRound(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0xda3a9e))
	x := newFixtureSalt(t, rng.Uint64())
	f := x.f
	// Metadata blocks, and the inode table slots in use.
	meta := []uint64{0, f.sb.orphanStart}
	for b := uint64(0); b < f.sb.ibmBlocks; b++ {
		meta = append(meta, f.sb.ibmStart+b)
	}
	for b := uint64(0); b < f.sb.bbmBlocks; b++ {
		meta = append(meta, f.sb.bbmStart+b)
	}
	var inums []Inum
	for i := Inum(1); uint64(i) < f.sb.ninodes; i++ {
		if f.ialloc.isUsed(uint64(i)) {
			inums = append(inums, i)
		}
	}
	for _, d := range []Inum{rootInum, x.d, x.e, x.wide} {
		bn := x.ptr(t, d, 0)
		meta = append(meta, bn)
		if b := rawBlock(t, f, bn); nodeKind(b) == kindInternal {
			in, _ := decodeInner(b)
			meta = append(meta, in.children...)
		}
	}
	meta = append(meta, x.ptr(t, x.big, nDirect))
	// Damage 1 to 4 places.
	for n := 1 + rng.IntN(4); n > 0; n-- {
		var bn uint64
		var lo, hi int // byte range to damage
		switch k := rng.IntN(10); {
		case k < 4: // an inode in use, most often one of the fixture's files
			inum := inums[rng.IntN(len(inums))]
			if rng.IntN(4) != 0 {
				inum = []Inum{rootInum, x.a, x.b, x.big, x.d, x.c, x.e, x.l, x.wide}[rng.IntN(9)]
			}
			a := f.sb.inodeAddr(inum)
			bn, lo, hi = a.Blkno, int(a.Off/8), int(a.Off/8)+inodeSize
		default:
			bn = meta[rng.IntN(len(meta))]
			if bn == 0 && rng.IntN(4) != 0 {
				bn = f.sb.orphanStart // the superblock only fails Open: less often
			}
			lo, hi = 0, blockSize
			switch {
			case bn == f.sb.ibmStart:
				hi = len(inums)/8 + 2 // the bits in use
			case bn == f.sb.bbmStart:
				hi = int(f.sb.dataBlocks()-f.balloc.numFree())/8 + 2
			case bn < f.sb.dataStart:
				hi = 64 // superblock fields, orphan slots
			case nodeKind(rawBlock(t, f, bn)) == kindLeaf:
				hi = 512 // where the entries are
			case nodeKind(rawBlock(t, f, bn)) == kindInternal:
				hi = 128
			case bn == x.ptr(t, x.big, nDirect):
				hi = 16 // the pointers in use
			}
		}
		b := rawBlock(t, f, bn)
		switch rng.IntN(3) {
		case 0: // flip bits
			for i := 1 + rng.IntN(8); i > 0; i-- {
				b[lo+rng.IntN(hi-lo)] ^= 1 << rng.IntN(8)
			}
		case 1: // garbage bytes
			o := lo + rng.IntN(hi-lo)
			for i := o; i < min(hi, o+1+rng.IntN(32)); i++ {
				b[i] = byte(rng.Uint32())
			}
		default: // a plausible but wrong number (block, inode, count)
			o := lo + 4*rng.IntN((hi-lo)/4)
			v := uint32(rng.IntN(int(f.sb.nblocks) + 64))
			if rng.IntN(2) == 0 {
				v = uint32(rng.IntN(int(f.sb.ninodes) + 64))
			}
			binary32(b[o:], v)
		}
		putBlock(t, f, bn, b)
	}
	g, err := OpenOptions(f.j, Options{})
	if err != nil {
		if !knownErr(err) {
			t.Fatalf("open: error %v wraps no fs error", err)
		}
		return "open refused"
	}
	// Random operations on the names and handles of the fixture.
	names := []string{"a", "b", "big", "d", "c", "e", "l", "p", "wide", "n1", "n2", "000-" + strings.Repeat("w", 200)}
	handles := []Handle{g.Root()}
	for _, inum := range []Inum{x.a, x.b, x.big, x.d, x.c, x.e, x.l, x.p, x.wide} {
		handles = append(handles, Handle{Ino: inum, Gen: rawInode(t, g, inum).gen})
	}
	pick := func() Handle { return handles[rng.IntN(len(handles))] }
	name := func() string { return names[rng.IntN(len(names))] }
	// entry is most often an existing entry of the fixture.
	entries := []struct {
		dir  int // in handles
		name string
	}{{0, "a"}, {0, "b"}, {0, "big"}, {0, "d"}, {4, "c"}, {4, "e"}, {0, "l"}, {0, "p"}, {0, "wide"}, {9, names[11]}}
	entry := func() (Handle, string) {
		if rng.IntN(3) == 0 {
			return pick(), name()
		}
		e := entries[rng.IntN(len(entries))]
		return handles[e.dir], e.name
	}
	corrupted := 0
	for step := 0; step < 60; step++ {
		var err error
		now := ts(100 + step)
		switch rng.IntN(15) {
		case 0:
			var h Handle
			if h, _, _, err = g.Lookup(entry()); err == nil {
				handles = append(handles, h)
			}
		case 1:
			_, err = g.GetAttr(pick())
		case 2:
			_, _, _, err = g.Read(pick(), uint64(rng.IntN(16*blockSize)), uint32(rng.IntN(3*blockSize)))
		case 3:
			_, _, err = g.Write(pick(), uint64(rng.IntN(16*blockSize)), bytes.Repeat([]byte{byte(step)}, 1+rng.IntN(2*blockSize)), rng.IntN(2) == 0, now)
		case 4:
			var h Handle
			if h, _, _, _, err = g.Create(pick(), name(), CreateMode(rng.IntN(3)), SetAttr{}, uint64(step), 0, 0, now); err == nil {
				handles = append(handles, h)
			}
		case 5:
			var h Handle
			if h, _, _, _, err = g.Mkdir(pick(), name(), SetAttr{}, 0, 0, now); err == nil {
				handles = append(handles, h)
			}
		case 6:
			d, n := entry()
			_, _, err = g.Remove(d, n, now)
		case 7:
			d, n := entry()
			_, _, err = g.Rmdir(d, n, now)
		case 8:
			d, n := entry()
			d2, n2 := entry()
			_, _, _, _, err = g.Rename(d, n, d2, n2, now)
		case 9:
			_, _, _, err = g.Link(pick(), pick(), name(), now)
		case 10:
			_, _, _, _, err = g.Symlink(pick(), name(), "target", SetAttr{}, 0, 0, now)
		case 11:
			_, _, err = g.Readlink(pick())
		case 12:
			_, _, _, _, err = g.ReadDir(pick(), 0, 0, 1+rng.IntN(100), rng.IntN(2) == 0)
		case 13:
			_, _, err = g.SetAttr(pick(), SetAttr{Size: u64p(uint64(rng.IntN(20 * blockSize)))}, nil, now)
		case 14:
			_, _, _, _, err = g.Mknod(pick(), name(), TypeFifo, 0, 0, SetAttr{}, 0, 0, now)
		}
		if err != nil && !knownErr(err) {
			t.Fatalf("step %d: error %v wraps no fs error", step, err)
		}
		if errors.Is(err, ErrCorrupt) {
			corrupted++
		}
	}
	if _, err := g.Check(); err != nil && !knownErr(err) {
		t.Fatalf("check: %v", err)
	}
	if corrupted > 0 {
		return "damage met"
	}
	return "no damage met"
}

func binary32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
