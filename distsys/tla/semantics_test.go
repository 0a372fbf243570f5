package tla

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

// m unwraps an operator's result in tests; an error is a test bug and
// panics (which fails the test with a stack).
func m(v Value, err error) Value {
	if err != nil {
		panic(err)
	}
	return v
}

func ints(xs ...int64) []Value {
	out := make([]Value, len(xs))
	for i, x := range xs {
		out[i] = Int(x)
	}
	return out
}

func rng(_ testing.TB, lo, hi int64) Value { return m(Range(lo, hi)) }

func big2(s string) Value {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return BigInt(x)
}

// TestEqualityAcrossRepresentations is the TLA+ semantics table: each
// row is two expressions TLA+ (and TLC) consider equal, or unequal,
// built through different representations.
func TestEqualityAcrossRepresentations(t *testing.T) {
	id := func(x Value) (Value, error) { return x, nil }
	fn12 := m(Function(rng(t, 1, 2), id)) // [i \in 1..2 |-> i]
	fn01 := m(Function(rng(t, 0, 1), id)) // [i \in 0..1 |-> i]
	pairs := m(Merge(MapsTo(Int(1), Int(1)), MapsTo(Int(2), Int(2))))
	rec := Record(F("a", Int(1)), F("b", String("x")))
	recRev := Record(F("b", String("x")), F("a", Int(1)))
	recFn := m(Merge(MapsTo(String("a"), Int(1)), MapsTo(String("b"), String("x"))))
	tail := m(Tail(Tuple(Int(0), Int(1), Int(2))))
	app := m(Append(m(Append(EmptyTuple, Int(1))), Int(2)))
	sub := m(SubSeq(Tuple(Int(9), Int(1), Int(2), Int(9)), Int(2), Int(3)))
	exceptSame := m(Except(Tuple(Int(1), Int(5)), []Value{Int(2)}, Int(2)))
	fromPairs := m(FunctionFromPairs(ints(2, 1), ints(2, 1)))
	dom := m(Domain(rec))

	rows := []struct {
		name string
		a, b Value
		eq   bool
	}{
		{"<<1,2>> = [i \\in 1..2 |-> i]", Tuple(Int(1), Int(2)), fn12, true},
		{"<<1,2>> = (1:>1 @@ 2:>2)", Tuple(Int(1), Int(2)), pairs, true},
		{"<<1,2>> = Tail(<<0,1,2>>)", Tuple(Int(1), Int(2)), tail, true},
		{"<<1,2>> = Append(Append(<<>>,1),2)", Tuple(Int(1), Int(2)), app, true},
		{"<<1,2>> = SubSeq(<<9,1,2,9>>,2,3)", Tuple(Int(1), Int(2)), sub, true},
		{"<<1,2>> = [<<1,5>> EXCEPT ![2]=2]", Tuple(Int(1), Int(2)), exceptSame, true},
		{"<<1,2>> = FunctionFromPairs", Tuple(Int(1), Int(2)), fromPairs, true},
		{"<<1,2>> # [i \\in 0..1 |-> i]", Tuple(Int(1), Int(2)), fn01, false},
		{"<<1,2>> # <<2,1>>", Tuple(Int(1), Int(2)), Tuple(Int(2), Int(1)), false},
		{"[a|->1] = (\"a\" :> 1)", Record(F("a", Int(1))), MapsTo(String("a"), Int(1)), true},
		{"record field order irrelevant", rec, recRev, true},
		{"record = function over field names", rec, recFn, true},
		{"[a|->1] # [a|->2]", Record(F("a", Int(1))), Record(F("a", Int(2))), false},
		{"[a|->1] # [b|->1]", Record(F("a", Int(1))), Record(F("b", Int(1))), false},
		{"<<>> = [x \\in {} |-> x]", EmptyTuple, m(Function(EmptySet, id)), true},
		{"<<>> = Tail(<<1>>)", EmptyTuple, m(Tail(Tuple(Int(1)))), true},
		{"<<1>> = (1 :> 1)", Tuple(Int(1)), MapsTo(Int(1), Int(1)), true},
		{"1..3 = {3,2,1}", rng(t, 1, 3), Set(ints(3, 2, 1)...), true},
		{"1..3 = {1,2} \\union {3}", rng(t, 1, 3), m(Union(Set(ints(1, 2)...), Set(Int(3)))), true},
		{"1..0 = {}", m(Interval(Int(1), Int(0))), EmptySet, true},
		{"{1,1,2} = {2,1}", Set(ints(1, 1, 2)...), Set(ints(2, 1)...), true},
		{"1..3 # {1,2,4}", rng(t, 1, 3), Set(ints(1, 2, 4)...), false},
		{"DOMAIN [a|->1,b|->\"x\"] = {\"a\",\"b\"}", dom, Set(String("a"), String("b")), true},
		{"DOMAIN <<5,6>> = 1..2", m(Domain(Tuple(Int(5), Int(6)))), rng(t, 1, 2), true},
		{"{} # <<>>", EmptySet, EmptyTuple, false},
		{"1 # \"1\"", Int(1), String("1"), false},
		{"TRUE # 1", True, Int(1), false},
		{"model value = itself", ModelValue("m"), ModelValue("m"), true},
		{"model value # string of its name", ModelValue("m"), String("m"), false},
		{"2^64 = 2^63 * 2", m(Pow(Int(2), Int(64))), m(Times(big2("9223372036854775808"), Int(2))), true},
		{"(2^63 - 1) + 1 - 1 is small again", m(Minus(m(Plus(Int(1<<63-1), Int(1))), Int(1))), Int(1<<63 - 1), true},
		{"{<<1>>} = {(1 :> 1)}", Set(Tuple(Int(1))), Set(MapsTo(Int(1), Int(1))), true},
		{"{{1,2}} = {1..2}", Set(Set(ints(1, 2)...)), Set(rng(t, 1, 2)), true},
	}
	for _, row := range rows {
		if got := Equal(row.a, row.b); got != row.eq {
			t.Errorf("%s: Equal(%v, %v) = %v", row.name, row.a, row.b, got)
		}
		if got := Compare(row.a, row.b) == 0; got != row.eq {
			t.Errorf("%s: Compare(%v, %v) = %d", row.name, row.a, row.b, Compare(row.a, row.b))
		}
		if row.eq && row.a.Hash() != row.b.Hash() {
			t.Errorf("%s: equal values with hashes %x, %x", row.name, row.a.Hash(), row.b.Hash())
		}
	}
}

// TestString checks printing against what TLC prints for the same values.
func TestString(t *testing.T) {
	rows := []struct {
		v    Value
		want string
	}{
		{Tuple(Int(1), Int(2)), "<<1, 2>>"},
		{EmptyTuple, "<< >>"},
		{EmptySet, "{}"},
		{Set(ints(2, 1)...), "{1, 2}"},
		{Set(String("b"), String("a")), `{"a", "b"}`},
		{Record(F("b", Int(2)), F("a", Int(1))), "[a |-> 1, b |-> 2]"},
		{m(Merge(MapsTo(Int(1), Int(2)), MapsTo(Int(3), Int(4)))), "(1 :> 2 @@ 3 :> 4)"},
		{MapsTo(String("a b"), Int(1)), `("a b" :> 1)`},
		{m(Function(rng(t, 1, 3), func(x Value) (Value, error) { return Times(x, x) })), "<<1, 4, 9>>"},
		{rng(t, 2, 5), "2..5"},
		{True, "TRUE"},
		{False, "FALSE"},
		{Int(-7), "-7"},
		{String("say \"hi\"\n"), `"say \"hi\"\n"`},
		{ModelValue("nil"), "nil"},
		{big2("-123456789012345678901234567890"), "-123456789012345678901234567890"},
		{Set(Tuple(Int(1)), True, Int(3), String("s"), ModelValue("m"), EmptySet), `{TRUE, 3, "s", m, <<1>>, {}}`},
		{Value{}, "<invalid>"},
	}
	for _, row := range rows {
		if got := row.v.String(); got != row.want {
			t.Errorf("String() = %s, want %s", got, row.want)
		}
	}
}

func TestArithmetic(t *testing.T) {
	type op func(a, b Value) (Value, error)
	rows := []struct {
		name string
		op   op
		a, b Value
		want Value
	}{
		{`7 \div 2`, Div, Int(7), Int(2), Int(3)},
		{`-7 \div 2`, Div, Int(-7), Int(2), Int(-4)}, // floor, not truncation
		{`7 \div -2`, Div, Int(7), Int(-2), Int(-4)},
		{`-7 \div -2`, Div, Int(-7), Int(-2), Int(3)},
		{`-8 \div 2`, Div, Int(-8), Int(2), Int(-4)},
		{`-7 % 2`, Mod, Int(-7), Int(2), Int(1)}, // non-negative
		{`7 % 2`, Mod, Int(7), Int(2), Int(1)},
		{`-6 % 3`, Mod, Int(-6), Int(3), Int(0)},
		{`MinInt64 \div -1`, Div, Int(-1 << 63), Int(-1), big2("9223372036854775808")},
		{`MaxInt64 + 1`, Plus, Int(1<<63 - 1), Int(1), big2("9223372036854775808")},
		{`MinInt64 - 1`, Minus, Int(-1 << 63), Int(1), big2("-9223372036854775809")},
		{`2^62 * 4`, Times, Int(1 << 62), Int(4), big2("18446744073709551616")},
		{`-2^62 * 2`, Times, Int(-1 << 62), Int(2), Int(-1 << 63)},
		{`big \div 2 is small`, Div, big2("18446744073709551616"), Int(4), Int(1 << 62)},
		{`-big \div 3`, Div, big2("-18446744073709551617"), Int(3), big2("-6148914691236517206")},
		{`big \div -3`, Div, big2("18446744073709551617"), Int(-3), big2("-6148914691236517206")},
		{`-big % 3`, Mod, big2("-18446744073709551617"), Int(3), Int(1)},
		{`2^10`, Pow, Int(2), Int(10), Int(1024)},
		{`(-1)^(2^70)`, Pow, Int(-1), big2("1180591620717411303424"), Int(1)},
		{`0^0`, Pow, Int(0), Int(0), Int(1)},
		{`3 < 4`, Lt, Int(3), Int(4), True},
		{`big > small`, Gt, big2("18446744073709551616"), Int(5), True},
		{`-big < small`, Lt, big2("-18446744073709551616"), Int(-5), True},
		{`4 <= 4`, Le, Int(4), Int(4), True},
		{`3 >= 4`, Ge, Int(3), Int(4), False},
	}
	for _, row := range rows {
		got, err := row.op(row.a, row.b)
		if err != nil {
			t.Errorf("%s: %v", row.name, err)
			continue
		}
		if !Equal(got, row.want) || got.r != row.want.r {
			t.Errorf("%s = %v (rep %d), want %v (rep %d)", row.name, got, got.r, row.want, row.want.r)
		}
	}
}

// TestUndefined checks that what TLA+ leaves undefined is an error, not
// a panic and not a made-up value.
func TestUndefined(t *testing.T) {
	rows := []struct {
		name string
		run  func() (Value, error)
		msg  string
	}{
		{"f[x] outside domain", func() (Value, error) { return Apply(Tuple(Int(1)), Int(2)) }, "not in the domain"},
		{"r.f missing", func() (Value, error) { return Field(Record(F("a", Int(1))), "b") }, `no field "b"`},
		{"Head(<<>>)", func() (Value, error) { return Head(EmptyTuple) }, "empty sequence"},
		{"Tail(<<>>)", func() (Value, error) { return Tail(EmptyTuple) }, "empty sequence"},
		{"1 + \"a\"", func() (Value, error) { return Plus(Int(1), String("a")) }, "want an integer, got string"},
		{"TRUE + 1", func() (Value, error) { return Plus(True, Int(1)) }, "want an integer"},
		{"x \\div 0", func() (Value, error) { return Div(Int(1), Int(0)) }, "by zero"},
		{"x % 0", func() (Value, error) { return Mod(Int(1), Int(0)) }, "positive"},
		{"x % -2", func() (Value, error) { return Mod(Int(1), Int(-2)) }, "positive"},
		{"2^-1", func() (Value, error) { return Pow(Int(2), Int(-1)) }, "negative exponent"},
		{"2^(2^30)", func() (Value, error) { return Pow(Int(2), Int(1<<30)) }, "bits"},
		{"1 \\in 1", func() (Value, error) { return In(Int(1), Int(1)) }, "want a set"},
		{"Len([a|->1])", func() (Value, error) { return Len(Record(F("a", Int(1)))) }, "not a sequence"},
		{"Append(0..1-indexed fn)", func() (Value, error) { return Append(MapsTo(Int(0), Int(0)), Int(1)) }, "not a sequence"},
		{"SubSeq out of range", func() (Value, error) { return SubSeq(Tuple(Int(1)), Int(1), Int(2)) }, "outside"},
		{"CHOOSE none", func() (Value, error) {
			return Choose(Set(Int(1)), func(Value) (bool, error) { return false, nil })
		}, "no element"},
		{"SUBSET 1..21", func() (Value, error) { return Subset(rng(t, 1, 21)) }, "at most"},
		{"1..2^40 \\union {0}", func() (Value, error) { return Union(rng(t, 1, 1<<40), Set(String("x"))) }, "more than"},
		{"~1", func() (Value, error) { return Not(Int(1)) }, "boolean"},
		{"invalid operand", func() (Value, error) { return Plus(Value{}, Int(1)) }, "invalid (zero) Value"},
		{"DOMAIN 1", func() (Value, error) { return Domain(Int(1)) }, "want a function"},
		{"EXCEPT into a non-function", func() (Value, error) {
			return Except(Tuple(Int(1)), []Value{Int(1), Int(1)}, Int(0))
		}, "want a function"},
		{"Interval with strings", func() (Value, error) { return Interval(String("a"), Int(1)) }, "integer"},
	}
	for _, row := range rows {
		v, err := row.run()
		if err == nil {
			t.Errorf("%s: no error, got %v", row.name, v)
			continue
		}
		if !errors.Is(err, ErrUndefined) || !strings.Contains(err.Error(), row.msg) {
			t.Errorf("%s: error %q, want one containing %q matching ErrUndefined", row.name, err, row.msg)
		}
	}
	if _, err := Subset(rng(t, 1, 30)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("SUBSET 1..30: %v does not match ErrTooLarge", err)
	}
}

func TestSequences(t *testing.T) {
	s := Tuple(ints(1, 2, 3, 4)...)
	if got := m(Head(s)); !Equal(got, Int(1)) {
		t.Errorf("Head = %v", got)
	}
	if got := m(Len(s)); !Equal(got, Int(4)) {
		t.Errorf("Len = %v", got)
	}
	if got := m(SubSeq(s, Int(3), Int(2))); !Equal(got, EmptyTuple) {
		t.Errorf("SubSeq(s, 3, 2) = %v", got)
	}
	if got := m(SubSeq(s, Int(5), Int(0))); !Equal(got, EmptyTuple) {
		t.Errorf("SubSeq(s, 5, 0) = %v (m > n is << >> whatever the bounds)", got)
	}
	if got := m(Concat(s, Tuple(Int(5)))); got.String() != "<<1, 2, 3, 4, 5>>" {
		t.Errorf("\\o = %v", got)
	}
	if got := m(Concat(String("ab"), String("c"))); !Equal(got, String("abc")) {
		t.Errorf("string \\o = %v", got)
	}
	if got := m(Len(String("abc"))); !Equal(got, Int(3)) {
		t.Errorf("Len string = %v", got)
	}
	even := func(x Value) (bool, error) { m, err := Mod(x, Int(2)); return Equal(m, Int(0)), err }
	if got := m(SelectSeq(s, even)); got.String() != "<<2, 4>>" {
		t.Errorf("SelectSeq = %v", got)
	}
	if got := m(InSeq(s, rng(t, 1, 4))); !Equal(got, True) {
		t.Errorf("s \\in Seq(1..4) = %v", got)
	}
	if got := m(InSeq(s, rng(t, 1, 3))); !Equal(got, False) {
		t.Errorf("s \\in Seq(1..3) = %v", got)
	}
	if got := m(InSeq(Record(F("a", Int(1))), rng(t, 1, 3))); !Equal(got, False) {
		t.Errorf("record \\in Seq(1..3) = %v", got)
	}
	if got := m(InSeq(EmptyTuple, EmptySet)); !Equal(got, True) {
		t.Errorf("<< >> \\in Seq({}) = %v", got)
	}

	// A queue: Append at the end, Tail at the front, many times; every
	// intermediate value stays what it was.
	q := EmptyTuple
	var olds []Value
	for i := range 1000 {
		q = m(Append(q, Int(int64(i))))
		if i%3 == 0 {
			q = m(Tail(q))
		}
		olds = append(olds, q)
	}
	// Replay: recompute each expected value independently.
	var ref []int64
	for i := range 1000 {
		ref = append(ref, int64(i))
		if i%3 == 0 {
			ref = ref[1:]
		}
		if !Equal(olds[i], Tuple(ints(ref...)...)) {
			t.Fatalf("queue step %d = %v, want %v", i, olds[i], ref)
		}
	}
}

func TestFunctionsAndRecords(t *testing.T) {
	r := Record(F("type", String("req")), F("from", Int(2)), F("body", Tuple(Int(1))))
	if got := m(Field(r, "from")); !Equal(got, Int(2)) {
		t.Errorf("r.from = %v", got)
	}
	r2 := m(Except(r, []Value{String("body"), Int(1)}, Int(9)))
	if r2.String() != `[body |-> <<9>>, from |-> 2, type |-> "req"]` {
		t.Errorf("[r EXCEPT !.body[1] = 9] = %v", r2)
	}
	if r.String() != `[body |-> <<1>>, from |-> 2, type |-> "req"]` {
		t.Errorf("r changed: %v", r)
	}
	// Outside the domain: unchanged (TLA+'s definition).
	if got := m(Except(r, []Value{String("nope")}, Int(0))); !Equal(got, r) {
		t.Errorf("EXCEPT outside domain = %v", got)
	}
	// @: [f EXCEPT ![1] = @ + 1].
	inc := func(old Value) (Value, error) { return Plus(old, Int(1)) }
	if got := m(ExceptWith(Tuple(Int(4), Int(5)), []Value{Int(1)}, inc)); got.String() != "<<5, 5>>" {
		t.Errorf("EXCEPT @+1 = %v", got)
	}
	// @@ keeps the left side.
	if got := m(Merge(MapsTo(Int(1), String("l")), MapsTo(Int(1), String("r")))); got.String() != `<<"l">>` {
		t.Errorf("@@ = %v", got)
	}
	// Multi-argument functions are functions of tuples.
	f := m(Function(m(CrossProduct(rng(t, 1, 2), rng(t, 1, 2))), func(x Value) (Value, error) {
		return Plus(m(Apply(x, Int(1))), m(Apply(x, Int(2))))
	}))
	if got := m(Apply(f, Tuple(Int(2), Int(2)))); !Equal(got, Int(4)) {
		t.Errorf("f[2, 2] = %v", got)
	}
	fs := m(FunctionSet(rng(t, 1, 2), Boolean))
	if got := m(Cardinality(fs)); !Equal(got, Int(4)) {
		t.Errorf("|[1..2 -> BOOLEAN]| = %v", got)
	}
	if !Equal(m(In(Tuple(True, False), fs)), True) {
		t.Errorf("<<TRUE, FALSE>> \\notin [1..2 -> BOOLEAN]: %v", fs)
	}
	rs := m(RecordSet(FieldSet{"b", Boolean}, FieldSet{"a", rng(t, 1, 3)}))
	if got := m(Cardinality(rs)); !Equal(got, Int(6)) {
		t.Errorf("|[a : 1..3, b : BOOLEAN]| = %v", got)
	}
	if !Equal(m(In(Record(F("a", Int(3)), F("b", True)), rs)), True) {
		t.Errorf("record not in its record set %v", rs)
	}
}

func TestSetsAndChoose(t *testing.T) {
	s := Set(ints(5, 3, 9, 1)...)
	gt2 := func(x Value) (bool, error) { v, err := Gt(x, Int(2)); return Equal(v, True), err }
	if got := m(Choose(s, gt2)); !Equal(got, Int(3)) {
		t.Errorf("CHOOSE x \\in S : x > 2 = %v, want the least, 3", got)
	}
	if got := m(Filter(s, gt2)); got.String() != "{3, 5, 9}" {
		t.Errorf("filter = %v", got)
	}
	sq := func(x Value) (Value, error) { return Mod(x, Int(2)) }
	if got := m(Map(s, sq)); got.String() != "{1}" {
		t.Errorf("map = %v", got)
	}
	if got := m(Exists(s, gt2)); !Equal(got, True) {
		t.Errorf("exists = %v", got)
	}
	if got := m(Forall(s, gt2)); !Equal(got, False) {
		t.Errorf("forall = %v", got)
	}
	if got := m(Subset(Set(ints(1, 2)...))); got.String() != "{{}, {1}, {2}, {1, 2}}" {
		t.Errorf("SUBSET {1, 2} = %v", got)
	}
	if got := m(BigUnion(Set(Set(Int(1)), rng(t, 2, 3), EmptySet))); !Equal(got, rng(t, 1, 3)) {
		t.Errorf("UNION = %v", got)
	}
	if got := m(Cardinality(rng(t, -5, 5))); !Equal(got, Int(11)) {
		t.Errorf("Cardinality(-5..5) = %v", got)
	}
	big := rng(t, 1, 1<<40)
	if !Equal(m(In(Int(1<<39), big)), True) || !Equal(m(In(Int(0), big)), False) {
		t.Errorf("membership in a huge interval")
	}
	if got := m(Intersect(big, rng(t, -3, 2))); !Equal(got, rng(t, 1, 2)) {
		t.Errorf("interval intersection = %v", got)
	}
	if got := m(Union(rng(t, 1, 3), rng(t, 4, 6))); got.String() != "1..6" {
		t.Errorf("adjacent intervals union = %v", got)
	}
	if !Equal(m(SubsetEq(Set(ints(2, 3)...), big)), True) {
		t.Errorf("{2,3} \\subseteq 1..2^40")
	}
	if !Equal(m(CrossProduct(Set(Int(1), Int(2)), Set(String("a")))), Set(Tuple(Int(1), String("a")), Tuple(Int(2), String("a")))) {
		t.Errorf("cross product")
	}
	if _, err := Range(-1<<63, 1<<63-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Range over all int64: %v", err)
	}
}

func TestEval(t *testing.T) {
	var e Eval
	e.Pos = "Lock.tla:42:9"
	f := Tuple(Int(10), Int(20))
	v := e.Plus(e.Apply(f, Int(2)), Int(1))
	if e.Err() != nil || !Equal(v, Int(21)) {
		t.Fatalf("f[2] + 1 = %v, %v", v, e.Err())
	}
	v = e.Plus(e.Apply(f, Int(3)), Int(1))
	err := e.Err()
	if err == nil || v.IsValid() {
		t.Fatalf("f[3] + 1 = %v, %v", v, err)
	}
	if !strings.HasPrefix(err.Error(), "Lock.tla:42:9: f[x]: 3 is not in the domain of <<10, 20>>") {
		t.Errorf("error %q", err)
	}
	e.Pos = "elsewhere"
	e.Head(EmptyTuple)
	if e.Err() != err {
		t.Errorf("second error replaced the first: %v", e.Err())
	}
	// Errors inside callbacks stop the enclosing operator.
	var e2 Eval
	out := e2.Filter(rng(t, 1, 5), func(x Value) bool { return e2.Bool(e2.Lt(x, String("a"))) })
	if e2.Err() == nil || out.IsValid() {
		t.Errorf("filter with failing predicate = %v, %v", out, e2.Err())
	}
	var e3 Eval
	if got := e3.ExceptWith(Tuple(Int(1)), []Value{Int(1)}, func(old Value) Value { return e3.Plus(old, Int(1)) }); !Equal(got, Tuple(Int(2))) || e3.Err() != nil {
		t.Errorf("ExceptWith = %v, %v", got, e3.Err())
	}
}
