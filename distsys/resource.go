package distsys

import (
	"context"
	"errors"
	"fmt"

	"strata/distsys/tla"
)

// Resource is an archetype resource: the state behind one `ref`
// parameter (or one local variable, or one index of an indexed
// resource). Reads and writes inside a critical section are tentative;
// the section's end decides between PreCommit+Commit and Abort.
//
// Protocol, driven by Context.Run for each section that touched the
// resource: any number of Read and Write calls, then either Abort, or
// PreCommit followed by Commit (when every touched resource's PreCommit
// succeeded) or Abort (when one failed). A Read must see the section's
// own earlier writes.
type Resource interface {
	// Read returns the resource's value as the section sees it. It
	// returns an error matching ErrAborted when the section cannot go on
	// now (nothing to receive) and should be retried later.
	Read(ctx context.Context) (tla.Value, error)
	// Write buffers v as the resource's new value.
	Write(ctx context.Context, v tla.Value) error
	// PreCommit reports whether Commit can succeed; an error matching
	// ErrAborted aborts the section and it is retried; any other error
	// stops the archetype.
	PreCommit(ctx context.Context) error
	// Commit makes the section's effects visible.
	Commit(ctx context.Context) error
	// Abort discards the section's effects.
	Abort()
}

// IndexedResource is the resource behind a `ref x[_]` parameter: x[i] is
// Index(i). A parameter with several [_] is indexed by the tuple of its
// indices. Index must return the same Resource for equal indices within
// a section (the loop commits each touched resource once).
type IndexedResource interface {
	Index(idx tla.Value) (Resource, error)
}

// ErrAborted matches every error that aborts a critical section for a
// retry rather than stopping the archetype.
var ErrAborted = errors.New("distsys: critical section aborted")

// AbortError says why a section aborted (for tracing); errors.Is(err,
// ErrAborted) holds.
type AbortError struct {
	Pos    string // MPCal position of the statement, when known
	Reason string
}

func (e *AbortError) Error() string {
	if e.Pos == "" {
		return "aborted: " + e.Reason
	}
	return e.Pos + ": aborted: " + e.Reason
}

// Is makes errors.Is(err, ErrAborted) true.
func (e *AbortError) Is(target error) bool { return target == ErrAborted }

// AssertionError is a false `assert`.
type AssertionError struct {
	Pos  string // "file:line:col" of the assert
	Expr string // the asserted expression as written
}

func (e *AssertionError) Error() string {
	return fmt.Sprintf("%s: assertion failed: %s", e.Pos, e.Expr)
}

// lastAgent is a resource that can decide a section's outcome alone
// when every other resource the section touched is private (the
// last-agent optimization: see Mailboxes' LastAgent). soleAgent reports
// whether it can this time; commitAlone makes its effects visible and
// returns nil once they are, or an error (matching ErrAborted if nothing
// became visible); Commit afterwards only clears its state.
type lastAgent interface {
	Resource
	soleAgent() bool
	commitAlone(ctx context.Context) error
}

// private is a resource whose effects only its own archetype sees and
// whose PreCommit never refuses, so committing it after a last agent
// has decided cannot be observed out of order.
type private interface{ private() }

func (*Local) private()    {}
func (*mapEntry) private() {}

// Local is an in-memory resource: an archetype's local variable, a value
// parameter, or a `ref` bound to state the archetype alone uses. It is
// not safe for concurrent use (see the package's assumptions).
type Local struct {
	value   tla.Value // committed
	pending tla.Value // written in the current section, if dirty
	dirty   bool
}

// NewLocal returns a local resource holding v.
func NewLocal(v tla.Value) *Local { return &Local{value: v} }

// Value returns the committed value (for tests and hand-written code
// between runs).
func (l *Local) Value() tla.Value { return l.value }

func (l *Local) Read(context.Context) (tla.Value, error) {
	if l.dirty {
		return l.pending, nil
	}
	return l.value, nil
}

func (l *Local) Write(_ context.Context, v tla.Value) error {
	l.pending, l.dirty = v, true
	return nil
}

func (l *Local) PreCommit(context.Context) error { return nil }

func (l *Local) Commit(context.Context) error {
	if l.dirty {
		l.value, l.pending, l.dirty = l.pending, tla.Value{}, false
	}
	return nil
}

func (l *Local) Abort() { l.pending, l.dirty = tla.Value{}, false }

// LocalMap is an indexed in-memory resource (`ref x[_]` over a function
// the archetype alone uses): Index(i) reads and writes f[i]. Like Local
// it belongs to one archetype.
type LocalMap struct {
	f       tla.Value
	entries map[string]*mapEntry // by the index's encoding; entries touched in this section
}

type mapEntry struct {
	m       *LocalMap
	key     tla.Value
	pending tla.Value
	dirty   bool
}

// NewLocalMap returns an indexed resource over the function f.
func NewLocalMap(f tla.Value) *LocalMap { return &LocalMap{f: f, entries: map[string]*mapEntry{}} }

// Value returns the committed function.
func (m *LocalMap) Value() tla.Value { return m.f }

func (m *LocalMap) Index(idx tla.Value) (Resource, error) {
	b, err := idx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if e, ok := m.entries[string(b)]; ok {
		return e, nil
	}
	e := &mapEntry{m: m, key: idx}
	m.entries[string(b)] = e
	return e, nil
}

func (e *mapEntry) Read(context.Context) (tla.Value, error) {
	if e.dirty {
		return e.pending, nil
	}
	return tla.Apply(e.m.f, e.key)
}

func (e *mapEntry) Write(_ context.Context, v tla.Value) error {
	e.pending, e.dirty = v, true
	return nil
}

func (e *mapEntry) PreCommit(context.Context) error { return nil }

func (e *mapEntry) Commit(context.Context) error {
	if e.dirty {
		f, err := tla.Except(e.m.f, []tla.Value{e.key}, e.pending)
		if err != nil {
			return err
		}
		e.m.f = f
		e.dirty = false
	}
	return nil
}

func (e *mapEntry) Abort() { e.pending, e.dirty = tla.Value{}, false }
