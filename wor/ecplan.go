package wor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ECPlan is a deployment plan of the ec engine (Pando, NSDI '23, §3.3
// and appendix A): each value is cut into K data splits and R parity
// splits, one per server (K+R servers), and the protocol's three quorum
// kinds have fixed sizes: Q1a (Phase 1a: the fast path of Phase 1 and of
// reads), Q1b (Phase 1b: recovery) and Q2 (Phase 2: accepts). Any
// subset of the servers of the right size is a quorum of that kind.
//
// The JSON field names are those of the geo planner's plans (strata geo
// plan --json), so a plan it printed can be used as it is.
type ECPlan struct {
	K   int `json:"k"`
	R   int `json:"r"`
	Q1a int `json:"q1a"`
	Q1b int `json:"q1b"`
	Q2  int `json:"q2"`
}

// ErrBadPlan matches every *PlanError.
var ErrBadPlan = errors.New("wor: bad ec plan")

// The rules Validate checks, as PlanError.Rule names them. Two subsets
// of sizes x and y of n servers share at least x+y-n of them, and some
// pair shares exactly that many, so each intersection rule is a sum.
const (
	RuleSizes = "1<=k, 0<=r, 1<=sizes<=n<=255" // every size in range (a split's header has one byte for n)
	RuleKRN   = "k+r=n"                        // one split per server
	RuleQ1aK  = "q1a>=k"                       // a Phase 1a quorum holds k splits (one-round reads)
	RuleQ1aQ2 = "q1a+q2>n"                     // Phase 1a ∩ Phase 2 ≥ 1 server
	RuleQ1bQ2 = "q1b+q2>=n+k"                  // Phase 1b ∩ Phase 2 ≥ k servers
	RuleQ2Q2  = "2*q2>=n+k"                    // Phase 2 ∩ Phase 2 ≥ k servers
)

const maxServers = 255

// PlanError is a plan that breaks one of the quorum rules.
type PlanError struct {
	Plan ECPlan
	N    int    // the number of servers it was checked against
	Rule string // one of the Rule constants
}

func (e *PlanError) Error() string {
	p := e.Plan
	return fmt.Sprintf("wor: bad ec plan k=%d r=%d q1a=%d q1b=%d q2=%d for %d servers: breaks rule %s",
		p.K, p.R, p.Q1a, p.Q1b, p.Q2, e.N, e.Rule)
}

// Is makes errors.Is(err, ErrBadPlan) true.
func (e *PlanError) Is(target error) bool { return target == ErrBadPlan }

// Validate checks the plan for n servers against the rules of Pando's
// appendix A, returning a *PlanError naming the first rule broken:
// K+R = n; Q1a ≥ K (a read served by a Phase 1a quorum finds K splits);
// Q1a+Q2 > n (every Phase 1a quorum meets every Phase 2 quorum, so a
// capture whose Phase 1a quorum reports nothing accepted knows nothing
// was chosen); Q1b+Q2 ≥ n+K (a Phase 1b quorum holds K splits of any
// chosen value, enough to rebuild it); 2·Q2 ≥ n+K (two Phase 2 quorums
// share K servers, so a read that sees two ballots' splits can rebuild
// the later one); and every size between 1 and n.
func (p ECPlan) Validate(n int) error {
	bad := func(rule string) error { return &PlanError{Plan: p, N: n, Rule: rule} }
	switch {
	case n < 1 || n > maxServers || p.K < 1 || p.R < 0:
		return bad(RuleSizes)
	case p.K+p.R != n: // before the quorums: a plan for another number of servers
		return bad(RuleKRN)
	case p.Q1a < 1 || p.Q1b < 1 || p.Q2 < 1 || p.Q1a > n || p.Q1b > n || p.Q2 > n:
		return bad(RuleSizes)
	case p.Q1a < p.K:
		return bad(RuleQ1aK)
	case p.Q1a+p.Q2 <= n:
		return bad(RuleQ1aQ2)
	case p.Q1b+p.Q2 < n+p.K:
		return bad(RuleQ1bQ2)
	case 2*p.Q2 < n+p.K:
		return bad(RuleQ2Q2)
	}
	return nil
}

// N is the number of servers the plan is for.
func (p ECPlan) N() int { return p.K + p.R }

// Tolerates is how many servers may be down with Phase 1b and Phase 2
// quorums still available (writes and recovering reads make progress).
func (p ECPlan) Tolerates() int { return p.N() - max(p.Q1b, p.Q2) }

// ECPlanFor returns the plan with k data splits over n servers whose
// Phase 2 quorum is the smallest the rules allow: Q2 = ⌈(n+k)/2⌉, Q1b =
// n+k-Q2, Q1a = max(k, n-Q2+1).
func ECPlanFor(n, k int) (ECPlan, error) {
	q2 := (n + k + 1) / 2
	p := ECPlan{K: k, R: n - k, Q2: q2, Q1b: n + k - q2, Q1a: max(k, n-q2+1)}
	if err := p.Validate(n); err != nil {
		return ECPlan{}, err
	}
	return p, nil
}

// DefaultECPlan returns the plan over n servers that tolerates f of them
// down: K = n-2f data splits, R = 2f parity splits, Q1b = Q2 = n-f and
// Q1a = max(K, f+1) (for f = 1 on five servers: K=3, R=2, Q1a=3,
// Q1b=Q2=4; with n = 2f+1 it is replication with majority quorums).
func DefaultECPlan(n, f int) (ECPlan, error) {
	if f < 0 || n-2*f < 1 {
		return ECPlan{}, fmt.Errorf("%w: %d servers cannot tolerate %d failures with erasure coding (need n ≥ 2f+1)", ErrBadPlan, n, f)
	}
	return ECPlanFor(n, n-2*f)
}

// EngineECPlan is the plan NewEngine gives the ec engine over n servers
// (and a cluster file's ec partition without a plan): DefaultECPlan
// tolerating one server down from three servers on, none below.
func EngineECPlan(n int) (ECPlan, error) {
	f := 0
	if n >= 3 {
		f = 1
	}
	return DefaultECPlan(n, f)
}

// ParseECPlan reads a plan from JSON: an object with the fields k, r,
// q1a, q1b and q2 (other fields are ignored, so a plan printed by strata
// geo plan --json works as it is), or an array of such objects, as geo
// plan prints for several protocols, of which the one whose "protocol"
// is "pando" is taken. It does not validate the plan (that needs the
// number of servers: see Validate).
func ParseECPlan(b []byte) (ECPlan, error) {
	// Its own type: ECPlan's UnmarshalJSON calls this.
	type geoPlan struct {
		Protocol string `json:"protocol"`
		K        int    `json:"k"`
		R        int    `json:"r"`
		Q1a      int    `json:"q1a"`
		Q1b      int    `json:"q1b"`
		Q2       int    `json:"q2"`
	}
	plan := func(g geoPlan) ECPlan { return ECPlan{K: g.K, R: g.R, Q1a: g.Q1a, Q1b: g.Q1b, Q2: g.Q2} }
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var ps []geoPlan
		if err := json.Unmarshal(b, &ps); err != nil {
			return ECPlan{}, fmt.Errorf("wor: ec plan: %w", err)
		}
		for _, p := range ps {
			if p.Protocol == "pando" {
				return plan(p), nil
			}
		}
		return ECPlan{}, fmt.Errorf("%w: a list of %d plans without a pando one", ErrBadPlan, len(ps))
	}
	var p geoPlan
	if err := json.Unmarshal(b, &p); err != nil {
		return ECPlan{}, fmt.Errorf("wor: ec plan: %w", err)
	}
	return plan(p), nil
}

// UnmarshalJSON reads a plan as ParseECPlan does, so that a cluster file
// (whose decoder refuses unknown fields) takes a geo plan pasted whole.
func (p *ECPlan) UnmarshalJSON(b []byte) error {
	got, err := ParseECPlan(b)
	if err != nil {
		return err
	}
	*p = got
	return nil
}
