package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"strata/geo"
	"strata/internal/geolayout"
	"strata/internal/memlimit"
	"strata/kv"
	"strata/wor"
)

// geoUpFlags are strata up's flags for an emulated geo-distributed
// cluster.
type geoUpFlags struct {
	access   string  // --geo: the access set
	planFile string  // --geo-plan: a `strata geo plan --json` output instead of planning
	f        int     // --geo-f
	storage  float64 // --geo-storage
	kvMode   string  // --geo-kv: "keyed" or "wormpaxos"
}

func (g *geoUpFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&g.access, "geo", "", "start an emulated geo-distributed cluster instead: comma-separated regions whose front ends read and write (e.g. az_eastus,az_westeurope,az_southeastasia); the planner places the data (see docs/ec.md)")
	c.Flags().StringVar(&g.planFile, "geo-plan", "", "with --geo: the plan to run (a 'strata geo plan --json' output for that access set) instead of planning one")
	c.Flags().IntVar(&g.f, "geo-f", 1, "with --geo: data-center failures the plan tolerates")
	c.Flags().Float64Var(&g.storage, "geo-storage", 2, "with --geo: bound on the storage overhead (bytes stored per byte of value); the plan minimizes read latency under it")
	c.Flags().StringVar(&g.kvMode, "geo-kv", "keyed", "with --geo: the front ends' kv servers: keyed (Pando's per-key logs: every front end reads and writes on its own, writes delegated as the plan says) or wormpaxos (one replicated log, writes through its leader)")
}

// planGeo plans (or reads) the deployment of an access set.
func planGeo(ctx context.Context, g geoUpFlags) (*geolayout.Layout, error) {
	var access []string
	for _, a := range strings.Split(g.access, ",") {
		if a = strings.TrimSpace(a); a != "" {
			access = append(access, a)
		}
	}
	if len(access) == 0 {
		return nil, errors.New("--geo: name the front ends' regions (strata wan regions lists them)")
	}
	var pl geo.Plan
	if g.planFile != "" {
		b, err := os.ReadFile(g.planFile)
		if err != nil {
			return nil, fmt.Errorf("--geo-plan: %w", err)
		}
		if err := json.Unmarshal(b, &pl); err != nil {
			return nil, fmt.Errorf("--geo-plan %s: not a 'strata geo plan --json' object: %w", g.planFile, err)
		}
		for _, a := range access {
			if !slices.ContainsFunc(pl.FrontEnds, func(fe geo.FrontEnd) bool { return fe.Name == a }) {
				return nil, fmt.Errorf("--geo-plan %s has no front end in %s, a region of --geo", g.planFile, a)
			}
		}
	} else {
		var err error
		pl, err = geo.Solve(ctx, geo.Problem{Access: access, F: g.f, StorageBound: g.storage, Objective: geo.MinRead, Protocol: geo.Pando})
		if err != nil {
			return nil, fmt.Errorf("--geo: planning %s with f=%d and storage <= %g: %w", strings.Join(access, ","), g.f, g.storage, err)
		}
	}
	return geolayout.New(pl, access)
}

// upGeo runs strata up's geo mode: a wormserver per data site of the plan
// (the ec engine with the plan's quorums), a kv server per front end,
// every server on its site's loopback host, the WAN file delaying what
// they send by the latency matrix.
func upGeo(ctx context.Context, cmd *cobra.Command, procs *[]*exec.Cmd, self, dir string, base int, g geoUpFlags) error {
	if f, _ := wanSettings(); f != "" {
		return errors.New("--geo writes its own WAN file: do not give --wan (or STRATA_WAN) with it")
	}
	if g.kvMode != "keyed" && g.kvMode != "wormpaxos" {
		return fmt.Errorf("--geo-kv %q: keyed or wormpaxos", g.kvMode)
	}
	l, err := planGeo(ctx, g)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wanPath, err := filepath.Abs(filepath.Join(dir, "wan.json"))
	if err != nil {
		return err
	}
	if err := l.WriteWAN(wanPath); err != nil {
		return err
	}
	wanFile = wanPath // the servers inherit it (wanChildEnv)
	port := func(p int) int {
		if base == 0 {
			return 0
		}
		return base + p
	}
	var wors []string
	for i, site := range l.Plan.Sites {
		listen := fmt.Sprintf("udp:%s:%d", l.Hosts[site], port(i))
		line, err := startChild(cmd, procs, "listening on ", memlimit.Env(worMemShare), self, "wor", "serve", "--listen", listen, "--dir", filepath.Join(dir, fmt.Sprintf("wor-%d", i+1)))
		if err != nil {
			return fmt.Errorf("wormserver %d (%s): %w", i+1, site, err)
		}
		wors = append(wors, strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
	}
	cfgPath := filepath.Join(dir, "cluster.json")
	cfg := wor.ClusterConfig{Engine: "ec", Plan: &l.EC, Directory: wors, Partitions: [][]string{wors}}
	if err := writeClusterFile(cfgPath, &cfg); err != nil {
		return err
	}
	// Keyed mode: a proposer (strata wor ec-leader) on each data site the
	// plan names as some front end's delegate; the first is also the
	// leader of the leader fallback.
	proposers := map[string]string{}
	var leader string
	if g.kvMode == "keyed" {
		planPath := filepath.Join(dir, "plan.json")
		pb, err := json.MarshalIndent(l.Plan, "", "  ")
		if err == nil {
			err = os.WriteFile(planPath, append(pb, '\n'), 0o644)
		}
		if err != nil {
			return err
		}
		for i, site := range l.Access {
			fe, _ := l.FrontEnd(site)
			d := fe.Delegate
			if d == "" || proposers[d] != "" {
				continue
			}
			listen := fmt.Sprintf("udp:%s:%d", l.Hosts[d], port(200+i))
			line, err := startChild(cmd, procs, "listening on ", memlimit.Env(kvMemShare), self, "wor", "ec-leader", "--engine", "ec", "--plan", planPath, "--listen", listen, "--servers", strings.Join(wors, ","))
			if err != nil {
				return fmt.Errorf("proposer in %s (delegate of %s): %w", d, site, err)
			}
			proposers[d] = strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
			if leader == "" {
				leader = proposers[d]
			}
		}
	}
	var fes []string
	for i, site := range l.Access {
		listen := fmt.Sprintf("udp:%s:%d", l.Hosts[site], port(100+i))
		args := []string{"kv", "serve", "--listen", listen, "--cluster", cfgPath}
		if g.kvMode == "keyed" {
			args = append(args, "--keyed")
			if fe, _ := l.FrontEnd(site); proposers[fe.Delegate] != "" {
				args = append(args, "--ec-delegate", proposers[fe.Delegate])
			}
			if leader != "" {
				args = append(args, "--ec-leader", leader)
			}
		} else {
			args = append(args, "--id", fmt.Sprint(i+1))
		}
		line, err := startChild(cmd, procs, "listening on ", memlimit.Env(kvMemShare), self, args...)
		if err != nil {
			return fmt.Errorf("kv server %d (front end in %s): %w", i+1, site, err)
		}
		fes = append(fes, strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
	}
	kvPath := filepath.Join(dir, "kv.json")
	b, err := json.MarshalIndent(kv.ServersFile{Servers: fes}, "", "  ")
	if err == nil {
		err = os.WriteFile(kvPath, append(b, '\n'), 0o644)
	}
	if err != nil {
		return err
	}
	o := cmd.OutOrStdout()
	p := l.Plan
	fmt.Fprintf(o, "geo plan (%s, f=%d): k=%d data + r=%d parity splits, quorums Phase 1a %d, Phase 1b %d, Phase 2 %d of %d sites; storage overhead %.2f\n",
		p.Protocol, p.F, p.K, p.R, p.Q1a, p.Q1b, p.Q2, len(p.Sites), p.Storage)
	for i, site := range p.Sites {
		fmt.Fprintf(o, "  wormserver %d in %s: %s (split %d; journal %s)\n", i+1, site, wors[i], i, filepath.Join(dir, fmt.Sprintf("wor-%d", i+1)))
	}
	for i, site := range l.Access {
		pred := ""
		if fe, ok := l.FrontEnd(site); ok {
			pred = fmt.Sprintf(" (planner: read %.0f ms, write %.0f ms)", fe.ReadMs, fe.WriteMs)
		}
		via := ""
		if fe, ok := l.FrontEnd(site); ok && proposers[fe.Delegate] != "" {
			via = fmt.Sprintf("; writes delegated to %s in %s", proposers[fe.Delegate], fe.Delegate)
		}
		fmt.Fprintf(o, "  front end in %s: kv server %d at %s%s%s\n", site, i+1, fes[i], pred, via)
	}
	mode := "keyed mode: every front end reads and writes each key's log itself"
	if g.kvMode == "wormpaxos" {
		mode = "WormPaxos: writes go through the leader's front end"
	}
	fmt.Fprintf(o, "emulated WAN: %s (one-way delays: strata wan show --wan %s); cluster file %s (engine ec); kv servers in %s (%s)\n", wanPath, wanPath, cfgPath, kvPath, mode)
	fmt.Fprintf(o, "try (a client next to the front end in %s):\n", l.Access[0])
	fmt.Fprintf(o, "  strata kv put hello world --servers %s\n  strata kv get hello --servers %s\n", fes[0], fes[0])
	fmt.Fprintf(o, "  strata kv status --servers-file %s\n", kvPath)
	fmt.Fprintf(o, "Ctrl-C stops them.\n")
	<-ctx.Done()
	return nil
}
