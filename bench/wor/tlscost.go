package wor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"strata/bench/kit"
	"strata/internal/certs"
	"strata/stack/transport"
)

// TLS cost (`strata bench wor --tls-cost`): WOR writes over TCP, plain
// and with TLS 1.3 (mutual authentication, certificates of one CA made
// for the run), the same cells back to back, alternating which goes
// first by round: write-precaptured (Paxos phase 2 on registers captured
// beforehand, WormPaxos's steady state) through the paxos engine, three
// wormserver processes, the client in this process.

// TLSCostRow is one cell of a TLS cost run: plain and TLS in one round.
type TLSCostRow struct {
	Mode       string
	Clients    int
	Size       int
	Round      int
	Plain, TLS Result
}

// Ratio is TLS throughput over plain (1: TLS costs nothing).
func (r TLSCostRow) Ratio() float64 { return r.TLS.OpsPerSec / r.Plain.OpsPerSec }

// RunTLSCost measures cfg's modes, client counts and first value size,
// cfg.Rounds times. Certificates go to a fresh folder under cfg.Dir.
func RunTLSCost(ctx context.Context, cfg Config) ([]TLSCostRow, error) {
	cfg.Etcd, cfg.Lengths = false, nil
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Strata == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Strata = self
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	tlsDir := filepath.Join(cfg.Dir, "tls")
	if _, err := certs.Init(tlsDir, []string{"127.0.0.1"}); err != nil {
		return nil, err
	}
	tlsCfg, err := certs.Load(certs.Dir(tlsDir))
	if err != nil {
		return nil, err
	}
	var rows []TLSCostRow
	seg := uint64(1 << 20)
	for r := 1; r <= cfg.Rounds; r++ {
		for _, mode := range cfg.Modes {
			for _, cl := range cfg.Clients {
				row := TLSCostRow{Mode: mode, Clients: cl, Size: cfg.Sizes[0], Round: r}
				order := []bool{false, true}
				if r%2 == 0 {
					order = []bool{true, false}
				}
				for _, withTLS := range order {
					seg++
					res, err := tlsCostCell(ctx, cfg, mode, r, withTLS, tlsDir, tlsCfg, Cell{Seg: seg, Op: "write-precaptured", Clients: cl, Size: row.Size,
						Warmup: cfg.Warmup, Measure: cfg.Measure, Precapture: map[bool]int{true: precapturePersistent, false: precaptureMemory}[mode == "persistent"]})
					if err != nil {
						return rows, err
					}
					name := "strata"
					if withTLS {
						name, row.TLS = "strata-tls", res
					} else {
						row.Plain = res
					}
					fmt.Fprintf(cfg.Progress, "round %d %-10s %-10s clients=%-3d %8.0f ops/s p50 %6.0f µs\n", r, name, mode, cl, res.OpsPerSec, res.P50us)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// tlsCostCell starts three fresh tcp wormservers (with TLS or not) and
// measures one cell against them.
func tlsCostCell(ctx context.Context, cfg Config, mode string, round int, withTLS bool, tlsDir string, tlsCfg *tls.Config, cell Cell) (Result, error) {
	var env []string
	var o transport.Options
	name := "plain"
	if withTLS {
		env = []string{"STRATA_TLS_DIR=" + tlsDir}
		o.TLS = tlsCfg
		name = "tls"
	}
	dir := ""
	if mode == "persistent" {
		dir = filepath.Join(cfg.Dir, fmt.Sprintf("%s-r%d-c%d", name, round, cell.Clients))
	}
	srv, err := StartServersOn(ctx, cfg.Strata, 3, dir, "tcp", env)
	if err != nil {
		return Result{}, fmt.Errorf("%s servers did not start: %v", name, firstLine(err))
	}
	defer srv.Stop()
	wc, node, err := DialOn(srv.Addrs, comparedEngine, "tcp", o)
	if err != nil {
		return Result{}, fmt.Errorf("%s client: %w", name, err)
	}
	defer node.Close()
	res, err := Measure(ctx, wc, cell)
	if err != nil {
		return res, errors.Join(fmt.Errorf("%s %s clients=%d: %w", name, mode, cell.Clients, err), errors.New(srv.Tails()))
	}
	res.Engine, res.Mode, res.Round = comparedEngine, mode, round
	return res, nil
}

// TLSCostReport is the run as a report: both sides' settings under
// config, the rows, and per mode and client count the ratio
// "write-throughput tls-cost strata-tls/strata" paired per round (TLS
// over plain: > 1 would mean TLS is faster; the target is >= 0.800).
func TLSCostReport(cfg Config, rows []TLSCostRow) *kit.Report {
	rep := kit.NewReport("wor-tls-cost", kit.Settings{"op": "write-precaptured (paxos phase 2 on registers captured beforehand)",
		"modes": cfg.Modes, "clients": cfg.Clients, "value_bytes": firstSize(cfg), "rounds": cfg.Rounds,
		"warmup": cfg.Warmup.String(), "measure": cfg.Measure.String(), "order": "plain first in odd rounds, TLS first in even ones"})
	common := "3 x strata wor serve on tcp:127.0.0.1 (memory, or persistent with fdatasync), client in the harness, paxos engine"
	rep.System("strata", kit.Settings{"servers": common, "transport": "tcp"})
	rep.System("strata-tls", kit.Settings{"servers": common, "transport": "tcp, TLS 1.3, mutual authentication (ECDSA P-256 certificates of one CA made for the run)"})
	rs := kit.Ratios{}
	for _, r := range rows {
		rs.Higher(fmt.Sprintf("write-throughput tls-cost strata-tls/strata %s clients=%d", r.Mode, r.Clients), r.TLS.OpsPerSec, r.Plain.OpsPerSec)
	}
	rs.Summarize(rep)
	rep.Results = rows
	rep.Note("target (issue 32): TLS costs at most 20%% of WOR write throughput, a ratio of 0.800 or more")
	return rep
}

func firstSize(cfg Config) int {
	if len(cfg.Sizes) == 0 {
		return 0
	}
	return cfg.Sizes[0]
}

// PrintTLSCost prints the rows, then the report's ratios.
func PrintTLSCost(w io.Writer, rep *kit.Report, rows []TLSCostRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tclients\tsize\tround\tstrata ops/s\tstrata-tls ops/s\tstrata p50 µs\tstrata-tls p50 µs\ttls/plain")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.3f\n", r.Mode, r.Clients, r.Size, r.Round, r.Plain.OpsPerSec, r.TLS.OpsPerSec, r.Plain.P50us, r.TLS.P50us, r.Ratio())
	}
	tw.Flush()
	rep.PrintRatios(w)
}
