package ycsb

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Keyspace is a workload's shared state in one process: the records
// present, the insert counter and the key choosers. Its clients'
// Generators use it concurrently.
type Keyspace struct {
	w       Workload
	records int64 // present when the run started
	inserts *AckCounter
	// scrambled chooses keys under the zipfian distribution (stateless).
	scrambled *ScrambledZipfian
	// latest is the skewed-latest chooser each client clones (it grows
	// its zipfian's zeta as inserts are acknowledged).
	latest *SkewedLatest
}

// MinRecords is the fewest records a run needs (the latest distribution's
// zipfian is over records-1 items).
const MinRecords = 2

// NewKeyspace prepares workload w over records 0..records-1, already
// loaded; inserts take records, records+1, ...
func NewKeyspace(w Workload, records int64) (*Keyspace, error) {
	if records < MinRecords {
		return nil, fmt.Errorf("ycsb: need at least %d records, not %d", MinRecords, records)
	}
	sum := 0.0
	for _, p := range w.Proportions {
		if p < 0 {
			return nil, fmt.Errorf("ycsb: workload %s: negative proportion", w.Name)
		}
		sum += p
	}
	if sum <= 0 {
		return nil, fmt.Errorf("ycsb: workload %s: no operations", w.Name)
	}
	if w.Proportions[Scan] > 0 && w.MaxScanLength < 1 {
		return nil, fmt.Errorf("ycsb: workload %s scans but has no maximum scan length", w.Name)
	}
	k := &Keyspace{w: w, records: records, inserts: NewAckCounter(records)}
	switch w.Distribution {
	case Zipfian:
		k.scrambled = NewScrambledZipfian(0, records-1)
	case Latest:
		k.latest = NewSkewedLatest(records - 1)
	default:
		return nil, fmt.Errorf("ycsb: workload %s: unknown distribution %q (want %s or %s)", w.Name, w.Distribution, Zipfian, Latest)
	}
	return k, nil
}

// Records is how many records exist for sure: the loaded ones and every
// insert acknowledged without a gap before it (the next run's count).
func (k *Keyspace) Records() int64 { return k.inserts.Last() + 1 }

// Op is one request: its kind, the record it addresses and, for a scan,
// how many records it asks for.
type Op struct {
	Kind    OpKind
	Keynum  int64
	Key     string
	ScanLen int
	// Value is the field an update, insert or read-modify-write writes:
	// the generator's buffer, valid until the next call of Next.
	Value []byte
}

// Generator is one client's stream of requests. Not safe for concurrent
// use: each client has its own.
type Generator struct {
	k      *Keyspace
	ops    *rand.Rand // draws the operation stream
	bytes  *rand.Rand // fills values (apart, so the stream is the same whatever the value size)
	latest *SkewedLatest
	value  []byte
}

// Client returns the generator of client id, its randomness seeded by
// seed and id, writing values of valueSize bytes.
func (k *Keyspace) Client(seed uint64, id int, valueSize int) *Generator {
	g := &Generator{
		k:     k,
		ops:   rand.New(rand.NewPCG(seed, uint64(id)<<1)),
		bytes: rand.New(rand.NewPCG(seed, uint64(id)<<1|1)),
		value: make([]byte, valueSize),
	}
	if k.latest != nil {
		g.latest = &SkewedLatest{zipf: k.latest.zipf.clone()}
	}
	return g
}

// errNoKey is returned when no acknowledged record can be chosen (it
// cannot happen once NewKeyspace accepted the record count).
var errNoKey = errors.New("ycsb: no acknowledged record to choose")

// Next returns the client's next request. An insert must be reported
// with Done once it succeeded, so that later requests may address it.
func (g *Generator) Next() (Op, error) {
	kind := g.kind()
	op := Op{Kind: kind}
	if kind == Insert {
		op.Keynum = g.k.inserts.Next()
	} else {
		n, err := g.keynum()
		if err != nil {
			return op, err
		}
		op.Keynum = n
	}
	op.Key = KeyName(op.Keynum)
	switch kind {
	case Scan:
		op.ScanLen = 1 + g.ops.IntN(g.k.w.MaxScanLength)
	case Update, Insert, ReadModifyWrite:
		g.fill()
		op.Value = g.value
	}
	return op, nil
}

// Done acknowledges a successful insert.
func (g *Generator) Done(op Op) {
	if op.Kind == Insert {
		g.k.inserts.Acknowledge(op.Keynum)
	}
}

// kind draws an operation with the workload's proportions, in YCSB's
// DiscreteGenerator's way: a uniform point in the proportions' sum,
// looked up in their order.
func (g *Generator) kind() OpKind {
	sum := 0.0
	for _, p := range g.k.w.Proportions {
		sum += p
	}
	u := g.ops.Float64() * sum
	last := Read
	for k, p := range g.k.w.Proportions {
		if p <= 0 {
			continue
		}
		if u < p {
			return OpKind(k)
		}
		u -= p
		last = OpKind(k)
	}
	return last // rounding left u at the sum
}

// keynum chooses the record a read, update, scan or read-modify-write
// addresses, among the acknowledged ones (YCSB's nextKeynum: redraw a key
// not acknowledged yet).
func (g *Generator) keynum() (int64, error) {
	for range 1000 {
		last := g.k.inserts.Last()
		var n int64
		if g.latest != nil {
			n = g.latest.Next(g.ops.Float64(), last)
		} else {
			n = g.k.scrambled.Next(g.ops.Float64())
		}
		if n >= 0 && n <= last {
			return n, nil
		}
	}
	return 0, errNoKey
}

// fill puts fresh random bytes in the value buffer.
func (g *Generator) fill() {
	b := g.value
	for len(b) >= 8 {
		v := g.bytes.Uint64()
		b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		b = b[8:]
	}
	if len(b) > 0 {
		v := g.bytes.Uint64()
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
	}
}
