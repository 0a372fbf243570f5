// Package tla is the TLA+ value library of Strata's MPCal→Go runtime
// (distsys): the values generated code computes with and resources read
// and write. It covers what TLC can represent finitely: booleans,
// integers, strings, TLC model values, finite sets (and intervals a..b),
// and functions with a finite domain, of which tuples/sequences (domain
// 1..n) and records (domain a set of field-name strings) are special
// cases.
//
// # Guarantees
//
//   - Immutability. No operation changes a Value any other holder can
//     see. Values are shared freely between goroutines and between
//     critical sections that may abort, so an aborted section needs no
//     undo: it simply drops the values it built. Sharing inside the
//     representation (an EXCEPT shares the domain of the function it
//     updates; Tail, SubSeq and Append share the backing array of the
//     sequence) is invisible to callers. Append writes into spare capacity
//     of a backing array only after claiming that slot with an atomic
//     compare-and-swap on the array's high-water mark, so of all sequences
//     sharing an array at most one ever extends it in place and every
//     other Append copies; a slot is written once, before the sequence
//     that contains it exists.
//   - TLA+ equality. Equal and Compare are on the values TLA+ denotes, not
//     on representations: <<1, 2>> equals [i \in 1..2 |-> i] and
//     (1 :> 1 @@ 2 :> 2); [a |-> 1] equals ("a" :> 1); 1..3 equals
//     {1, 2, 3}. To keep the common case fast every constructor
//     normalizes: a function whose domain is exactly 1..n is always held
//     as a sequence, so sequence operators need only look at one
//     representation.
//   - A total order. Compare orders all values, consistently with Equal:
//     first by kind (Bool < Int < String < ModelValue < Function < Set),
//     then within a kind as TLC's compareTo does (integers numerically,
//     strings bytewise, functions and sets by size, then element by
//     element in canonical order). Sets are kept sorted in this order,
//     which makes CHOOSE deterministic (the least element satisfying the
//     predicate, the one TLC picks from a normalized finite set) and
//     makes String print sets the way TLC prints them.
//   - Hash is consistent with Equal (equal values hash equally whatever
//     their representation), for use as map keys together with Equal.
//   - No panics. Operations TLA+ leaves undefined (applying a function
//     outside its domain, Head(<<>>), 1 + "a", x \div 0, an interval or
//     powerset too large to build) return an *Error, never panic. The
//     zero Value is invalid: operations given it return an error, so a
//     value left unset by a bug is reported, not silently used.
//
// # API shape
//
// Every operator is a package-level function. Those that cannot fail
// return a Value (Equal, Eq, Tuple, Set, Record); those that can return
// (Value, error). Generated code evaluating a nested expression uses an
// Eval, which mirrors the failing operators without the error result and
// remembers the first error with the MPCal source position it was
// evaluated at:
//
//	var e tla.Eval
//	e.Pos = "Lock.tla:42:9"
//	v := e.Plus(e.Apply(f, self), tla.Int(1))
//	if err := e.Err(); err != nil {
//		return err // "Lock.tla:42:9: f[...]: ... not in the domain ..."
//	}
//
// After the first error every Eval method returns the invalid Value, so
// one check per statement suffices.
//
// # Integers
//
// TLA+ integers are unbounded. An Int is an int64 held inline in the
// Value (no allocation); an operation whose result does not fit in int64
// promotes it to a math/big.Int, and a big result that fits is demoted
// again, so every integer has one representation. The overflow check is
// a couple of instructions on the fast path; the alternative, an error on
// overflow, would make the Go program disagree with TLC on specifications
// that TLC checks without complaint (TLC itself stops at 32 bits, so no
// model-checked specification relies on larger values, but a Go run may
// outlive the model's bounds, e.g. a term or log index).
//
// # Where this departs from TLC
//
//   - TLC refuses to compare values of different kinds (1 = "a" is an
//     error); here they are simply unequal, and sets may mix kinds. TLA+
//     itself leaves such equalities unspecified, so any answer is sound.
//   - Strings are not sequences: Len and \o accept strings, as TLC's do,
//     but a string never equals a tuple of characters.
//   - Model values are ordered by name (TLC orders them by declaration).
//   - Infinite sets (Nat, Int, Seq(S), SUBSET of a large set) are not
//     values; membership in them is a helper (InNat, InSeq, SubsetEq).
//
// # Representations
//
// A Value is 24 bytes: a kind tag, an int64 and one pointer. Booleans,
// integers, strings and model values need no heap object of their own.
// Sets are sorted slices (membership is a binary search, union a merge,
// or a binary-search insert when one side is small); intervals are two
// bounds. Functions are a sorted key slice, shared by every function
// with that domain, and a value slice; sequences are a slice of a backing
// array. The PGo paper (§7) names its hash-array-mapped-trie values as a
// main cost; MPCal values are mostly small records, messages and short
// queues, where a flat slice is both smaller and faster. docs/distsys.md
// has the measurements.
package tla
