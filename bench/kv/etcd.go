package kv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"strata/bench/kit"
	worbench "strata/bench/wor"
	"strata/bench/ycsb"
)

// etcdSystem is the peer: three etcd members started by bench/wor's
// launcher (bench/etcd, v3.6.16, its defaults, fsync on) and, for every
// phase, a process of the YCSB client built from bench/etcd/ycsb (etcd's
// clientv3 driving the generator of bench/ycsb).
type etcdSystem struct {
	cluster  *worbench.EtcdCluster
	client   string // the YCSB client binary
	progress io.Writer
	timeout  string
	// compacted is the revision the last phase compacted to (only the
	// harness's goroutine touches it).
	compacted int64
}

// startEtcd builds the YCSB client (checking it runs this tree's
// generator) and starts the members with their data in dir.
func startEtcd(ctx context.Context, dir string, cfg *Config) (*etcdSystem, error) {
	bin, err := ycsbClient(ctx, cfg.Progress)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", worbench.ErrEtcdStart, err)
	}
	c, err := worbench.StartEtcd(ctx, dir, cfg.Progress)
	if err != nil {
		return nil, err
	}
	return &etcdSystem{cluster: c, client: bin, progress: cfg.Progress, timeout: cfg.OpTimeout.String()}, nil
}

// ycsbClient builds bench/etcd/ycsb (cached in the user cache like every
// peer) and returns its binary. The cache is keyed by that module's own
// files, not by bench/ycsb's, which it imports from the tree: a binary
// whose generator's source hash differs from this one's is stale, and is
// rebuilt.
func ycsbClient(ctx context.Context, progress io.Writer) (string, error) {
	src, err := kit.Module("etcd/ycsb")
	if err != nil {
		return "", err
	}
	want := ycsb.SourceHash()
	for attempt := 0; ; attempt++ {
		dir, err := kit.BuildGo(ctx, src, []string{"."}, progress)
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, "peer")
		out, err := exec.CommandContext(ctx, bin, "-source").Output()
		if err != nil {
			return "", fmt.Errorf("%s -source: %w", bin, err)
		}
		got := strings.TrimSpace(string(out))
		if got == want {
			return bin, nil
		}
		if attempt > 0 {
			return "", fmt.Errorf("the etcd YCSB client built from %s runs generator %s, this binary %s: build this binary from the same tree", src, got, want)
		}
		fmt.Fprintf(progress, "the cached etcd YCSB client was built with another bench/ycsb (%s, this binary has %s): rebuilding\n", got, want)
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
}

func (e *etcdSystem) Name() string { return "etcd" }

// ycsbOutput is the line the YCSB client prints (bench/etcd/ycsb).
type ycsbOutput struct {
	System      string           `json:"system"`
	Source      string           `json:"source"`
	Load        *ycsb.LoadResult `json:"load"`
	Run         *ycsb.Result     `json:"run"`
	Syncs       uint64           `json:"syncs"`
	CompactedTo int64            `json:"compacted_to"`
}

func (e *etcdSystem) client1(ctx context.Context, name string, args ...string) (ycsbOutput, error) {
	var o ycsbOutput
	argv := append([]string{e.client, "-endpoints", strings.Join(e.cluster.Endpoints, ","), "-timeout", e.timeout,
		"-compacted", fmt.Sprint(e.compacted)}, args...)
	out, err := kit.Output(ctx, kit.Cmd{Name: name, Argv: argv, Stderr: e.progress})
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(kit.LastLine(out), &o); err != nil {
		return o, fmt.Errorf("%s: output %q: %w", name, kit.LastLine(out), err)
	}
	if o.Source != ycsb.SourceHash() {
		return o, fmt.Errorf("%s ran generator %s, this binary has %s", name, o.Source, ycsb.SourceHash())
	}
	e.compacted = max(e.compacted, o.CompactedTo)
	return o, nil
}

func (e *etcdSystem) Load(ctx context.Context, lc ycsb.LoadConfig) (ycsb.LoadResult, uint64, error) {
	o, err := e.client1(ctx, "etcd ycsb load", "-phase", "load", "-from", fmt.Sprint(lc.From), "-to", fmt.Sprint(lc.To),
		"-clients", fmt.Sprint(lc.Clients), "-value-size", fmt.Sprint(lc.ValueSize), "-seed", fmt.Sprint(lc.Seed))
	if err != nil {
		return ycsb.LoadResult{}, 0, err
	}
	if o.Load == nil {
		return ycsb.LoadResult{}, 0, fmt.Errorf("etcd ycsb load: no load result")
	}
	return *o.Load, o.Syncs, nil
}

func (e *etcdSystem) Run(ctx context.Context, rc ycsb.RunConfig) (ycsb.Result, uint64, error) {
	o, err := e.client1(ctx, "etcd ycsb "+rc.Workload.Name, "-phase", "run", "-workload", rc.Workload.Name,
		"-records", fmt.Sprint(rc.Records), "-clients", fmt.Sprint(rc.Clients), "-value-size", fmt.Sprint(rc.ValueSize),
		"-warmup", rc.Warmup.String(), "-duration", rc.Measure.String(), "-seed", fmt.Sprint(rc.Seed))
	if err != nil {
		return ycsb.Result{}, 0, err
	}
	if o.Run == nil {
		return ycsb.Result{}, 0, fmt.Errorf("etcd ycsb run: no run result")
	}
	return *o.Run, o.Syncs, nil
}

func (e *etcdSystem) Settings() kit.Settings {
	s := kit.Settings{}
	for k, v := range e.cluster.Settings {
		s[k] = v
	}
	s["client"] = "etcd's clientv3 v3.6.16 in a separate process per phase (bench/etcd/ycsb), one client shared by the phase's goroutines (one request outstanding each, closed loop, no rate limit), all three endpoints"
	s["ycsb"] = "read: Get (linearizable, etcd's default); update and insert: Put; scan: range Get from the start key to \"" + ycsb.KeyPrefixEnd + "\" with a limit; read-modify-write: Get then Put"
	s["compaction"] = "after every load and run phase, outside the measurement: Compact to the current revision, physical (etcd keeps every version until compacted; its auto-compaction is off by default)"
	return s
}

func (e *etcdSystem) Stop() error { return e.cluster.Stop() }
