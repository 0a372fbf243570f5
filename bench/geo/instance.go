// Package geo is the geo planner benchmark (`strata bench geo`): it
// compares Strata's planner (package strata/geo) with the same plans
// formulated as mixed integer programs and solved by HiGHS
// (bench/geo/highs_plan.py, PyPI highspy): same instances, same optimum,
// solve times side by side, then (Strata only) the Pando paper's Table 1
// campaign.
//
// The exchange with the Python peer is one JSON Instance on its stdin and
// one JSON Answer on its stdout; the format is documented on the types and
// in bench/geo/highs_plan.py.
package geo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"strata/geo"
)

// Ms is a latency in milliseconds; +Inf (an unmeasured pair) is written as
// JSON null, since JSON has no infinity.
type Ms float64

// MarshalJSON writes null for +Inf and refuses NaN and -Inf.
func (m Ms) MarshalJSON() ([]byte, error) {
	v := float64(m)
	switch {
	case math.IsInf(v, 1):
		return []byte("null"), nil
	case math.IsNaN(v) || math.IsInf(v, -1):
		return nil, fmt.Errorf("bench geo: latency %v has no JSON form", v)
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as +Inf.
func (m *Ms) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*m = Ms(math.Inf(1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("bench geo: latency %s: %w", b, err)
	}
	*m = Ms(v)
	return nil
}

// Instance is one planning question with its latency sub-matrices, the
// input of highs_plan.py. Round trips are in milliseconds; RTT(x, y) is
// for a request issued at x and served at y (the matrix is asymmetric).
type Instance struct {
	Name      string        `json:"name,omitempty"`
	Protocol  geo.Protocol  `json:"protocol"`  // pando, epaxos or rspaxos
	Objective geo.Objective `json:"objective"` // read, write or storage
	F         int           `json:"f"`
	MaxSplits int           `json:"max_splits"`
	// Bounds on the maxima over front-ends (ms) and on the storage
	// overhead; 0 means none, as in geo.Problem.
	ReadBound    float64  `json:"read_bound"`
	WriteBound   float64  `json:"write_bound"`
	StorageBound float64  `json:"storage_bound"`
	FrontEnds    []string `json:"front_ends"`
	Sites        []string `json:"sites"`
	// FeToSite[i][j] = RTT(front-end i -> site j), SiteToFe[i][j] =
	// RTT(site j -> front-end i), SiteToSite[a][b] = RTT(site a -> site b).
	FeToSite   [][]Ms `json:"fe_to_site"`
	SiteToFe   [][]Ms `json:"site_to_fe"`
	SiteToSite [][]Ms `json:"site_to_site"`
	// TimeLimit caps HiGHS's run in seconds (0: none); Threads sets its
	// thread count (0: HiGHS's default).
	TimeLimit float64 `json:"time_limit,omitempty"`
	Threads   int     `json:"threads,omitempty"`
}

// ErrBadInstance is wrapped by every validation error.
var ErrBadInstance = errors.New("bench geo: bad instance")

// NewInstance extracts p's sub-matrices. p.Matrix nil means geo.Default()
// and empty Candidates the Azure regions, as in geo.Solve.
func NewInstance(name string, p geo.Problem) (Instance, error) {
	m := p.Matrix
	if m == nil {
		m = geo.Default()
	}
	cands := p.Candidates
	if len(cands) == 0 {
		cands = geo.AzureRegions(m)
	}
	index := func(what string, names []string) ([]int, error) {
		out := make([]int, len(names))
		for i, s := range names {
			if out[i] = m.Index(s); out[i] < 0 {
				return nil, fmt.Errorf("%w: unknown %s region %q", ErrBadInstance, what, s)
			}
		}
		return out, nil
	}
	fe, err := index("front-end", p.Access)
	if err != nil {
		return Instance{}, err
	}
	cs, err := index("candidate", cands)
	if err != nil {
		return Instance{}, err
	}
	sub := func(rows, cols []int, swap bool) [][]Ms {
		t := make([][]Ms, len(rows))
		for i, a := range rows {
			t[i] = make([]Ms, len(cols))
			for j, b := range cols {
				if swap {
					t[i][j] = Ms(m.RTT[b][a])
				} else {
					t[i][j] = Ms(m.RTT[a][b])
				}
			}
		}
		return t
	}
	in := Instance{
		Name: name, Protocol: p.Protocol, Objective: p.Objective, F: p.F, MaxSplits: p.MaxSplits,
		ReadBound: p.ReadBound, WriteBound: p.WriteBound, StorageBound: p.StorageBound,
		FrontEnds: append([]string(nil), p.Access...), Sites: append([]string(nil), cands...),
		FeToSite: sub(fe, cs, false), SiteToFe: sub(fe, cs, true), SiteToSite: sub(cs, cs, false),
	}
	if in.MaxSplits == 0 {
		in.MaxSplits = 6
	}
	return in, in.Validate()
}

// Validate checks the instance's shape and values.
func (in Instance) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadInstance, fmt.Sprintf(format, a...))
	}
	switch in.Protocol {
	case geo.Pando, geo.EPaxos, geo.RSPaxos:
	default:
		return bad("protocol %q (want pando, epaxos or rspaxos)", in.Protocol)
	}
	switch in.Objective {
	case geo.MinRead, geo.MinWrite, geo.MinStorage:
	default:
		return bad("objective %q (want read, write or storage)", in.Objective)
	}
	if in.F < 0 || in.MaxSplits < 1 {
		return bad("f = %d, max_splits = %d", in.F, in.MaxSplits)
	}
	for _, b := range []float64{in.ReadBound, in.WriteBound, in.StorageBound, in.TimeLimit} {
		if b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
			return bad("bound or time limit %v", b)
		}
	}
	if in.Threads < 0 {
		return bad("threads %d", in.Threads)
	}
	nf, ns := len(in.FrontEnds), len(in.Sites)
	if nf == 0 || ns == 0 {
		return bad("%d front-ends, %d sites", nf, ns)
	}
	if 2*in.F+1 > ns {
		return bad("f = %d needs %d sites, have %d", in.F, 2*in.F+1, ns)
	}
	for _, t := range []struct {
		name       string
		v          [][]Ms
		rows, cols int
	}{{"fe_to_site", in.FeToSite, nf, ns}, {"site_to_fe", in.SiteToFe, nf, ns}, {"site_to_site", in.SiteToSite, ns, ns}} {
		if len(t.v) != t.rows {
			return bad("%s has %d rows, want %d", t.name, len(t.v), t.rows)
		}
		for i, row := range t.v {
			if len(row) != t.cols {
				return bad("%s row %d has %d entries, want %d", t.name, i, len(row), t.cols)
			}
			for _, x := range row {
				if x < 0 || math.IsNaN(float64(x)) {
					return bad("%s row %d: latency %v", t.name, i, float64(x))
				}
			}
		}
	}
	return nil
}

// Finite reports whether every latency is measured (highs_plan.py refuses
// unmeasured pairs).
func (in Instance) Finite() bool {
	for _, t := range [][][]Ms{in.FeToSite, in.SiteToFe, in.SiteToSite} {
		for _, row := range t {
			for _, x := range row {
				if math.IsInf(float64(x), 1) {
					return false
				}
			}
		}
	}
	return true
}

// Encode writes the instance as one JSON object.
func (in Instance) Encode(w io.Writer) error {
	if err := in.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("bench geo: encoding instance %s: %w", in.Name, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// DecodeInstance reads one JSON instance and validates it. Unknown fields
// are an error.
func DecodeInstance(r io.Reader) (Instance, error) {
	d := json.NewDecoder(r)
	d.DisallowUnknownFields()
	var in Instance
	if err := d.Decode(&in); err != nil {
		return Instance{}, fmt.Errorf("%w: %v", ErrBadInstance, err)
	}
	return in, in.Validate()
}

// Matrix rebuilds a matrix holding the instance's regions (front-ends
// first, then sites not already listed) and the sub-matrices' entries;
// pairs the instance does not carry (front-end to front-end) are +Inf.
func (in Instance) Matrix() (*geo.Matrix, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var names []string
	pos := map[string]int{}
	add := func(s string) {
		if _, ok := pos[s]; !ok {
			pos[s] = len(names)
			names = append(names, s)
		}
	}
	for _, s := range in.FrontEnds {
		add(s)
	}
	for _, s := range in.Sites {
		add(s)
	}
	rtt := make([][]float64, len(names))
	for i := range rtt {
		rtt[i] = make([]float64, len(names))
		for j := range rtt[i] {
			if i != j {
				rtt[i][j] = math.Inf(1)
			}
		}
	}
	set := func(a, b string, v Ms) error {
		i, j := pos[a], pos[b]
		old := rtt[i][j]
		if i != j && !math.IsInf(old, 1) && old != float64(v) {
			return fmt.Errorf("%w: RTT(%s, %s) given as both %v and %v", ErrBadInstance, a, b, old, float64(v))
		}
		rtt[i][j] = float64(v)
		return nil
	}
	for i, fe := range in.FrontEnds {
		for j, s := range in.Sites {
			if err := set(fe, s, in.FeToSite[i][j]); err != nil {
				return nil, err
			}
			if err := set(s, fe, in.SiteToFe[i][j]); err != nil {
				return nil, err
			}
		}
	}
	for a, s := range in.Sites {
		for b, t := range in.Sites {
			if err := set(s, t, in.SiteToSite[a][b]); err != nil {
				return nil, err
			}
		}
	}
	m, err := geo.NewMatrix(names, rtt)
	if err != nil {
		return nil, fmt.Errorf("bench geo: instance %s: %w", in.Name, err)
	}
	return m, nil
}

// Problem is the geo.Problem the instance states, over its own matrix
// (Matrix); solving it gives the same optimum as the original problem.
func (in Instance) Problem() (geo.Problem, error) {
	m, err := in.Matrix()
	if err != nil {
		return geo.Problem{}, err
	}
	return geo.Problem{
		Matrix: m, Access: append([]string(nil), in.FrontEnds...), Candidates: append([]string(nil), in.Sites...),
		F: in.F, ReadBound: in.ReadBound, WriteBound: in.WriteBound, StorageBound: in.StorageBound,
		Objective: in.Objective, Protocol: in.Protocol, MaxSplits: in.MaxSplits,
	}, nil
}
