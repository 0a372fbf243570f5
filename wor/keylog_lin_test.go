package wor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Keyed logs under the linearizability campaign: an append reads the
// latest version and proposes the next; a read returns the latest.

type keyIn struct {
	append bool
	value  string
}

type keyOut struct {
	kind  string // "ok" (appended at off), "lost" (another value took off), "value" (read: off, value), "unwritten", "unknown"
	off   uint64
	value string
}

// keyState: how many versions are chosen, and the last one's value.
type keyState struct {
	n    uint64
	last string
}

// keyedLogModel: the state is the log's chosen versions (their count
// and the last value). An append that reports "ok" at version i made its
// value version i, so exactly i versions were chosen before it; "lost"
// changes nothing of its own (the version went to another append); an
// unknown one may have appended at any later time or not at all. A read
// returns the last version.
var keyedLogModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation { return [][]porcupine.Operation{h} },
	Init:      func() []any { return []any{keyState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(keyState), input.(keyIn), output.(keyOut)
		if in.append {
			switch out.kind {
			case "ok":
				if s.n == out.off {
					return []any{keyState{s.n + 1, in.value}}
				}
				return nil
			case "lost":
				return []any{s}
			case "unknown":
				return []any{s, keyState{s.n + 1, in.value}}
			}
			return nil
		}
		switch out.kind {
		case "value":
			if s.n == out.off+1 && s.last == out.value {
				return []any{s}
			}
		case "unwritten":
			if s.n == 0 {
				return []any{s}
			}
		case "unknown":
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(keyIn), output.(keyOut)
		if in.append {
			return fmt.Sprintf("append(%s) -> %s %d %s", in.value, out.kind, out.off, out.value)
		}
		return fmt.Sprintf("latest() -> %s %d %s", out.kind, out.off, out.value)
	},
}

// keyedOp runs one random operation on keyed log seg through engine c:
// a read of the latest version, or an append of value (and, after half
// of the appends that succeed, the collection of the versions below the
// new one, counted in collected).
func keyedOp(c Engine, rng *rand.Rand, seg uint64, value string, collected *int, done func(in, out any)) {
	k := c.(KeyedLog)
	if rng.IntN(2) == 0 {
		k.Latest(seg, func(off uint64, v []byte, err error) {
			switch {
			case err == nil:
				done(keyIn{}, keyOut{kind: "value", off: off, value: string(v)})
			case errors.Is(err, ErrUnwritten):
				done(keyIn{}, keyOut{kind: "unwritten"})
			default:
				done(keyIn{}, keyOut{kind: "unknown"})
			}
		})
		return
	}
	in := keyIn{append: true, value: value}
	k.Latest(seg, func(off uint64, _ []byte, err error) {
		next := off + 1
		switch {
		case errors.Is(err, ErrUnwritten):
			next = 0
		case err != nil:
			done(in, keyOut{kind: "unknown"}) // nothing proposed: "unknown" is weaker, and sound
			return
		}
		c.(Proposer).Propose(Addr(seg, next), []byte(value), func(err error) {
			var we *WrittenError
			switch {
			case err == nil || (errors.As(err, &we) && string(we.Value) == value):
				if rng.IntN(2) == 0 {
					k.TrimBelow(seg, next, func(error) {})
					if collected != nil {
						*collected++ // the simulator runs one event at a time
					}
				}
				done(in, keyOut{kind: "ok", off: next})
			case errors.As(err, &we):
				done(in, keyOut{kind: "lost", off: next, value: string(we.Value)})
			default:
				done(in, keyOut{kind: "unknown"})
			}
		})
	})
}

// checkKeyed checks one keyed log's history: linearizable against
// keyedLogModel, and no version seen with two values.
func checkKeyed(ops []porcupine.Operation) error {
	if !porcupine.CheckOperations(keyedLogModel.ToModel(), ops) {
		return fmt.Errorf("history of %d operations is not linearizable: %v", len(ops), describeWith(keyedLogModel, ops))
	}
	seen := map[uint64]string{}
	for _, op := range ops {
		in, out := op.Input.(keyIn), op.Output.(keyOut)
		v := ""
		switch out.kind {
		case "ok":
			v = in.value
		case "lost", "value":
			v = out.value
		default:
			continue
		}
		if w, ok := seen[out.off]; ok && w != v {
			return fmt.Errorf("two values observed at version %d: %q and %q", out.off, w, v)
		}
		seen[out.off] = v
	}
	return nil
}

// staleLatest is a broken keyed-log reader: it answers with the version
// below the latest (read separately), as a reader that trusted one
// server's old top would.
type staleLatest struct{ *EC }

func (s staleLatest) Latest(seg uint64, cb func(uint64, []byte, error)) {
	s.EC.Latest(seg, func(off uint64, v []byte, err error) {
		if err != nil || off == 0 {
			cb(off, v, err)
			return
		}
		s.EC.Read(Addr(seg, off-1), func(v []byte, err error) { cb(off-1, v, err) })
	})
}

// TestKeyedCampaignCatchesStaleLatest: the keyed-log campaign detects a
// Latest that returns an older version than the latest chosen one.
func TestKeyedCampaignCatchesStaleLatest(t *testing.T) {
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	wrap := func(e Engine) Engine { return staleLatest{e.(*EC)} }
	for seed := range uint64(40) {
		_, err := linRunWith(t, seed, linOpts{engine: "ec", plan: plan, corrupt: -1, keyed: true, wrap: wrap})
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "not linearizable") {
			t.Fatalf("seed %d: not a linearizability violation: %v", seed, err)
		}
		t.Logf("seed %d caught it: %.200s", seed, err)
		return
	}
	t.Fatal("no seed of 40 caught a stale Latest")
}
