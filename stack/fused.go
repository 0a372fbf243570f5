package stack

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"runtime"
	"strings"
	"sync"
)

// Fused code. The bypass's generic loops call each layer's CCP, Mark and
// Apply through function values, one indirect call per layer and step.
// Ensemble's bypass was machine-generated straight-line code instead, and
// so can Strata's be: for the stacks listed in stack/layers (fusedStacks),
// a generator (`go generate ./stack/layers`) writes, per composed path, a
// Chain whose methods call the layers' methods directly, in the order the
// generic loops call them, so that the compiler inlines the small ones.
// Optimize attaches a Chain to a composed path only if its signature
// (Signature: the layers, their header layouts and the names of their
// functions) is the one the code was generated from; any other stack, or
// a stack whose layers changed since the code was generated, runs the
// generic loops, with the same results (TestFusedCurrent keeps the
// generated code current; the bypass equivalence tests run both).

// Chain is the generated form of one composed path: ranges of its layers'
// functions, called exactly as the bypass's generic loops would call them.
// Each method gets the bypass's scratch frame, which it points at layer i
// (Frame.Enter) before calling layer i's functions.
type Chain interface {
	// CCPDown evaluates the CCPs of layers hi down to lo; it returns the
	// first whose CCP is false, or -1.
	CCPDown(hi, lo int, ev *Event, f *Frame) int
	// ApplyDown runs the Applies of layers hi down to lo.
	ApplyDown(hi, lo int, ev *Event, f *Frame)
	// CCPUp evaluates, for layers lo and up, each CCP and then, unless the
	// layer absorbs, its Mark (the caller restores ev.Seq); it returns the first layer
	// whose CCP is false, or -1 (also when a layer absorbs).
	CCPUp(lo int, ev *Event, f *Frame) int
	// ApplyUp runs the Marks and Applies of layers lo .. hi-1 and reports
	// whether one of them absorbed ev.
	ApplyUp(lo, hi int, ev *Event, f *Frame) bool
}

// MakeChain builds a Chain for a stack's layers (bottom first) and the
// composed path's per-layer paths (for functions the generated code calls
// through the path).
type MakeChain func(layers []Layer, paths []*Path) Chain

var chains = struct {
	sync.Mutex
	m map[string]MakeChain
}{m: map[string]MakeChain{}}

// RegisterChain registers generated code for the composed path whose
// Signature hashes to key (ChainKey). It is called by generated code's
// init functions.
func RegisterChain(key string, mk MakeChain) {
	chains.Lock()
	chains.m[key] = mk
	chains.Unlock()
}

func lookupChain(key string) MakeChain {
	chains.Lock()
	defer chains.Unlock()
	return chains.m[key]
}

// Unfuse detaches the generated code from bp's paths: the generic loops
// run instead (for comparing the two; the results are the same).
func (bp *Bypass) Unfuse() {
	for _, p := range bp.paths {
		if p != nil {
			p.chain = nil
		}
	}
}

// Enter points the frame at layer i of its path (generated code calls it
// before each of layer i's functions, as the generic loops do).
func (f *Frame) Enter(i int) *Frame {
	f.layer = i
	f.V = f.p.vs[i]
	return f
}

// PathFunc describes one function of a layer's path for the generator:
// Method is the name of the layer's method it is (a method value of the
// layer's own type), or "" if it is another function (a closure: generated
// code calls it through the path).
type PathFunc struct {
	Role   string // "CCP", "Mark", "Apply"
	Method string
}

// PathLayer is one layer of a composed path, as the generator sees it.
type PathLayer struct {
	Type   reflect.Type // the layer's type (a pointer)
	Funcs  []PathFunc   // in the order the bypass calls them
	Absorb bool
}

// PathShape is a composed path as the generator sees it.
type PathShape struct {
	Case   Case
	Key    string // ChainKey of its signature
	Layers []PathLayer
}

// Shapes returns the composed paths of the bypass of layers, for the
// generator.
func Shapes(layers []Layer) ([]PathShape, error) {
	bp, err := Optimize(layers)
	if err != nil {
		return nil, err
	}
	var out []PathShape
	for c, p := range bp.paths {
		if p == nil {
			continue
		}
		s := PathShape{Case: Case(c), Key: p.key}
		for i, q := range p.paths {
			pl := PathLayer{Type: reflect.TypeOf(layers[i]), Absorb: q.Absorb}
			for _, fn := range []struct {
				role string
				f    any
			}{{"CCP", q.CCP}, {"Mark", q.Mark}, {"Apply", q.Apply}} {
				if reflect.ValueOf(fn.f).IsNil() {
					continue
				}
				pl.Funcs = append(pl.Funcs, PathFunc{Role: fn.role, Method: methodOf(fn.f, pl.Type)})
			}
			s.Layers = append(s.Layers, pl)
		}
		out = append(out, s)
	}
	return out, nil
}

// funcName is the name the runtime gives a function value.
func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.IsNil() {
		return "-"
	}
	return runtime.FuncForPC(v.Pointer()).Name()
}

// methodOf returns the method name of f if it is a method value of type t
// ("pkg.(*T).name-fm"), else "".
func methodOf(f any, t reflect.Type) string {
	name := funcName(f)
	prefix := t.Elem().PkgPath() + ".(*" + t.Elem().Name() + ")."
	if t.Kind() != reflect.Pointer || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, "-fm") {
		return ""
	}
	m := strings.TrimSuffix(strings.TrimPrefix(name, prefix), "-fm")
	if strings.ContainsAny(m, ".()") {
		return ""
	}
	return m
}

// signature names what generated code for p depends on: the path's id
// (the layers and their header layouts), its case, and each layer's type
// and functions.
func (p *composed) signature(layers []Layer) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%08x/%s", p.id, p.c)
	for i, q := range p.paths {
		fmt.Fprintf(h, "|%s:%s,%s,%s,%v", reflect.TypeOf(layers[i]), funcName(q.CCP), funcName(q.Mark), funcName(q.Apply), q.Absorb)
	}
	return fmt.Sprintf("%08x-%s-%016x", p.id, p.c, h.Sum64())
}
