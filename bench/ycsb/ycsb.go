// Package ycsb is an in-house Go driver for the Yahoo! Cloud Serving
// Benchmark's core workloads A–F, as YCSB 0.17 (site.ycsb.workloads.
// CoreWorkload) defines them, for `strata bench kv`: one generator that
// both sides of a comparison run, so that Strata and its peer see the same
// operation mix, the same key popularity and the same measurement.
//
// What it reproduces from YCSB, with the core workloads' own properties:
//
//   - Records are named "user" + the decimal of a 64-bit FNV-1 hash of
//     the record number (insertorder=hashed, zeropadding=1), so that
//     records inserted in order land all over the key space.
//   - Each record is one field (fieldcount=1) of ValueSize bytes (1 KiB in
//     the benchmark); an update, insert or read-modify-write writes the
//     whole field with fresh random bytes; a read reads it.
//   - The operation of each request is drawn with the workload's
//     proportions (read, update, insert, scan, read-modify-write, in that
//     order, as YCSB's DiscreteGenerator does).
//   - Zipfian request distribution with YCSB's constant 0.99 and its
//     scrambled-zipfian key choice (a zipfian item out of 10^10, with
//     YCSB's precomputed zeta, hashed with FNV and taken modulo the
//     record count, so that popular records are scattered); workload D's
//     "latest" distribution (the newest acknowledged insert is the most
//     popular, zipfian backwards from it); workload E's scan length
//     uniform in 1..100.
//   - Inserts take the next record number; reads choose only among
//     acknowledged inserts (YCSB's AcknowledgedCounterGenerator).
//   - A load phase inserts records 0..N-1; a run phase then runs a
//     workload.
//
// Where it differs, and why: YCSB runs a fixed operation count; this
// driver runs closed-loop clients for a warm-up and a measured window
// (as every Strata benchmark does), so the scrambled zipfian's key space
// is the records present when the run starts (YCSB adds twice the
// expected inserts and redraws keys not yet inserted; the popular keys
// are equally scattered either way). Randomness is seeded (per client),
// so a run's operation stream replays from its seed.
//
// Guarantees: the generator is deterministic from its seed for one
// client; with several clients each client's stream is, except which
// record numbers its inserts get and which inserts are acknowledged when
// a key is drawn. Run fails on the first operation a DB reports as failed
// or that returns what cannot be right (a read of a loaded record that
// finds nothing or a value of the wrong size, a scan from an existing key
// that returns no record or more than asked): no failure is counted as a
// completed operation. Assumed: the DB is safe for concurrent use and
// does not keep a value slice after the call returns.
package ycsb

import (
	"fmt"
	"strconv"
	"strings"
)

// OpKind is one of YCSB's operations.
type OpKind int

// The operations, in the order YCSB's operation chooser lists them.
const (
	Read OpKind = iota
	Update
	Insert
	Scan
	ReadModifyWrite
	numKinds
)

var kindNames = [numKinds]string{"read", "update", "insert", "scan", "read-modify-write"}

func (k OpKind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Distributions of the key a request addresses.
const (
	Zipfian = "zipfian" // scrambled zipfian over the records
	Latest  = "latest"  // skewed towards the latest acknowledged insert
)

// ZipfianConstant is YCSB's zipfian constant (theta).
const ZipfianConstant = 0.99

// Workload is a core workload's properties.
type Workload struct {
	Name string `json:"name"`
	// Proportions of each OpKind (they sum to 1).
	Proportions [numKinds]float64 `json:"proportions"`
	// Distribution of the keys requests address: Zipfian or Latest.
	Distribution string `json:"distribution"`
	// MaxScanLength bounds a scan's length, drawn uniformly in
	// 1..MaxScanLength (workload E; 0 elsewhere).
	MaxScanLength int `json:"max_scan_length,omitempty"`
}

// Core are YCSB's core workloads (workloads/workloada..f), one field per
// record.
var Core = []Workload{
	{Name: "A", Proportions: mix(0.5, 0.5, 0, 0, 0), Distribution: Zipfian},
	{Name: "B", Proportions: mix(0.95, 0.05, 0, 0, 0), Distribution: Zipfian},
	{Name: "C", Proportions: mix(1, 0, 0, 0, 0), Distribution: Zipfian},
	{Name: "D", Proportions: mix(0.95, 0, 0.05, 0, 0), Distribution: Latest},
	{Name: "E", Proportions: mix(0, 0, 0.05, 0.95, 0), Distribution: Zipfian, MaxScanLength: 100},
	{Name: "F", Proportions: mix(0.5, 0, 0, 0, 0.5), Distribution: Zipfian},
}

// mix is the proportions of read, update, insert, scan and
// read-modify-write.
func mix(read, update, insert, scan, rmw float64) [numKinds]float64 {
	return [numKinds]float64{Read: read, Update: update, Insert: insert, Scan: scan, ReadModifyWrite: rmw}
}

// Lookup returns the core workload named name ("A".."F", any case).
func Lookup(name string) (Workload, error) {
	for _, w := range Core {
		if strings.EqualFold(w.Name, name) {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("unknown YCSB workload %q (want one of A, B, C, D, E, F)", name)
}

// Describe is one line saying what the workload does.
func (w Workload) Describe() string {
	var parts []string
	for k := range numKinds {
		if p := w.Proportions[k]; p > 0 {
			parts = append(parts, fmt.Sprintf("%s %g%%", OpKind(k), 100*p))
		}
	}
	s := strings.Join(parts, ", ") + ", " + w.Distribution
	if w.MaxScanLength > 0 {
		s += fmt.Sprintf(", scan length uniform 1..%d", w.MaxScanLength)
	}
	return s
}

// KeyPrefix starts every record's key; KeyPrefixEnd is the first key
// after all of them (the end of a scan's range).
const (
	KeyPrefix    = "user"
	KeyPrefixEnd = "uses"
)

// FNV-1 64-bit constants, as YCSB's Utils.fnvhash64 uses them.
const (
	fnvOffsetBasis64 = 0xCBF29CE484222325
	fnvPrime64       = 1099511628211
)

// FNVHash64 is YCSB's Utils.fnvhash64: FNV-1 over the value's eight
// low-order-first bytes, in Java's signed 64-bit arithmetic, then
// Math.abs (which leaves the most negative value negative).
func FNVHash64(val int64) int64 {
	h := uint64(fnvOffsetBasis64)
	for range 8 {
		octet := uint64(val & 0xff)
		val >>= 8 // arithmetic, as Java's >>
		h ^= octet
		h *= fnvPrime64
	}
	s := int64(h)
	if s < 0 {
		s = -s
	}
	return s
}

// KeyName is YCSB's key of record keynum: "user" and the decimal of its
// hash.
func KeyName(keynum int64) string {
	return KeyPrefix + strconv.FormatInt(FNVHash64(keynum), 10)
}
