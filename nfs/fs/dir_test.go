package fs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// listAll reads a whole directory in pages of page entries (without "."
// and "..").
func listAll(t testing.TB, f *FS, dir Handle, page int) []DirEntry {
	t.Helper()
	var out []DirEntry
	var cookie, verf uint64
	for {
		ents, eof, nv, _, err := f.ReadDir(dir, cookie, verf, page, false)
		if err != nil {
			t.Fatalf("readdir at cookie %d: %v", cookie, err)
		}
		for _, e := range ents {
			if e.Name != "." && e.Name != ".." {
				out = append(out, e)
			}
			cookie = e.Cookie
		}
		verf = nv
		if eof {
			return out
		}
	}
}

// TestDirTree inserts and removes thousands of names of all lengths in one
// directory, with the name hash narrowed so that many names collide, and
// compares lookups and listings with a map; the tree must split, shrink
// and end as a single block.
func TestDirTree(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	f := newMemFS(t, 20000, 1024, 4096, Options{UnstableMetadata: true})
	f.hashMask = 0x3f << 20 // 64 distinct hashes
	root := f.Root()
	model := map[string]Handle{}
	scale := 1
	if raceEnabled {
		scale = 3 // the race detector slows the journal down tenfold
	}
	names := make([]string, 3000/scale)
	for i := range names {
		names[i] = fmt.Sprintf("%d-%s", i, strings.Repeat("z", rng.IntN(250)))
	}
	verify := func() {
		ents := listAll(t, f, root, 1+rng.IntN(50))
		if len(ents) != len(model) {
			t.Fatalf("seed %d: listing has %d entries, want %d", seed, len(ents), len(model))
		}
		for i, e := range ents {
			if i > 0 && e.Cookie <= ents[i-1].Cookie {
				t.Fatalf("seed %d: cookies not increasing", seed)
			}
			if model[e.Name] != e.Handle {
				t.Fatalf("seed %d: entry %q handle %v want %v", seed, e.Name, e.Handle, model[e.Name])
			}
		}
		mustCheck(t, f)
	}
	for round := 0; round < 3; round++ {
		// Grow, then shrink to a random fraction (the last round to zero).
		target := (800 + rng.IntN(1500)) / scale
		for len(model) < target {
			n := names[rng.IntN(len(names))]
			h, _, _, _, err := f.Create(root, n, Guarded, SetAttr{}, 0, 0, 0, ts(1))
			if _, ok := model[n]; ok {
				if !errors.Is(err, ErrExist) {
					t.Fatalf("create existing %q: %v", n, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("create %q: %v", n, err)
			}
			model[n] = h
		}
		verify()
		for n, h := range model {
			got, _, _, err := f.Lookup(root, n)
			if err != nil || got != h {
				t.Fatalf("lookup %q: %v %v", n, got, err)
			}
		}
		keep := rng.IntN(len(model))
		if round == 2 {
			keep = 0
		}
		for n := range model {
			if len(model) <= keep {
				break
			}
			if _, _, err := f.Remove(root, n, ts(2)); err != nil {
				t.Fatalf("remove %q: %v", n, err)
			}
			delete(model, n)
		}
		verify()
	}
	a, err := f.GetAttr(root)
	if err != nil || a.Used != blockSize {
		t.Fatalf("empty directory uses %d bytes (%v)", a.Used, err)
	}
}

// TestDirShrinkMerges grows a directory to a deep tree (internal nodes
// lowered to 8 keys), removes 95% of its entries in random order and
// checks that merging brought its size down in proportion: without
// merging, most leaves would keep an entry or two and stay.
func TestDirShrinkMerges(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	f := newMemFS(t, 20000, 1024, 4096, Options{UnstableMetadata: true})
	f.innerMax = 8
	root := f.Root()
	n := 2000
	if raceEnabled {
		n = 700
	}
	model := map[string]Handle{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%d-%s", i, strings.Repeat("m", rng.IntN(200)))
		h, _, _, _, err := f.Create(root, name, Guarded, SetAttr{}, 0, 0, 0, ts(1))
		if err != nil {
			t.Fatalf("seed %d: create: %v", seed, err)
		}
		model[name] = h
	}
	full, err := f.GetAttr(root)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, n)
	for name := range model {
		names = append(names, name)
	}
	sort.Strings(names)
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, name := range names[:n*95/100] {
		if _, _, err := f.Remove(root, name, ts(2)); err != nil {
			t.Fatalf("seed %d: remove %q: %v", seed, name, err)
		}
		delete(model, name)
	}
	ents := listAll(t, f, root, 17)
	if len(ents) != len(model) {
		t.Fatalf("seed %d: listing has %d entries, want %d", seed, len(ents), len(model))
	}
	for _, e := range ents {
		if model[e.Name] != e.Handle {
			t.Fatalf("seed %d: entry %q handle %v want %v", seed, e.Name, e.Handle, model[e.Name])
		}
	}
	mustCheck(t, f)
	bytes := 0
	for name := range model {
		bytes += entHdr + len(name)
	}
	a, err := f.GetAttr(root)
	if err != nil {
		t.Fatal(err)
	}
	blocks, limit := a.Used/blockSize, uint64(5*(bytes/blockSize+1)+3)
	t.Logf("seed %d: %d blocks full; %d entries (%d bytes) in %d blocks (limit %d)", seed, full.Used/blockSize, len(model), bytes, blocks, limit)
	if blocks > limit {
		t.Fatalf("seed %d: %d entries (%d bytes) take %d blocks, more than %d", seed, len(model), bytes, blocks, limit)
	}
}

// TestDirHashCollisions gives every name the same hash: 256 names fit (the
// discriminator), the 257th is ErrNoSpace.
func TestDirHashCollisions(t *testing.T) {
	f := newMemFS(t, 4096, 512, 1024, Options{UnstableMetadata: true})
	f.hashMask = 1
	root := f.Root()
	for i := 0; i < 256; i++ {
		if _, _, _, _, err := f.Mkdir(root, fmt.Sprint("d", i), SetAttr{}, 0, 0, ts(1)); err != nil {
			t.Fatalf("mkdir %d: %v", i, err)
		}
	}
	if _, _, _, _, err := f.Mkdir(root, "one-too-many", SetAttr{}, 0, 0, ts(1)); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("257th colliding name: %v", err)
	}
	for i := 0; i < 256; i += 2 {
		if _, _, err := f.Rmdir(root, fmt.Sprint("d", i), ts(2)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, _, _, err := f.Mkdir(root, "fits-again", SetAttr{}, 0, 0, ts(1)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 256; i += 2 {
		if _, _, _, err := f.Lookup(root, fmt.Sprint("d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(listAll(t, f, root, 7)); got != 129 {
		t.Fatalf("listing has %d entries", got)
	}
	mustCheck(t, f)
}

// bigDirEntries is the size of the big-directory test (smaller under the
// race detector, which slows the journal down tenfold).
func bigDirEntries() int {
	if raceEnabled {
		return 6_000
	}
	return 100_000
}

// TestBigDir creates a directory of 100,000 entries, looks every name up
// and lists it in pages; then lists it again while entries are removed and
// inserted between pages: every entry present throughout must be returned
// exactly once.
func TestBigDir(t *testing.T) {
	n := envInt("STRATA_FS_BIGDIR", bigDirEntries())
	f := newMemFS(t, uint64(n/8+40000), 4096, uint64(n+n/4+100), Options{UnstableMetadata: true})
	dir, _, _, _, err := f.Mkdir(f.Root(), "big", SetAttr{}, 0, 0, ts(0))
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("file-%07d", i) }
	start := time.Now()
	phase := func(what string) {
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	// Create with a few goroutines (journal group commit).
	const workers = 4
	handles := make([]Handle, n)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				h, _, _, _, err := f.Create(dir, name(i), Guarded, SetAttr{}, 0, 0, 0, ts(1))
				if err != nil {
					errs <- fmt.Errorf("create %d: %w", i, err)
					return
				}
				handles[i] = h
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	phase("create")
	for i := 0; i < n; i++ {
		h, _, _, err := f.Lookup(dir, name(i))
		if err != nil || h != handles[i] {
			t.Fatalf("lookup %d: %v %v", i, h, err)
		}
	}
	if _, _, _, err := f.Lookup(dir, name(n)); !errors.Is(err, ErrNoEnt) {
		t.Fatalf("lookup of a missing name: %v", err)
	}
	phase("lookup")
	ents := listAll(t, f, dir, 1000)
	if len(ents) != n {
		t.Fatalf("listing: %d entries, want %d", len(ents), n)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if seen[e.Name] {
			t.Fatalf("listing returned %q twice", e.Name)
		}
		seen[e.Name] = true
	}
	phase("list")
	a, _ := f.GetAttr(dir)
	t.Logf("%d entries in %d blocks", n, a.Used/blockSize)

	// Listing under concurrent change: between pages remove some original
	// entries and add new ones.
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	removed := map[string]bool{}
	listed := map[string]int{}
	var cookie, verf uint64
	next := n
	for page := 0; ; page++ {
		es, eof, nv, _, err := f.ReadDir(dir, cookie, verf, 997, page%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			listed[e.Name]++
			cookie = e.Cookie
		}
		verf = nv
		if eof {
			break
		}
		for k := 0; k < 20; k++ {
			i := rng.IntN(n)
			if !removed[name(i)] {
				if _, _, err := f.Remove(dir, name(i), ts(2)); err != nil {
					t.Fatal(err)
				}
				removed[name(i)] = true
			}
			if _, _, _, _, err := f.Create(dir, name(next), Guarded, SetAttr{}, 0, 0, 0, ts(2)); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	for nm, c := range listed {
		if c != 1 {
			t.Fatalf("%q listed %d times", nm, c)
		}
	}
	for i := 0; i < n; i++ {
		if !removed[name(i)] && listed[name(i)] != 1 {
			t.Fatalf("%q (present throughout) not listed", name(i))
		}
	}
	if _, _, _, _, err := f.ReadDir(dir, cookie, verf^2, 10, false); !errors.Is(err, ErrBadCookie) {
		t.Fatalf("readdir with a wrong verifier: %v", err)
	}
	phase("list under change")
	rep := mustCheck(t, f)
	phase("check")
	t.Log(rep)
	// Sorted names are what a listing without change returns, in some
	// order; check the final listing once more.
	final := listAll(t, f, dir, 4096)
	got := make([]string, len(final))
	for i, e := range final {
		got[i] = e.Name
	}
	sort.Strings(got)
	if len(got) != n-len(removed)+(next-n) {
		t.Fatalf("final listing has %d entries, want %d", len(got), n-len(removed)+(next-n))
	}
}
