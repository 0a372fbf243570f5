package layers

import (
	"slices"
	"unsafe"

	"strata/stack"
)

// ranks maps a view's members to their ranks and remembers the last few
// lookups: a map lookup hashes the whole address string, and several
// layers look up every received cast, in their fast path's CCP and again
// in its update. A remembered address is found by comparing strings,
// which costs next to nothing when it is the same string (the transports
// hand over one string per source address, so it is).
type ranks struct {
	m        map[stack.Addr]int
	memo     [rankMemos]rankMemo // a lookup cache, not protocol state
	memoNext int                 // the entry the next miss replaces
}

// rankMemos is how many lookups ranks remembers: a group of a few members
// fits whole.
const rankMemos = 4

type rankMemo struct {
	a   stack.Addr
	r   int
	set bool
}

func newRanks(members []stack.Addr) ranks {
	k := ranks{m: make(map[stack.Addr]int, len(members))}
	for i, a := range members {
		k.m[a] = i
	}
	return k
}

// sameAddr is a == b, recognising the same string (as the transports hand
// over, one per source address) by its pointer, without the call that
// comparing bytes makes.
func sameAddr(a, b stack.Addr) bool {
	return len(a) == len(b) && (unsafe.StringData(string(a)) == unsafe.StringData(string(b)) || a == b)
}

// of returns a's rank, and false if a is not a member.
func (k *ranks) of(a stack.Addr) (int, bool) {
	for i := range k.memo {
		if e := &k.memo[i]; e.set && sameAddr(e.a, a) {
			return e.r, true
		}
	}
	r, ok := k.m[a]
	if ok {
		k.memo[k.memoNext] = rankMemo{a, r, true}
		k.memoNext = (k.memoNext + 1) % rankMemos
	}
	return r, ok
}

// initialView is the view every group layer starts from, until the
// membership layer sends one (EView): Config.Members (ID 1), or just
// Config.Local (a process that starts a group alone, or will join one,
// and is then in no view until gms installs its first). Every layer must
// start from the same view: until 2026-11-27 mnak, stable, mflow and
// total started from Config.Members as given, empty for a process that
// starts a group alone, while gms, elect and suspect started from the
// view of itself; its own casts were then a stranger's at mnak, never
// counted by stable, and mflow stopped the process for good after one
// cast window (a group of one never gets an EView to set it right).
func initialView(cfg stack.Config) *stack.View {
	members := cfg.Members
	if len(members) == 0 {
		members = []stack.Addr{cfg.Local}
	}
	return &stack.View{ID: 1, Members: slices.Clone(members)}
}
