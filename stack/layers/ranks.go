package layers

import "strata/stack"

// ranks maps a view's members to their ranks and remembers the last
// lookup: the casts of one bundle all come from one peer, and a map lookup
// hashes the whole address string (two layers look up every received
// cast, in their fast path's CCP and again in its update).
type ranks struct {
	m    map[stack.Addr]int
	memo rankMemo // a lookup cache, not protocol state
}

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

// of returns a's rank, and false if a is not a member.
func (k *ranks) of(a stack.Addr) (int, bool) {
	if k.memo.set && a == k.memo.a {
		return k.memo.r, true
	}
	r, ok := k.m[a]
	if ok {
		k.memo = rankMemo{a, r, true}
	}
	return r, ok
}
