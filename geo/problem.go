// Package geo plans how one object is deployed across data centers, after
// Pando (Uluyol et al., NSDI 2020, §2–§4): which data sites hold it, how it
// is erasure-coded (k data splits and r parity splits; k = 1 is
// replication), the quorum sizes, and per front-end a delegate for writes.
// It also computes the paper's lower bound (§2.3) and GapVolume (§5.1.1).
//
// Guarantees. Solve returns the exact optimum of the protocol's latency
// model (docs/geo.md, "Latency models") over the candidate sites: no
// heuristic cuts the search, and every returned plan passes Plan.Check,
// which re-derives all constraints and latencies without the search code.
// Among plans with the optimal objective value the one returned is
// arbitrary (no tie-breaking on the other dimensions).
//
// Assumptions. Latencies are the medians of the input matrix, one-way
// delay is half a round trip, there are no conflicts and no failures
// (the common case the paper optimises), processing time is zero, and
// quorums of one type all have the same size (as in Pando). Sites are
// identified by region name; at most 64 candidate sites.
package geo

import (
	"errors"
	"fmt"
	"math"
)

// Protocol names a consensus protocol whose deployment is planned.
type Protocol string

// The protocols.
const (
	Pando      Protocol = "pando"      // §3: erasure coding, small Phase 1, partial delegation
	EPaxos     Protocol = "epaxos"     // §2.3: replication, one-round writes through a replica
	RSPaxos    Protocol = "rspaxos"    // §3.1: erasure coding, two rounds at one quorum size
	MultiPaxos Protocol = "multipaxos" // one leader for every read and write
	LowerBound Protocol = "lowerbound" // §2.3: any fraction of data anywhere, one round
)

// Protocols lists every protocol in display order.
var Protocols = []Protocol{Pando, EPaxos, RSPaxos, MultiPaxos, LowerBound}

// ParseProtocol accepts a protocol name (case-sensitive, as the constants).
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("geo: unknown protocol %q (want pando, epaxos, rspaxos, multipaxos or lowerbound)", s)
}

// Objective is what Solve minimises; the other dimensions are bounded.
type Objective string

// The objectives.
const (
	MinRead    Objective = "read"    // max over front-ends of read latency
	MinWrite   Objective = "write"   // max over front-ends of write latency
	MinStorage Objective = "storage" // storage overhead (bytes stored / object size)
	MinCost    Objective = "cost"    // dollars per month (needs Prices and Workload)
)

// Prices is a cloud price table.
type Prices struct {
	StorageGBMonth float64 `json:"storage_gb_month"` // $ per GB stored per month
	TransferGB     float64 `json:"transfer_gb"`      // $ per GB sent between data centers
	Request        float64 `json:"request"`          // $ per storage request (GET or PUT at one site)
}

// Workload describes one object's use, for MinCost.
type Workload struct {
	ObjectKB       float64 `json:"object_kb"`
	ReadsPerMonth  float64 `json:"reads_per_month"`
	WritesPerMonth float64 `json:"writes_per_month"`
}

// Problem is one planning question.
type Problem struct {
	// Matrix of round trips; nil means Default().
	Matrix *Matrix
	// Access lists the regions whose front-ends read and write the object.
	Access []string
	// Candidates lists the regions that may hold data (and delegates);
	// empty means every "az_" region of the matrix (the paper's 25).
	Candidates []string
	// F is the number of data-center failures to tolerate (0 is allowed).
	F int
	// Bounds: ReadBound and WriteBound in milliseconds on the maximum over
	// front-ends, StorageBound on the storage overhead. Zero means none.
	ReadBound, WriteBound, StorageBound float64
	Objective                           Objective
	Protocol                            Protocol
	// MaxSplits bounds k for the erasure-coded protocols (0 means 6, the
	// paper's formulation's limit).
	MaxSplits int
	// Prices and Workload are used by MinCost (and reported when set).
	Prices   *Prices
	Workload Workload
}

// Sentinel errors.
var (
	// ErrInfeasible: no deployment of this protocol meets the bounds.
	ErrInfeasible = errors.New("geo: no plan meets the bounds")
	// ErrBadProblem: the problem itself is malformed (unknown region, f
	// too big for the candidates, missing prices, ...).
	ErrBadProblem = errors.New("geo: bad problem")
)

// FrontEnd is one front-end's part of a plan.
type FrontEnd struct {
	Name string `json:"name"`
	// Delegate is the data site that runs Phase 2 for Pando (partial
	// delegation, §3.3.2), the replica that leads the write for EPaxos,
	// the site running both phases for RS-Paxos; empty means the
	// front-end itself.
	Delegate string  `json:"delegate,omitempty"`
	ReadMs   float64 `json:"read_ms"`
	WriteMs  float64 `json:"write_ms"`
	// ReadQuorum is the quorum a read (and Pando's Phase 1a) waits for;
	// WriteQuorum the Phase 2 (or write) quorum, as seen by the front-end.
	ReadQuorum  []string `json:"read_quorum"`
	WriteQuorum []string `json:"write_quorum"`
}

// Plan is a deployment. Every field needed to recompute its latencies is
// present: Check(problem) does so.
type Plan struct {
	Protocol Protocol `json:"protocol"`
	F        int      `json:"f"`
	Sites    []string `json:"sites"`
	// K data splits and R parity splits, one split per site (K+R =
	// len(Sites)); replication has K = 1. For the lower bound K and R are
	// 0 and Fractions holds the share of the object stored at each site.
	K         int       `json:"k"`
	R         int       `json:"r"`
	Fractions []float64 `json:"fractions,omitempty"`
	// Quorum sizes: Q1a is the read / Phase 1a quorum (EPaxos: R), Q1b
	// the Phase 1b quorum, Q2 the Phase 2 / write quorum (EPaxos: W).
	Q1a int `json:"q1a"`
	Q1b int `json:"q1b"`
	Q2  int `json:"q2"`
	// Leader is Multi-Paxos's leader.
	Leader    string     `json:"leader,omitempty"`
	FrontEnds []FrontEnd `json:"front_ends"`
	// ReadMs and WriteMs are maxima over front-ends.
	ReadMs       float64 `json:"read_ms"`
	WriteMs      float64 `json:"write_ms"`
	Storage      float64 `json:"storage_overhead"`
	CostPerMonth float64 `json:"cost_per_month,omitempty"`
}

// inst is a Problem resolved to indices with its latency tables.
type inst struct {
	p     Problem
	mtx   *Matrix
	fe    []int // matrix index of each front-end
	cand  []int // matrix index of each candidate site
	m     int
	rd    [][]float64 // rd[F][j] = RTT(front-end F -> candidate j)
	cf    [][]float64 // cf[F][j] = RTT(candidate j -> front-end F)
	cc    [][]float64 // cc[i][j] = RTT(candidate i -> candidate j)
	sb    float64     // storage bound (+Inf if none)
	rb    float64     // read bound (+Inf if none)
	wb    float64     // write bound (+Inf if none)
	kmax  int
	order []int // candidates, nearest to the access set first

	coverCache map[coverKey][]cover
	// decisions already made, per protocol and sizes (see decide)
	memoYes map[memoKey][]witness
	memoNo  map[memoKey][]thr
	lbCache map[string]lbResult
}

func bound(v float64) float64 {
	if v <= 0 {
		return math.Inf(1)
	}
	return v
}

func newInst(p Problem) (*inst, error) {
	in := &inst{p: p, mtx: p.Matrix}
	if in.mtx == nil {
		in.mtx = Default()
	}
	if p.Protocol == "" {
		return nil, fmt.Errorf("%w: no protocol", ErrBadProblem)
	}
	if _, err := ParseProtocol(string(p.Protocol)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadProblem, err)
	}
	switch p.Objective {
	case MinRead, MinWrite, MinStorage:
	case MinCost:
		if p.Prices == nil || p.Workload.ObjectKB <= 0 {
			return nil, fmt.Errorf("%w: the cost objective needs prices and an object size", ErrBadProblem)
		}
		if p.Protocol == LowerBound {
			return nil, fmt.Errorf("%w: the lower bound has no cost model", ErrBadProblem)
		}
	default:
		return nil, fmt.Errorf("%w: unknown objective %q (want read, write, storage or cost)", ErrBadProblem, p.Objective)
	}
	if p.F < 0 {
		return nil, fmt.Errorf("%w: f = %d is negative", ErrBadProblem, p.F)
	}
	if p.ReadBound < 0 || p.WriteBound < 0 || p.StorageBound < 0 || math.IsNaN(p.ReadBound+p.WriteBound+p.StorageBound) {
		return nil, fmt.Errorf("%w: negative bound", ErrBadProblem)
	}
	if p.StorageBound > 0 && p.StorageBound < 1 {
		return nil, fmt.Errorf("%w: storage overhead bound %g is below 1 (no plan stores less than the object)", ErrBadProblem, p.StorageBound)
	}
	if len(p.Access) == 0 {
		return nil, fmt.Errorf("%w: empty access set", ErrBadProblem)
	}
	seen := map[int]bool{}
	for _, a := range p.Access {
		i := in.mtx.Index(a)
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown region %q in the access set", ErrBadProblem, a)
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: region %q twice in the access set", ErrBadProblem, a)
		}
		seen[i] = true
		in.fe = append(in.fe, i)
	}
	cands := p.Candidates
	if len(cands) == 0 {
		cands = AzureRegions(in.mtx)
		if len(cands) == 0 {
			return nil, fmt.Errorf("%w: no candidate sites given and the matrix has no az_ region", ErrBadProblem)
		}
	}
	seen = map[int]bool{}
	for _, c := range cands {
		i := in.mtx.Index(c)
		if i < 0 {
			return nil, fmt.Errorf("%w: unknown candidate region %q", ErrBadProblem, c)
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: candidate %q listed twice", ErrBadProblem, c)
		}
		seen[i] = true
		in.cand = append(in.cand, i)
	}
	in.m = len(in.cand)
	if in.m > 64 {
		return nil, fmt.Errorf("%w: %d candidate sites, at most 64", ErrBadProblem, in.m)
	}
	if 2*p.F+1 > in.m {
		return nil, fmt.Errorf("%w: tolerating f = %d failures needs at least %d candidate sites, have %d", ErrBadProblem, p.F, 2*p.F+1, in.m)
	}
	in.kmax = p.MaxSplits
	if in.kmax == 0 {
		in.kmax = 6
	}
	if in.kmax < 1 {
		return nil, fmt.Errorf("%w: MaxSplits %d", ErrBadProblem, p.MaxSplits)
	}
	in.sb, in.rb, in.wb = bound(p.StorageBound), bound(p.ReadBound), bound(p.WriteBound)
	R := in.mtx.RTT
	in.rd = make([][]float64, len(in.fe))
	in.cf = make([][]float64, len(in.fe))
	for f, a := range in.fe {
		in.rd[f] = make([]float64, in.m)
		in.cf[f] = make([]float64, in.m)
		for j, c := range in.cand {
			in.rd[f][j] = R[a][c]
			in.cf[f][j] = R[c][a]
		}
	}
	in.cc = make([][]float64, in.m)
	for i, a := range in.cand {
		in.cc[i] = make([]float64, in.m)
		for j, c := range in.cand {
			in.cc[i][j] = R[a][c]
		}
	}
	// Search order: candidates by their mean round trip to the access set.
	score := make([]float64, in.m)
	for j := range in.m {
		for f := range in.fe {
			score[j] += math.Min(in.rd[f][j], 1e6)
		}
		in.order = append(in.order, j)
	}
	for i := 1; i < len(in.order); i++ { // insertion sort, stable
		for k := i; k > 0 && score[in.order[k]] < score[in.order[k-1]]; k-- {
			in.order[k], in.order[k-1] = in.order[k-1], in.order[k]
		}
	}
	return in, nil
}
