package distsys_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/journal"
	"strata/journal/disk"
)

// countAborts wraps a resource and counts the aborts the section loop
// makes on it, so a test can wait for an aborted attempt.
type countAborts struct {
	distsys.Resource
	n atomic.Int64
}

func (c *countAborts) Abort() { c.n.Add(1); c.Resource.Abort() }

// writer is a hand-written archetype over `ref x`: section "put" writes
// vals[k] and advances the local k, one value per committed section; then
// section "bad" writes 999 and aborts (await FALSE) every time, until the
// run is cancelled.
func writer(vals []int64) *distsys.Archetype {
	return &distsys.Archetype{
		Name: "Writer", Pos: "W.tla:1:1", Start: "put",
		Params: []distsys.Param{{Name: "x", Pos: "W.tla:1:20", Ref: true}},
		Locals: []distsys.LocalVar{{Name: "k", Pos: "W.tla:2:3", Init: func(*distsys.Context, *tla.Eval) tla.Value { return tla.Int(0) }}},
		Sections: map[string]distsys.Section{
			"put": {Label: "put", Pos: "W.tla:3:3", Run: func(c *distsys.Context, e *tla.Eval) (string, error) {
				k, err := c.Read(e, "k").AsInt64()
				if err != nil {
					return "", err
				}
				if k >= int64(len(vals)) {
					return "bad", nil
				}
				c.Write(e, "x", nil, tla.Record(tla.F("k", tla.Int(k)), tla.F("v", tla.Int(vals[k]))))
				c.Write(e, "k", nil, tla.Int(k+1))
				return "put", e.Err()
			}},
			"bad": {Label: "bad", Pos: "W.tla:4:3", Run: func(c *distsys.Context, e *tla.Eval) (string, error) {
				c.Write(e, "x", nil, tla.Int(999))
				if !c.Await(e, tla.False) {
					return "", e.Err()
				}
				return distsys.Done, nil
			}},
		},
	}
}

// runWriter runs writer(vals) on x until its "bad" section has aborted
// three times, then cancels it.
func runWriter(t *testing.T, x *distsys.Persistent, vals []int64) {
	t.Helper()
	wrapped := &countAborts{Resource: x}
	c, err := distsys.NewContext(writer(vals), tla.Int(1), distsys.BindRef("x", wrapped), distsys.WithBackoff(time.Microsecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for wrapped.n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("section bad never aborted three times")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("writer: %v", err)
	}
}

func want(k int, v int64) tla.Value {
	return tla.Record(tla.F("k", tla.Int(int64(k))), tla.F("v", tla.Int(v)))
}

// TestPersistentSurvivesCrash: values written through committed sections
// survive a crash of the disk under a journal that is never closed (a
// CrashDisk keeping a random subset of the writes since the last barrier,
// and one keeping all of them); the write of the aborted section is not
// there, whichever writes survive. Recovery, then more sections, then
// another crash: the newest committed value again.
func TestPersistentSurvivesCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, crash := range []string{"random", "all", "none"} {
		t.Run(crash, func(t *testing.T) {
			d := disk.NewCrashDisk(600)
			if err := journal.Format(d, 64); err != nil {
				t.Fatal(err)
			}
			j, err := journal.Open(d, journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			x, err := distsys.OpenPersistent(j, 10, 4, tla.Int(0))
			if err != nil {
				t.Fatal(err)
			}
			if !tla.Equal(x.Value(), tla.Int(0)) {
				t.Fatalf("fresh region holds %v, want the initial 0", x.Value())
			}
			vals := []int64{5, 7, 11, 13}
			runWriter(t, x, vals)
			if got := x.Value(); !tla.Equal(got, want(3, 13)) {
				t.Fatalf("before the crash x = %v", got)
			}
			for gen := range 2 {
				var nd *disk.CrashDisk
				switch crash {
				case "random":
					nd = d.CrashRandom(rng)
				case "all":
					nd = d.CrashAll()
				default:
					nd = d.CrashNone()
				}
				j.Close() // the crashed disk fails it: this only stops its goroutines
				if j, err = journal.Open(nd, journal.Options{}); err != nil {
					t.Fatal(err)
				}
				d = nd
				if x, err = distsys.OpenPersistent(j, 10, 4, tla.Int(0)); err != nil {
					t.Fatal(err)
				}
				last := len(vals) - 1
				if got := x.Value(); !tla.Equal(got, want(last, vals[last])) {
					t.Fatalf("generation %d: recovered x = %v, want %v (the last committed value)", gen, got, want(last, vals[last]))
				}
				// A new run (its k restarts at 0) rewrites vals in order,
				// ending with a new value, and aborts again.
				vals = append(vals, 100+int64(gen))
				runWriter(t, x, vals)
			}
			j.Close()
		})
	}
}

// TestPersistentFileRestart: the value survives closing and reopening the
// journal file (a process restart), and a value larger than one block
// spans the region.
func TestPersistentFileRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := journal.OpenFile(path, 8192, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := distsys.OpenPersistent(j, 0, 8, tla.Tuple())
	if err != nil {
		t.Fatal(err)
	}
	big := make([]tla.Value, 1000)
	for i := range big {
		big[i] = tla.Int(int64(i) * 1_000_000_007)
	}
	ctx := context.Background()
	for _, v := range []tla.Value{tla.String("one"), tla.Tuple(big...)} {
		if err := x.Write(ctx, v); err != nil {
			t.Fatal(err)
		}
		if err := x.PreCommit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if j, _, err = journal.OpenFile(path, 8192, journal.Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if x, err = distsys.OpenPersistent(j, 0, 8, tla.Tuple()); err != nil {
		t.Fatal(err)
	}
	if !tla.Equal(x.Value(), tla.Tuple(big...)) {
		t.Fatalf("after restart x has %d bytes of encoding, want the 1000-element tuple", len(x.Value().String()))
	}
}

// TestPersistentRejects: a region outside the journal, a value too large
// for its region (refused at pre-commit, before anything commits), and a
// region holding something else are errors.
func TestPersistentRejects(t *testing.T) {
	d := disk.NewCrashDisk(200)
	if err := journal.Format(d, 32); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := distsys.OpenPersistent(j, j.Size()-1, 2, tla.Int(0)); !errors.Is(err, distsys.ErrPersistent) {
		t.Fatalf("region past the end: %v", err)
	}
	if _, err := distsys.OpenPersistent(j, 0, 1, tla.Value{}); !errors.Is(err, distsys.ErrPersistent) {
		t.Fatalf("invalid initial value: %v", err)
	}
	x, err := distsys.OpenPersistent(j, 0, 1, tla.Int(0))
	if err != nil {
		t.Fatal(err)
	}
	big := make([]tla.Value, 2000)
	for i := range big {
		big[i] = tla.Int(int64(i) << 40)
	}
	ctx := context.Background()
	x.Write(ctx, tla.Tuple(big...))
	if err := x.PreCommit(ctx); !errors.Is(err, distsys.ErrPersistent) {
		t.Fatalf("value larger than the region: %v", err)
	}
	x.Abort()
	if !tla.Equal(x.Value(), tla.Int(0)) {
		t.Fatalf("after the refused write x = %v", x.Value())
	}
	// Something else in block 5.
	op := j.Begin()
	junk := make([]byte, disk.BlockSize)
	copy(junk, "not a value")
	if err := op.OverWrite(journal.Addr{Blkno: 5}, journal.BlockBits, junk); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Commit(true); err != nil {
		t.Fatal(err)
	}
	if _, err := distsys.OpenPersistent(j, 5, 1, tla.Int(0)); !errors.Is(err, distsys.ErrPersistent) {
		t.Fatalf("foreign block: %v", err)
	}
}
