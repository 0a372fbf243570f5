package geo

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"strata/geo"
)

// Answer is highs_plan.py's output. Latencies and delegates are recomputed
// by the script from the chosen sites and sizes by a direct evaluation of
// the model (not read off the MIP's continuous variables); Objective is
// the MIP's value, EvalObjective the recomputed one.
type Answer struct {
	Status        string    `json:"status"` // "optimal", "infeasible", "time limit", ...
	Objective     float64   `json:"objective"`
	EvalObjective float64   `json:"eval_objective"`
	Sites         []string  `json:"sites"`
	N             int       `json:"n"`
	K             int       `json:"k"`
	R             int       `json:"r"`
	Q1a           int       `json:"q1a"`
	Q1b           int       `json:"q1b"`
	Q2            int       `json:"q2"`
	Delegates     []string  `json:"delegates"`
	ReadMs        []float64 `json:"read_ms"`
	WriteMs       []float64 `json:"write_ms"`
	MaxReadMs     float64   `json:"max_read_ms"`
	MaxWriteMs    float64   `json:"max_write_ms"`
	Storage       float64   `json:"storage"`
	SolveSeconds  float64   `json:"solve_seconds"` // HiGHS's run() alone
	BuildSeconds  float64   `json:"build_seconds"` // building the model in Python
	Nodes         int64     `json:"nodes"`
	MIPGap        float64   `json:"mip_gap"`
	Variables     int       `json:"variables"`
	Constraints   int       `json:"constraints"`
}

// DecodeAnswer reads one JSON answer.
func DecodeAnswer(r io.Reader) (Answer, error) {
	var a Answer
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("bench geo: decoding the HiGHS answer: %w", err)
	}
	if a.Status == "" {
		return Answer{}, fmt.Errorf("bench geo: HiGHS answer without a status")
	}
	return a, nil
}

// Optimal reports whether HiGHS proved its solution optimal.
func (a Answer) Optimal() bool { return a.Status == "optimal" }

// Plan turns an answer with a solution into a geo.Plan for the instance,
// so that geo's Plan.Check can verify it independently.
func (a Answer) Plan(in Instance) (geo.Plan, error) {
	nf := len(in.FrontEnds)
	if len(a.Sites) == 0 || len(a.Delegates) != nf || len(a.ReadMs) != nf || len(a.WriteMs) != nf {
		return geo.Plan{}, fmt.Errorf("bench geo: HiGHS answer (%s) has no complete solution for %d front-ends", a.Status, nf)
	}
	pl := geo.Plan{
		Protocol: in.Protocol, F: in.F, Sites: a.Sites, K: a.K, R: a.R,
		Q1a: a.Q1a, Q1b: a.Q1b, Q2: a.Q2,
		ReadMs: a.MaxReadMs, WriteMs: a.MaxWriteMs, Storage: a.Storage,
	}
	for i, name := range in.FrontEnds {
		pl.FrontEnds = append(pl.FrontEnds, geo.FrontEnd{
			Name: name, Delegate: a.Delegates[i], ReadMs: a.ReadMs[i], WriteMs: a.WriteMs[i],
		})
	}
	return pl, nil
}

// Value is a plan's objective value.
func Value(obj geo.Objective, pl geo.Plan) float64 {
	switch obj {
	case geo.MinRead:
		return pl.ReadMs
	case geo.MinWrite:
		return pl.WriteMs
	case geo.MinStorage:
		return pl.Storage
	case geo.MinCost:
		return pl.CostPerMonth
	}
	return math.NaN()
}

// Same reports whether two objective values are equal: exactly up to
// floating-point noise (both sides evaluate the same sums of the same
// matrix entries).
func Same(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(a))
}

// SameMIP compares a value with a MIP objective, which HiGHS computes with
// its feasibility tolerance (1e-6 relative on big-M rows).
func SameMIP(a, mip float64) bool {
	return math.Abs(a-mip) <= 1e-3*math.Max(1, math.Abs(a))
}
