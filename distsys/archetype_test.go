package distsys

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"strata/distsys/tla"
	"strata/stack"
)

// counter is a hand-written archetype: one local x, and a section that
// writes x then aborts (await FALSE) while blocked is positive, so the
// writes of aborted attempts must not survive.
func counter(blocked *int) *Archetype {
	return &Archetype{
		Name: "Counter", Pos: "C.tla:1:1", Start: "inc",
		Locals: []LocalVar{{Name: "x", Pos: "C.tla:2:3", Init: func(c *Context, e *tla.Eval) tla.Value { return tla.Int(10) }}},
		Sections: map[string]Section{
			"inc": {Label: "inc", Pos: "C.tla:3:3", Run: func(c *Context, e *tla.Eval) (string, error) {
				c.Write(e, "x", nil, e.Plus(c.Read(e, "x"), tla.Int(1)))
				c.Print(e, c.Read(e, "x"))
				*blocked--
				if !c.Await(e, tla.Bool(*blocked < 0)) {
					return "", e.Err()
				}
				return Done, nil
			}},
		},
	}
}

// TestAbortDiscardsWrites: an aborted attempt's write and print leave no
// trace; the committed attempt's do.
func TestAbortDiscardsWrites(t *testing.T) {
	blocked := 3
	var out bytes.Buffer
	c, err := NewContext(counter(&blocked), tla.Int(1), WithOutput(&out), WithBackoff(time.Microsecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if x, _ := c.Local("x"); x.String() != "11" {
		t.Fatalf("x = %v, want 11 (one committed increment)", x)
	}
	if c.Aborts() != 3 || out.String() != "11\n" {
		t.Fatalf("aborts %d, printed %q", c.Aborts(), out.String())
	}
}

// TestAssertAndOperatorErrorsNamePositions: a false assert and an
// operator outside its domain stop Run with the statement's position.
func TestAssertAndOperatorErrorsNamePositions(t *testing.T) {
	a := &Archetype{Name: "A", Pos: "A.tla:1:1", Start: "l",
		Sections: map[string]Section{"l": {Label: "l", Pos: "A.tla:2:3", Run: func(c *Context, e *tla.Eval) (string, error) {
			e.Pos = "A.tla:3:5"
			c.Assert(e, tla.False, "1 = 2")
			return Done, nil
		}}}}
	c, err := NewContext(a, tla.Int(1))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Run(context.Background())
	var ae *AssertionError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "A.tla:3:5: assertion failed: 1 = 2") {
		t.Fatalf("err = %v", err)
	}
	a.Sections["l"] = Section{Label: "l", Pos: "A.tla:2:3", Run: func(c *Context, e *tla.Eval) (string, error) {
		e.Pos = "A.tla:4:7"
		c.Write(e, "nosuch", nil, e.Head(tla.Tuple()))
		return Done, nil
	}}
	c, _ = NewContext(a, tla.Int(1))
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "A.tla:4:7: Head") {
		t.Fatalf("err = %v", err)
	}
}

// TestBindingErrors: missing, unknown, twice-bound and wrongly-kinded
// bindings are errors of NewContext naming the parameter's position.
func TestBindingErrors(t *testing.T) {
	a := &Archetype{Name: "A", Pos: "A.tla:1:1", Start: "l",
		Params:   []Param{{Name: "net", Pos: "A.tla:1:14", Ref: true, Index: 1}, {Name: "n", Pos: "A.tla:1:23"}},
		Sections: map[string]Section{}}
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{nil, "A.tla:1:14: archetype A: parameter net is not bound (use distsys.BindIndexed)"},
		{[]Option{BindIndexed("net", NewLocalMap(tla.Tuple()))}, "A.tla:1:23: archetype A: parameter n is not bound (use distsys.BindValue)"},
		{[]Option{BindValue("m", tla.Int(1))}, "A.tla:1:1: archetype A has no parameter m"},
		{[]Option{BindValue("net", tla.Int(1))}, "parameter net is ref net with 1 [_], not a value (BindValue)"},
		{[]Option{BindValue("n", tla.Int(1)), BindValue("n", tla.Int(2))}, "parameter n is bound twice"},
	} {
		_, err := NewContext(a, tla.Int(1), c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// TestChooseIsFair: either branches are picked uniformly (each of three
// within 10% of a third over 30,000 draws, seeded).
func TestChooseIsFair(t *testing.T) {
	c, err := NewContext(&Archetype{Name: "A"}, tla.Int(1), WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	var n [3]int
	for range 30000 {
		n[c.Choose(3)]++
	}
	for i, k := range n {
		if k < 9000 || k > 11000 {
			t.Fatalf("branch %d chosen %d times of 30000", i, k)
		}
	}
	var e tla.Eval
	if v := c.Pick(&e, tla.Set()); v.IsValid() || !errors.Is(e.Err(), ErrAborted) {
		t.Fatalf("with over {}: %v, %v", v, e.Err())
	}
}

// TestInputKeepsValuesOfAbortedSections: a value an aborted section read
// from an input channel is read again, not lost; an output channel
// receives only committed writes, in order.
func TestInputKeepsValuesOfAbortedSections(t *testing.T) {
	ch := make(chan tla.Value, 2)
	ch <- tla.Int(1)
	ch <- tla.Int(2)
	in := NewInput(ch)
	ctx := context.Background()
	v, _ := in.Read(ctx)
	in.Abort()
	w, _ := in.Read(ctx)
	x, _ := in.Read(ctx)
	if !tla.Equal(v, w) || x.String() != "2" {
		t.Fatalf("reads %v %v %v", v, w, x)
	}
	in.Commit(ctx)
	in.Wait = time.Millisecond
	if _, err := in.Read(ctx); !errors.Is(err, ErrAborted) {
		t.Fatalf("empty input: %v", err)
	}
	outCh := make(chan tla.Value, 4)
	out := NewOutput(outCh)
	out.Write(ctx, tla.Int(9))
	out.Abort()
	out.Write(ctx, tla.Int(1))
	out.Write(ctx, tla.Int(2))
	if err := out.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(outCh) != 2 || (<-outCh).String() != "1" || (<-outCh).String() != "2" {
		t.Fatal("output channel got aborted or misordered values")
	}
	if _, err := out.Read(ctx); !errors.Is(err, ErrWriteOnly) {
		t.Fatalf("read of output: %v", err)
	}
}

// TestMailboxDecodeRejects: malformed batches are errors (the receiver
// counts and drops them), and a batch round-trips.
func TestMailboxDecodeRejects(t *testing.T) {
	for _, b := range [][]byte{{}, {1}, {1, 5}, {1, 1, 200}, {1, 1, 1, 0xff}, {1, 0, 0}} {
		prev := []tla.Value{tla.Int(7)}
		if got, err := decodeBatch(prev, b); err == nil || len(got) != 1 {
			t.Errorf("decodeBatch(%v) accepted or changed what it appends to: %v", b, got)
		}
	}
	vs := []tla.Value{tla.Int(1), tla.Tuple(tla.String("a"))}
	var scratch []byte
	b, err := encodeBatch([]byte{9}, vs, &scratch)
	if err != nil || b[0] != 9 {
		t.Fatal(b, err)
	}
	again, _ := encodeBatch([]byte{9}, vs, &scratch) // the scratch reused: same bytes, a new message
	if string(again) != string(b) || &again[0] == &b[0] {
		t.Fatal("encoding with a reused scratch buffer differs or shares the message")
	}
	got, err := decodeBatch(nil, b[1:])
	if err != nil || len(got) != 2 || !tla.Equal(got[1], vs[1]) {
		t.Fatalf("round trip: %v %v", got, err)
	}
}

// commitCounter is an indexed resource whose entries count their commits.
type commitCounter struct{ entries map[int64]*countingEntry }

type countingEntry struct {
	Local
	commits int
}

func (e *countingEntry) Commit(ctx context.Context) error { e.commits++; return e.Local.Commit(ctx) }

func (c *commitCounter) Index(idx tla.Value) (Resource, error) {
	i, err := idx.AsInt64()
	if err != nil {
		return nil, err
	}
	if c.entries[i] == nil {
		c.entries[i] = &countingEntry{Local: Local{value: tla.Int(0)}}
	}
	return c.entries[i], nil
}

// TestManyTouchedResources: a section that touches more resources than
// the context scans linearly (touchScan), each several times, commits
// each exactly once, in order of first touch, with its last write.
func TestManyTouchedResources(t *testing.T) {
	const n = 3 * touchScan
	a := &Archetype{Name: "Many", Pos: "M.tla:1:1", Start: "l",
		Params: []Param{{Name: "x", Pos: "M.tla:1:10", Ref: true, Index: 1}},
		Sections: map[string]Section{"l": {Label: "l", Pos: "M.tla:2:3", Run: func(c *Context, e *tla.Eval) (string, error) {
			for round := range 3 {
				for i := 1; i <= n; i++ {
					idx := []tla.Value{tla.Int(int64(i))}
					c.Write(e, "x", idx, e.Plus(c.Read(e, "x", idx...), tla.Int(int64(i+round))))
				}
			}
			return Done, e.Err()
		}}},
	}
	cc := &commitCounter{entries: map[int64]*countingEntry{}}
	c, err := NewContext(a, tla.Int(1), BindIndexed("x", cc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= n; i++ {
		e := cc.entries[i]
		if e.commits != 1 || e.Value().String() != tla.Int(3*i+3).String() {
			t.Fatalf("x[%d]: %d commits, value %v; want 1 commit of %d", i, e.commits, e.Value(), 3*i+3)
		}
	}
	if len(c.touched) != 0 || len(c.seen) != 0 {
		t.Fatalf("section state not reset: %d touched, %d seen", len(c.touched), len(c.seen))
	}
}

// TestDeliverOnce: a LastAgent delivery repeated with the same
// transaction (its answer was lost) joins the inbox once; an older
// transaction is not delivered; a malformed one is refused and counted;
// the next transaction is delivered.
func TestDeliverOnce(t *testing.T) {
	m := &Mailboxes{arrived: make(chan struct{}, 1), delivered: map[stack.Addr]uint64{}, prepared: map[prepKey][]tla.Value{}}
	var scratch []byte
	msg := func(tx uint64, v tla.Value) []byte {
		b, err := encodeBatch(binary.AppendUvarint([]byte{msgDeliver}, tx), []tla.Value{v}, &scratch)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var answers []byte
	answer := func(b []byte) { answers = append(answers, b...) }
	m.handlePrepare("a", msg(10, tla.Int(1)), answer)
	m.handlePrepare("a", msg(10, tla.Int(1)), answer) // the repeat
	m.handlePrepare("a", msg(9, tla.Int(0)), answer)  // older
	m.handlePrepare("b", msg(10, tla.Int(2)), answer) // another sender's tx 10
	m.handlePrepare("a", []byte{msgDeliver, 11, 1, 200}, answer)
	m.handlePrepare("a", msg(11, tla.Int(3)), answer)
	if string(answers) != "\x01\x01\x01\x01\x00\x01" {
		t.Fatalf("answers %v", answers)
	}
	if got := tla.Tuple(m.queue...).String(); got != "<<1, 2, 3>>" {
		t.Fatalf("inbox %s, want <<1, 2, 3>>", got)
	}
	if m.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", m.Dropped())
	}
}
