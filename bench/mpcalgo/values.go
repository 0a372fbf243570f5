package mpcalgo

import (
	"runtime"
	"strconv"
	"testing"

	"strata/distsys/tla"
)

// ValueOp is one TLA+ value microbenchmark: an operation of distsys/tla
// on a 1,000-element value, timed with testing.Benchmark.
type ValueOp struct {
	Name     string  `json:"op"`
	N        int     `json:"n"`
	NsPerOp  float64 `json:"ns_per_op"`
	BPerOp   int64   `json:"bytes_per_op"`
	AllocsOp int64   `json:"allocs_per_op"`
}

// valueBenches are the operations the issue names, on values built the way
// distsys/tla's own benchmarks (bench_test.go) build them.
func valueBenches(n int) []struct {
	name string
	f    func(b *testing.B)
} {
	fs := make([]tla.FieldValue, n)
	for i := range fs {
		fs[i] = tla.F("f"+strconv.Itoa(i), tla.Int(int64(i)))
	}
	rec := tla.Record(fs...)
	field := []tla.Value{tla.String("f" + strconv.Itoa(n/2))}

	evens := make([]tla.Value, n)
	others := make([]tla.Value, n)
	for i := range evens {
		evens[i] = tla.Int(int64(2 * i))
		others[i] = tla.Int(int64(2*i + 1))
	}
	set, odd := tla.Set(evens...), tla.Set(others...)

	dom := make([]tla.Value, n)
	for i := range dom {
		dom[i] = tla.ModelValue("p" + strconv.Itoa(i))
	}
	fn, _ := tla.Function(tla.Set(dom...), func(v tla.Value) (tla.Value, error) { return tla.Int(0), nil })
	key := []tla.Value{dom[n/2]}

	return []struct {
		name string
		f    func(b *testing.B)
	}{
		{"record update [r EXCEPT !.f = v]", func(b *testing.B) {
			var v tla.Value
			for i := range b.N {
				v, _ = tla.Except(rec, field, tla.Int(int64(i)))
			}
			runtime.KeepAlive(v)
		}},
		{"set union S \\union {x}, x new", func(b *testing.B) {
			var v tla.Value
			for i := range b.N {
				v, _ = tla.Union(set, tla.Set(tla.Int(int64(2*(i%n)+1))))
			}
			runtime.KeepAlive(v)
		}},
		{"set union S \\union T, disjoint", func(b *testing.B) {
			var v tla.Value
			for range b.N {
				v, _ = tla.Union(set, odd)
			}
			runtime.KeepAlive(v)
		}},
		{"membership x \\in S", func(b *testing.B) {
			hits := 0
			for i := range b.N {
				v, _ := tla.In(tla.Int(int64(i%(2*n))), set)
				if ok, _ := v.AsBool(); ok {
					hits++
				}
			}
			runtime.KeepAlive(hits)
		}},
		{"function EXCEPT [f EXCEPT ![k] = v]", func(b *testing.B) {
			var v tla.Value
			for i := range b.N {
				v, _ = tla.Except(fn, key, tla.Int(int64(i)))
			}
			runtime.KeepAlive(v)
		}},
	}
}

// runValues times each operation with testing.Benchmark (which picks the
// iteration count to run for about a second, or for benchtime).
func runValues(n int) []ValueOp {
	var out []ValueOp
	for _, vb := range valueBenches(n) {
		f := vb.f
		r := testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); f(b) })
		if r.N == 0 {
			continue
		}
		out = append(out, ValueOp{Name: vb.name, N: n, NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N),
			BPerOp: r.AllocedBytesPerOp(), AllocsOp: r.AllocsPerOp()})
	}
	return out
}
