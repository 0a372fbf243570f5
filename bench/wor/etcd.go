package wor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"strata/bench/kit"
	"strata/internal/freeport"
)

// EtcdCluster is three etcd members on loopback, one process each, run by
// the peer binary built from bench/etcd (go.etcd.io/etcd v3.6.16 embedded,
// etcd's defaults, fsync on). Benchmarks that compare Strata with a
// durable consensus store start it with StartEtcd, drive it with Run and
// end it with Stop.
type EtcdCluster struct {
	// Endpoints are the members' client URLs (gRPC over TCP on loopback).
	Endpoints []string
	// Settings are the effective settings member n1 printed on its ready
	// line (read back from the running server), plus the cluster's shape:
	// the report prints them as etcd's config.
	Settings kit.Settings
	bin      string
	procs    []*kit.Proc
}

// ErrEtcdStart wraps every failure to build or start the etcd peer.
var ErrEtcdStart = errors.New("etcd peer did not start")

// StartEtcd builds the peer (cached after the first build, which takes
// minutes) and starts three members with their data in dir (emptied
// first). Progress lines go to progress.
func StartEtcd(ctx context.Context, dir string, progress io.Writer) (*EtcdCluster, error) {
	c, err := startEtcd(ctx, dir, progress)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEtcdStart, err)
	}
	return c, nil
}

func startEtcd(ctx context.Context, dir string, progress io.Writer) (*EtcdCluster, error) {
	src, err := kit.Module("etcd")
	if err != nil {
		return nil, err
	}
	binDir, err := kit.BuildGo(ctx, src, []string{"."}, progress)
	if err != nil {
		return nil, err
	}
	c := &EtcdCluster{bin: filepath.Join(binDir, "peer")}
	ports, err := freeport.TCP(6)
	if err != nil {
		return nil, err
	}
	var cluster []string
	for i := range 3 {
		cluster = append(cluster, fmt.Sprintf("n%d=http://127.0.0.1:%d", i+1, ports[3+i]))
		c.Endpoints = append(c.Endpoints, fmt.Sprintf("http://127.0.0.1:%d", ports[i]))
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	// The members start together: none is ready before a leader is
	// elected, which takes two of them.
	procs := make([]*kit.Proc, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = kit.Start(ctx, kit.Cmd{
				Name: fmt.Sprintf("etcd member n%d", i+1),
				Argv: []string{c.bin, "member", "-name", fmt.Sprintf("n%d", i+1),
					"-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "-client-port", fmt.Sprint(ports[i]),
					"-peer-port", fmt.Sprint(ports[3+i]), "-cluster", strings.Join(cluster, ",")},
				Ready:        func(line string) bool { return strings.HasPrefix(line, "ready ") },
				ReadyTimeout: 90 * time.Second,
				Grace:        10 * time.Second,
			})
		}()
	}
	wg.Wait()
	for _, p := range procs {
		if p != nil {
			c.procs = append(c.procs, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, err
	}
	set := kit.Settings{}
	dec := json.NewDecoder(strings.NewReader(strings.TrimPrefix(procs[0].Ready, "ready ")))
	dec.UseNumber() // 1572864, not 1.572864e+06
	if err := dec.Decode(&set); err != nil {
		c.Stop()
		return nil, fmt.Errorf("etcd member n1's ready line %q: %w", procs[0].Ready, err)
	}
	// The comparison is with a durable store: refuse to measure one that
	// skips fsync, whatever bench/etcd/member.go says.
	if set["unsafe_no_fsync"] != false {
		c.Stop()
		return nil, fmt.Errorf("etcd member n1 runs with unsafe_no_fsync=%v", set["unsafe_no_fsync"])
	}
	set["members"] = "3 processes (embed.StartEtcd), 127.0.0.1, data in " + dir
	set["transport"] = "gRPC over TCP loopback (etcd's own client, clientv3, all three endpoints, its default round-robin balancer; a follower forwards a write to the leader)"
	set["durability"] = "WAL fdatasync before a raft entry is acknowledged (etcd's default; unsafe_no_fsync=false checked on the running member)"
	c.Settings = set
	return c, nil
}

// EtcdLoad is one measurement of the etcd cluster by the peer's bench:
// Clients goroutines sharing one clientv3 client, one request outstanding
// each, no rate limit.
type EtcdLoad struct {
	Op      string // "create" (create-if-absent transaction on a fresh key) or "get" (linearizable)
	Clients int
	Size    int // value bytes
	Warmup  time.Duration
	Measure time.Duration
	Prefix  string // key prefix, fresh per load
}

// EtcdResult is what the peer's bench prints: throughput and nearest-rank
// latency percentiles of the operations that started in the measured
// window and ended before its end (as Measure counts Strata's).
type EtcdResult struct {
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Size      int     `json:"size"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	OpsTotal  int     `json:"ops_total"`
	// Syncs are the members' disk syncs (WAL fdatasyncs and backend
	// commits) from the start of the warm-up to the end of the last
	// operation, from their /metrics.
	Syncs uint64 `json:"syncs"`
}

// Run runs one load with the peer's bench client, a process of its own.
func (c *EtcdCluster) Run(ctx context.Context, l EtcdLoad) (EtcdResult, error) {
	out, err := kit.Output(ctx, kit.Cmd{
		Name: "etcd bench " + l.Op,
		Argv: []string{c.bin, "bench", "-endpoints", strings.Join(c.Endpoints, ","), "-op", l.Op,
			"-clients", fmt.Sprint(l.Clients), "-size", fmt.Sprint(l.Size),
			"-warmup", l.Warmup.String(), "-duration", l.Measure.String(), "-prefix", l.Prefix},
	})
	var r EtcdResult
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(kit.LastLine(out), &r); err != nil {
		return r, fmt.Errorf("etcd bench output %q: %w", out, err)
	}
	return r, nil
}

// Stop stops the members (SIGTERM, then their process groups are killed).
func (c *EtcdCluster) Stop() error {
	var errs []error
	for _, p := range c.procs {
		errs = append(errs, p.Stop())
	}
	return errors.Join(errs...)
}
