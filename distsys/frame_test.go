package distsys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"strata/distsys/tla"
)

// refusing refuses the pre-commits of the sections that touch it while
// refuse is positive (counting down), then behaves like a Local.
type refusing struct {
	*Local
	refuse int
}

func (r *refusing) PreCommit(ctx context.Context) error {
	if r.refuse > 0 {
		r.refuse--
		return &AbortError{Reason: "test: refused"}
	}
	return r.Local.PreCommit(ctx)
}

func fastBackoff() Option { return WithBackoff(time.Microsecond, 10*time.Microsecond) }

// TestCallAndReturnRollBack: a section that calls and a section that
// returns each abort twice after running to their end (their shared
// resource refuses to pre-commit); every retry starts with the stack as
// the last committed step left it. The procedure's value parameter and
// local (initialized from it) are its own; its ref parameter is the
// archetype's variable.
func TestCallAndReturnRollBack(t *testing.T) {
	var depths []string
	seen := func(c *Context, label string) { depths = append(depths, label+"@"+string(rune('0'+c.Depth()))) }
	p := &Procedure{Name: "P", Pos: "T.tla:1:1", Start: "p1",
		Params: []Param{{Name: "v"}, {Name: "r", Ref: true}},
		Locals: []LocalVar{{Name: "w", Init: func(c *Context, e *tla.Eval) tla.Value { return e.Plus(c.Read(e, "v"), tla.Int(1)) }}},
		Sections: map[string]Section{"p1": {Label: "p1", Run: func(c *Context, e *tla.Eval) (string, error) {
			seen(c, "p1")
			c.Write(e, "r", nil, e.Plus(c.Read(e, "r"), c.Read(e, "w")))
			return c.Return(e)
		}}}}
	a := &Archetype{Name: "A", Pos: "T.tla:5:1", Start: "a",
		Params: []Param{{Name: "r", Ref: true}},
		Locals: []LocalVar{{Name: "x", Init: func(*Context, *tla.Eval) tla.Value { return tla.Int(0) }}},
		Sections: map[string]Section{
			"a": {Label: "a", Run: func(c *Context, e *tla.Eval) (string, error) {
				seen(c, "a")
				c.Write(e, "r", nil, c.Read(e, "r")) // touch the refusing resource
				return c.Call(e, p, "b", Val(tla.Int(10)), Ref("x"))
			}},
			"b": {Label: "b", Run: func(c *Context, e *tla.Eval) (string, error) {
				seen(c, "b")
				if _, ok := c.Local("v"); ok {
					t.Error("the procedure's parameter v is visible after its return")
				}
				return Done, nil
			}},
		}}
	r := &refusing{Local: NewLocal(tla.Int(0)), refuse: 2}
	c, err := NewContext(a, tla.Int(1), BindRef("r", r), fastBackoff())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// p1 writes only x (through its ref r = x), so it commits first time.
	if got := strings.Join(depths, " "); got != "a@0 a@0 a@0 p1@1 b@0" {
		t.Fatalf("sections and depths: %s", got)
	}
	if x, _ := c.Local("x"); x.String() != "11" {
		t.Fatalf("x = %v, want 11 (v + 1 added once)", x)
	}
	if c.Aborts() != 2 || c.Depth() != 0 {
		t.Fatalf("aborts %d, depth %d", c.Aborts(), c.Depth())
	}

	// Now the returning section aborts: it touches the archetype's r too.
	depths = nil
	p.Params[1] = Param{Name: "r", Ref: true}
	a.Sections["a"] = Section{Label: "a", Run: func(c *Context, e *tla.Eval) (string, error) {
		seen(c, "a")
		return c.Call(e, p, "b", Val(tla.Int(1)), Ref("r"))
	}}
	r = &refusing{Local: NewLocal(tla.Int(0)), refuse: 2}
	c, err = NewContext(a, tla.Int(1), BindRef("r", r), fastBackoff())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(depths, " "); got != "a@0 p1@1 p1@1 p1@1 b@0" {
		t.Fatalf("sections and depths: %s", got)
	}
	if r.Value().String() != "2" {
		t.Fatalf("r = %v, want 2", r.Value())
	}
}

// countdown is a procedure that recurses n times (k := k - 1 each time)
// and then returns through every frame, or, with tail set, replaces its
// own frame each time.
func countdown(tail bool, maxSeen *int) *Procedure {
	p := &Procedure{Name: "Down", Pos: "D.tla:1:1", Start: "d", Params: []Param{{Name: "k"}}}
	p.Sections = map[string]Section{
		"d": {Label: "d", Run: func(c *Context, e *tla.Eval) (string, error) {
			*maxSeen = max(*maxSeen, c.Depth())
			if !e.Bool(e.Gt(c.Read(e, "k"), tla.Int(0))) {
				return c.Return(e)
			}
			next := e.Minus(c.Read(e, "k"), tla.Int(1))
			if tail {
				return c.TailCall(e, p, Val(next))
			}
			return c.Call(e, p, "after", Val(next))
		}},
		"after": {Label: "after", Run: func(c *Context, e *tla.Eval) (string, error) { return c.Return(e) }},
	}
	return p
}

func caller(p *Procedure, n int64) *Archetype {
	return &Archetype{Name: "A", Pos: "A.tla:1:1", Start: "a", Sections: map[string]Section{
		"a": {Label: "a", Run: func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, p, Done, Val(tla.Int(n))) }},
	}}
}

// TestRecursion: 100 nested calls reach depth 101 and unwind; 100 tail
// calls stay one frame deep; a recursion deeper than the bound stops
// the archetype with an error instead of growing without limit.
func TestRecursion(t *testing.T) {
	for _, c := range []struct {
		tail bool
		want int
	}{{false, 101}, {true, 1}} {
		var seen int
		ctx, err := NewContext(caller(countdown(c.tail, &seen), 100), tla.Int(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := ctx.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if seen != c.want || ctx.Depth() != 0 {
			t.Fatalf("tail %v: deepest %d (want %d), final depth %d", c.tail, seen, c.want, ctx.Depth())
		}
	}
	var seen int
	ctx, err := NewContext(caller(countdown(false, &seen), 100), tla.Int(1), WithMaxCallDepth(50))
	if err != nil {
		t.Fatal(err)
	}
	err = ctx.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "call Down: more than 50 nested procedure calls") || seen != 50 {
		t.Fatalf("deepest %d, err %v", seen, err)
	}
	if _, err := NewContext(caller(countdown(false, &seen), 1), tla.Int(1), WithMaxCallDepth(0)); err == nil {
		t.Fatal("WithMaxCallDepth(0) accepted")
	}
}

// TestProcedureErrors: misuse of procedures stops the archetype with an
// error naming the position; nothing panics.
func TestProcedureErrors(t *testing.T) {
	noReturn := &Procedure{Name: "P", Pos: "P.tla:3:3", Start: "p", Sections: map[string]Section{
		"p": {Label: "p", Pos: "P.tla:4:3", Run: func(c *Context, e *tla.Eval) (string, error) { return ErrorLabel, nil }},
	}}
	withRef := &Procedure{Name: "R", Pos: "P.tla:9:3", Start: "r", Params: []Param{{Name: "x", Ref: true}},
		Sections: map[string]Section{"r": {Label: "r", Run: func(c *Context, e *tla.Eval) (string, error) { return c.Return(e) }}}}
	withIndexed := &Procedure{Name: "I", Pos: "P.tla:12:3", Start: "i", Params: []Param{{Name: "x", Ref: true, Index: 1}},
		Sections: map[string]Section{"i": {Label: "i", Run: func(c *Context, e *tla.Eval) (string, error) { return c.Return(e) }}}}
	cases := []struct {
		name string
		run  func(c *Context, e *tla.Eval) (string, error)
		want string
	}{
		{"no return", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, noReturn, Done) },
			"procedure P (P.tla:3:3): control reached the end of the procedure without a return"},
		{"argument count", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, withRef, Done) },
			"A.tla:7:5: procedure R takes 1 arguments, given 0"},
		{"value for a ref", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, withRef, Done, Val(tla.Int(1))) },
			"A.tla:7:5: call R: parameter x is a ref parameter: pass distsys.Ref, not a value"},
		{"ref for a value", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, noReturnWithValue, Done, Ref("l")) },
			"A.tla:7:5: call V: parameter v is not a ref parameter: pass a value, not ref l"},
		{"unknown ref", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, withRef, Done, Ref("nosuch")) },
			"A.tla:7:5: call R: archetype A has no variable nosuch to pass by ref"},
		{"index mismatch", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, withIndexed, Done, Ref("l")) },
			"A.tla:7:5: call I: ref l has 0 [_] but parameter x has 1"},
		{"invalid value", func(c *Context, e *tla.Eval) (string, error) {
			return c.Call(e, noReturnWithValue, Done, Val(tla.Value{}))
		},
			"A.tla:7:5: call V: argument v is not a valid value"},
		{"nil procedure", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, nil, Done) },
			"A.tla:7:5: archetype A: call of a nil procedure"},
		{"return outside", func(c *Context, e *tla.Eval) (string, error) { return c.Return(e) },
			"A.tla:7:5: archetype A: return outside a procedure"},
		{"tail call outside", func(c *Context, e *tla.Eval) (string, error) { return c.TailCall(e, withRef, Ref("l")) },
			"A.tla:7:5: archetype A: call R followed by return outside a procedure"},
		{"unknown label", func(c *Context, e *tla.Eval) (string, error) { return c.Call(e, badStart, Done) },
			`P.tla:20:3: procedure B has no label "nowhere"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &Archetype{Name: "A", Pos: "A.tla:1:1", Start: "a",
				Locals:   []LocalVar{{Name: "l"}},
				Sections: map[string]Section{"a": {Label: "a", Pos: "A.tla:7:5", Run: tc.run}}}
			c, err := NewContext(a, tla.Int(1))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name == "no return" && !errors.Is(err, ErrNoReturn) {
				t.Fatalf("%v does not match ErrNoReturn", err)
			}
		})
	}
}

var noReturnWithValue = &Procedure{Name: "V", Pos: "P.tla:15:3", Start: "v", Params: []Param{{Name: "v"}},
	Sections: map[string]Section{"v": {Label: "v", Run: func(c *Context, e *tla.Eval) (string, error) { return c.Return(e) }}}}

var badStart = &Procedure{Name: "B", Pos: "P.tla:20:3", Start: "nowhere", Sections: map[string]Section{}}

// TestLocalInitAborts: a procedure local declared x \in S with S empty
// aborts the calling section inside Call; the retry starts without the
// half-made frame.
func TestLocalInitAborts(t *testing.T) {
	empty := 2
	p := &Procedure{Name: "P", Pos: "P.tla:1:1", Start: "p",
		Locals: []LocalVar{{Name: "x", Pos: "P.tla:2:3", Init: func(c *Context, e *tla.Eval) tla.Value {
			if empty > 0 {
				empty--
				return c.Pick(e, tla.Set())
			}
			return c.Pick(e, tla.Set(tla.Int(7)))
		}}},
		Sections: map[string]Section{"p": {Label: "p", Run: func(c *Context, e *tla.Eval) (string, error) {
			if c.Depth() != 1 {
				t.Errorf("depth %d in P, want 1", c.Depth())
			}
			c.Write(e, "y", nil, c.Read(e, "x"))
			return c.Return(e)
		}}}}
	p.Locals = append(p.Locals, LocalVar{Name: "y"})
	var depths []int
	a := &Archetype{Name: "A", Pos: "A.tla:1:1", Start: "a", Sections: map[string]Section{
		"a": {Label: "a", Run: func(c *Context, e *tla.Eval) (string, error) {
			depths = append(depths, c.Depth())
			return c.Call(e, p, Done)
		}}}}
	c, err := NewContext(a, tla.Int(1), fastBackoff())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(depths) != 3 || depths[0]+depths[1]+depths[2] != 0 || c.Aborts() != 2 || c.Depth() != 0 {
		t.Fatalf("depths at a %v, aborts %d, final depth %d", depths, c.Aborts(), c.Depth())
	}
}
