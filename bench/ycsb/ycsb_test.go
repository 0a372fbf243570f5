package ycsb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
)

// Key names as YCSB 0.17 makes them: the values were printed by Java
// running Utils.fnvhash64 and Long.toString (signed arithmetic and
// Math.abs as Java has them). user6284781860667377211 is the first key
// of every YCSB load.
func TestKeyNamesMatchYCSB(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "user6284781860667377211"},
		{1, "user8517097267634966620"},
		{2, "user1820151046732198393"},
		{99999, "user7592201923306675823"},
		{100000, "user2382277743992889674"},
		{999999, "user2744965632448235251"},
		{123456789, "user2350796791908741607"},
		{-1, "user8289690350564177859"},
	} {
		if got := KeyName(c.n); got != c.want {
			t.Errorf("KeyName(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}

// The scrambled zipfian draws what YCSB's draws for the same uniform
// number: Java computed the underlying zipfian item out of 10^10 (with
// YCSB's precomputed zeta) and its hash modulo 100,000.
func TestScrambledZipfianMatchesYCSB(t *testing.T) {
	s := NewScrambledZipfian(0, 99999)
	for _, c := range []struct {
		u          float64
		item, want int64
	}{
		{0.01, 0, 77211}, {0.05, 1, 66620}, {0.2, 83, 374},
		{0.5, 134552, 80260}, {0.9, 1170869537, 81670}, {0.999, 9790013524, 90059},
	} {
		if item := s.gen.Next(c.u); item != c.item {
			t.Errorf("zipfian item for u=%v: %d, want %d", c.u, item, c.item)
		}
		if got := s.Next(c.u); got != c.want {
			t.Errorf("scrambled key for u=%v: %d, want %d", c.u, got, c.want)
		}
	}
}

// The zipfian generator's distribution against the theoretical
// P(rank i) = 1/(i^0.99 zeta(n)): the two most popular items exactly (Gray
// et al.'s method is exact there), the rest within the method's known
// approximation (cumulative share within 0.02 everywhere).
func TestZipfianShape(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 2)...) {
		const n, draws = 1000, 100_000
		z := NewZipfianGen(0, n-1, ZipfianConstant)
		r := rand.New(rand.NewPCG(seed, 1))
		counts := make([]int, n)
		for range draws {
			v := z.Next(r.Float64())
			if v < 0 || v >= n {
				t.Fatalf("draw %d out of 0..%d", v, n-1)
			}
			counts[v]++
		}
		zn := Zeta(0, n, ZipfianConstant, 0)
		theory := func(i int) float64 { return 1 / math.Pow(float64(i+1), ZipfianConstant) / zn }
		for i := range 2 {
			if got := float64(counts[i]) / draws; math.Abs(got-theory(i)) > 0.005 {
				t.Errorf("seed %d: item %d drawn %.4f of the time, theory %.4f", seed, i, got, theory(i))
			}
		}
		cum, cumT, worst := 0.0, 0.0, 0.0
		for i := range n {
			cum += float64(counts[i]) / draws
			cumT += theory(i)
			worst = max(worst, math.Abs(cum-cumT))
		}
		if worst > 0.02 {
			t.Errorf("seed %d: cumulative share off the theory by up to %.4f", seed, worst)
		}
		// And it is skewed: the head takes far more than its share.
		if head := float64(counts[0]+counts[1]+counts[2]) / draws; head < 0.2 {
			t.Errorf("seed %d: top 3 of %d items drawn %.3f of the time", seed, n, head)
		}
	}
}

// The scrambled zipfian over the records: its most popular record takes
// about 1/zeta(10^10) of the draws, and the popular records are scattered,
// not neighbours.
func TestScrambledZipfianSkewAndScatter(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 2)...) {
		const records, draws = 100_000, 100_000
		s := NewScrambledZipfian(0, records-1)
		r := rand.New(rand.NewPCG(seed, 2))
		counts := map[int64]int{}
		for range draws {
			v := s.Next(r.Float64())
			if v < 0 || v >= records {
				t.Fatalf("key %d out of range", v)
			}
			counts[v]++
		}
		type kc struct {
			k int64
			c int
		}
		var top []kc
		for k, c := range counts {
			top = append(top, kc{k, c})
		}
		sort.Slice(top, func(i, j int) bool { return top[i].c > top[j].c })
		want := 1 / scrambledZetan
		if got := float64(top[0].c) / draws; math.Abs(got-want) > 0.005 {
			t.Errorf("seed %d: most popular record drawn %.4f of the time, want about %.4f", seed, got, want)
		}
		keys := []int64{}
		for _, e := range top[:10] {
			keys = append(keys, e.k)
		}
		slices.Sort(keys)
		if keys[len(keys)-1]-keys[0] < records/10 {
			t.Errorf("seed %d: the 10 most popular records are clustered: %v", seed, keys)
		}
	}
}

// Each workload's operations come in its proportions (within 0.012 of
// 40,000 draws: about five standard deviations), and only the kinds it
// has.
func TestOpMix(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 1)...) {
		for _, w := range Core {
			k, err := NewKeyspace(w, 10_000)
			if err != nil {
				t.Fatal(err)
			}
			g := k.Client(seed, 0, 16)
			const draws = 40_000
			var counts [numKinds]int
			for range draws {
				op, err := g.Next()
				if err != nil {
					t.Fatal(err)
				}
				counts[op.Kind]++
				g.Done(op)
			}
			for kind, c := range counts {
				got, want := float64(c)/draws, w.Proportions[kind]
				if math.Abs(got-want) > 0.012 || (want == 0 && c > 0) {
					t.Errorf("seed %d: workload %s: %v %.4f of the operations, want %.2f", seed, w.Name, OpKind(kind), got, want)
				}
			}
		}
	}
}

// Workload D's latest distribution favours the newest acknowledged
// inserts: the 10 newest records get about the zipfian head's share of
// the reads (zeta(10)/zeta(n), about a quarter), where workload B (the
// scrambled zipfian) gives them about 10 in n; and a read never addresses
// a record whose insert is not acknowledged.
func TestLatestFavoursRecentInserts(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 2)...) {
		const records = 100_000
		share := func(name string) float64 {
			w, _ := Lookup(name)
			k, err := NewKeyspace(w, records)
			if err != nil {
				t.Fatal(err)
			}
			g := k.Client(seed, 0, 16)
			reads, recent := 0, 0
			var pending []Op
			for i := range 100_000 {
				op, err := g.Next()
				if err != nil {
					t.Fatal(err)
				}
				last := k.inserts.Last()
				switch op.Kind {
				case Insert:
					// Acknowledge inserts late and out of order, as
					// concurrent clients would.
					pending = append(pending, op)
					if len(pending) == 3 || i%7 == 0 {
						for j := len(pending) - 1; j >= 0; j-- {
							g.Done(pending[j])
						}
						pending = pending[:0]
					}
				case Read:
					if op.Keynum > last {
						t.Fatalf("seed %d: read of record %d, last acknowledged %d", seed, op.Keynum, last)
					}
					reads++
					if op.Keynum > last-10 {
						recent++
					}
				}
			}
			return float64(recent) / float64(reads)
		}
		d, b := share("D"), share("B")
		want := Zeta(0, 10, ZipfianConstant, 0) / Zeta(0, records, ZipfianConstant, 0)
		if math.Abs(d-want) > 0.05 {
			t.Errorf("seed %d: workload D: %.3f of the reads go to the 10 newest records, want about %.3f", seed, d, want)
		}
		if b > 0.01 {
			t.Errorf("seed %d: workload B: %.4f of the reads go to the 10 newest records, want about %.4f", seed, b, 10.0/records)
		}
	}
}

// Workload E's scans ask for 1..100 records, uniformly.
func TestScanLengths(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 2)...) {
		w, _ := Lookup("e")
		k, _ := NewKeyspace(w, 1000)
		g := k.Client(seed, 0, 8)
		var counts [101]int
		scans, sum := 0, 0
		for range 100_000 {
			op, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			g.Done(op)
			if op.Kind != Scan {
				if op.ScanLen != 0 {
					t.Fatalf("%v with a scan length %d", op.Kind, op.ScanLen)
				}
				continue
			}
			if op.ScanLen < 1 || op.ScanLen > 100 {
				t.Fatalf("scan length %d out of 1..100", op.ScanLen)
			}
			counts[op.ScanLen]++
			scans++
			sum += op.ScanLen
		}
		for l := 1; l <= 100; l++ {
			// 950 expected per length; a uniform draw is rarely below 800.
			if counts[l] < 800 || counts[l] > 1100 {
				t.Errorf("seed %d: scan length %d drawn %d times of %d scans", seed, l, counts[l], scans)
			}
		}
		if mean := float64(sum) / float64(scans); math.Abs(mean-50.5) > 1 {
			t.Errorf("seed %d: mean scan length %.2f, want 50.5", seed, mean)
		}
	}
}

// One client's stream is a function of its seed: kinds, keys, scan
// lengths and values; another seed or client gives another stream.
func TestDeterministicFromSeed(t *testing.T) {
	stream := func(w Workload, seed uint64, client int) []string {
		k, err := NewKeyspace(w, 5000)
		if err != nil {
			t.Fatal(err)
		}
		g := k.Client(seed, client, 32)
		var out []string
		for range 2000 {
			op, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%v %s %d %x", op.Kind, op.Key, op.ScanLen, op.Value))
			g.Done(op)
		}
		return out
	}
	seed := testseed.One(t)
	for _, w := range Core {
		a, b := stream(w, seed, 0), stream(w, seed, 0)
		if !slices.Equal(a, b) {
			t.Errorf("workload %s: two streams of seed %d differ", w.Name, seed)
		}
		if slices.Equal(a, stream(w, seed+1, 0)) || slices.Equal(a, stream(w, seed, 1)) {
			t.Errorf("workload %s: another seed or client gave the same stream", w.Name)
		}
	}
}

func TestAckCounter(t *testing.T) {
	c := NewAckCounter(10)
	if c.Last() != 9 {
		t.Fatalf("Last = %d, want 9", c.Last())
	}
	a, b, d := c.Next(), c.Next(), c.Next()
	if a != 10 || b != 11 || d != 12 {
		t.Fatalf("Next gave %d %d %d", a, b, d)
	}
	c.Acknowledge(12)
	c.Acknowledge(11)
	if c.Last() != 9 {
		t.Fatalf("Last = %d before 10 is acknowledged", c.Last())
	}
	c.Acknowledge(10)
	if c.Last() != 12 {
		t.Fatalf("Last = %d, want 12", c.Last())
	}
}

func TestLookupAndBadInput(t *testing.T) {
	if _, err := Lookup("G"); err == nil {
		t.Error("workload G accepted")
	}
	w, err := Lookup("a")
	if err != nil || w.Name != "A" {
		t.Fatalf("Lookup(a) = %v, %v", w, err)
	}
	if _, err := NewKeyspace(w, 1); err == nil {
		t.Error("a keyspace of 1 record accepted")
	}
	if _, err := NewKeyspace(Workload{Name: "x", Proportions: mix(1, 0, 0, 0, 0), Distribution: "uniform"}, 10); err == nil {
		t.Error("unknown distribution accepted")
	}
	if _, err := NewKeyspace(Workload{Name: "x", Proportions: mix(0, 0, 0, 1, 0), Distribution: Zipfian}, 10); err == nil {
		t.Error("scans without a maximum length accepted")
	}
	if _, err := Run(context.Background(), newModel(), RunConfig{Workload: w, Records: 10, Clients: 0, ValueSize: 8, Measure: time.Millisecond}); err == nil {
		t.Error("a run of 0 clients accepted")
	}
}

// model is an in-memory DB that checks what the driver asks: updates and
// read-modify-writes address existing records, inserts new ones, and
// values have the right size.
type model struct {
	mu   sync.Mutex
	data map[string][]byte // guarded by mu
	// corrupt, if set, makes reads return one byte too many.
	corrupt bool
}

func newModel() *model { return &model{data: map[string][]byte{}} }

func (m *model) Read(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[key]
	if !ok {
		return nil, fmt.Errorf("%q: %w", key, ErrNotFound)
	}
	if m.corrupt {
		v = append(slices.Clone(v), 0)
	}
	return v, nil
}

func (m *model) Update(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.data[key]; !ok {
		return fmt.Errorf("update of %q, which was never inserted", key)
	}
	m.data[key] = slices.Clone(value)
	return nil
}

func (m *model) Insert(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.data[key]; ok {
		return fmt.Errorf("insert of %q, which exists", key)
	}
	m.data[key] = slices.Clone(value)
	return nil
}

func (m *model) Scan(_ context.Context, start string, n int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.data {
		if k >= start && k < KeyPrefixEnd {
			keys = append(keys, k)
		}
	}
	return min(n, len(keys)), nil
}

func (m *model) ReadModifyWrite(ctx context.Context, key string, value []byte) ([]byte, error) {
	v, err := m.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	return v, m.Update(ctx, key, value)
}

// Load then every workload with several clients against the model: every
// request the driver makes is one the model accepts, the inserts it
// counts exist, and the next run continues after them.
func TestRunAgainstModel(t *testing.T) {
	ctx := context.Background()
	m := newModel()
	seed := testseed.One(t)
	lr, err := Load(ctx, m, LoadConfig{From: 0, To: 2000, Clients: 4, ValueSize: 64, Seed: seed})
	if err != nil || lr.Records != 2000 || len(m.data) != 2000 {
		t.Fatalf("load: %+v, %v; model has %d records", lr, err, len(m.data))
	}
	for i := range int64(2000) {
		if v, ok := m.data[KeyName(i)]; !ok || len(v) != 64 {
			t.Fatalf("record %d not loaded with 64 bytes", i)
		}
	}
	records := lr.Records
	for _, w := range Core {
		res, err := Run(ctx, m, RunConfig{Workload: w, Records: records, Clients: 4, ValueSize: 64, Measure: 20 * time.Millisecond, Seed: seed})
		if err != nil {
			t.Fatalf("workload %s: %v", w.Name, err)
		}
		if res.Ops == 0 || res.OpsTotal < res.Ops || res.After < records {
			t.Fatalf("workload %s: %+v", w.Name, res)
		}
		if w.Proportions[Insert] == 0 && res.After != records {
			t.Errorf("workload %s inserts nothing but the count went from %d to %d", w.Name, records, res.After)
		}
		for n := records; n < res.After; n++ {
			if _, ok := m.data[KeyName(n)]; !ok {
				t.Fatalf("workload %s: record %d counted but not in the model", w.Name, n)
			}
		}
		for kind := range res.PerOp {
			if !strings.Contains(w.Describe(), kind) {
				t.Errorf("workload %s (%s) ran %s", w.Name, w.Describe(), kind)
			}
		}
		records = res.After
	}
}

// A DB that returns a wrong value fails the run, with the operation named.
func TestRunFailsOnBadRead(t *testing.T) {
	ctx := context.Background()
	m := newModel()
	if _, err := Load(ctx, m, LoadConfig{From: 0, To: 100, Clients: 2, ValueSize: 8, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	m.corrupt = true
	w, _ := Lookup("C")
	_, err := Run(ctx, m, RunConfig{Workload: w, Records: 100, Clients: 2, ValueSize: 8, Measure: time.Second, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "read of record") || !strings.Contains(err.Error(), "9 bytes") {
		t.Fatalf("run against a corrupting DB: %v", err)
	}
	// And a read that finds nothing.
	m.corrupt = false
	delete(m.data, KeyName(0))
	op := Op{Kind: Read, Keynum: 0, Key: KeyName(0)}
	if err := Do(ctx, m, op, 8, time.Second); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a missing record: %v", err)
	}
}

// The values a generator writes change from one request to the next.
func TestFreshValues(t *testing.T) {
	w, _ := Lookup("A")
	k, _ := NewKeyspace(w, 100)
	g := k.Client(1, 0, 1024)
	var prev []byte
	for range 50 {
		op, _ := g.Next()
		if op.Kind != Update {
			continue
		}
		if len(op.Value) != 1024 {
			t.Fatalf("value of %d bytes", len(op.Value))
		}
		if prev != nil && bytes.Equal(prev, op.Value) {
			t.Fatal("two updates wrote the same value")
		}
		prev = slices.Clone(op.Value)
	}
}

func TestSourceHash(t *testing.T) {
	h := SourceHash()
	if len(h) != 16 || h != SourceHash() {
		t.Fatalf("SourceHash = %q", h)
	}
}
