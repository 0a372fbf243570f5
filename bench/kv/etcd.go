package kv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
	members  []int         // the members' processes (each leads its process group)
	election time.Duration // the members' election timeout
	probes   int           // probes so far: a probe uses endpoint probes%3 (only the harness's goroutine touches it)
	// compacted is the revision the last phase compacted to (only the
	// harness's goroutine touches it).
	compacted int64
}

// startEtcd builds the YCSB client (checking it runs this tree's
// generator) and starts the members with their data in dir.
func startEtcd(ctx context.Context, dir string, cfg *Config) (*etcdSystem, error) {
	bin, err := YCSBClient(ctx, cfg.Progress)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", worbench.ErrEtcdStart, err)
	}
	c, err := worbench.StartEtcd(ctx, dir, cfg.Progress)
	if err != nil {
		return nil, err
	}
	e := &etcdSystem{cluster: c, client: bin, progress: cfg.Progress, timeout: cfg.OpTimeout.String(), election: time.Second}
	if v, ok := c.Settings["election_ms"].(json.Number); ok {
		if n, err := v.Int64(); err == nil && n > 0 {
			e.election = time.Duration(n) * time.Millisecond
		}
	}
	// The launcher (bench/wor) keeps its members' processes to itself:
	// find them among this process's children by their data folders.
	e.members, err = childProcesses(func(argv []string) bool { return isMember(argv, dir) })
	if err == nil && len(e.members) != 3 {
		err = fmt.Errorf("found %d etcd member processes with data in %s, want 3", len(e.members), dir)
	}
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("%w: %w", worbench.ErrEtcdStart, err)
	}
	return e, nil
}

// isMember says whether argv runs an etcd member (bench/etcd's "member"
// command) with its data in a folder of dir.
func isMember(argv []string, dir string) bool {
	if len(argv) < 2 || argv[1] != "member" {
		return false
	}
	for i, a := range argv[:len(argv)-1] {
		if a == "-dir" && filepath.Dir(filepath.Clean(argv[i+1])) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// YCSBClient builds bench/etcd/ycsb (cached in the user cache like every
// peer) and returns its binary. The cache is keyed by that module's own
// files, not by bench/ycsb's, which it imports from the tree: a binary
// whose generator's source hash differs from this one's is stale, and is
// rebuilt.
func YCSBClient(ctx context.Context, progress io.Writer) (string, error) {
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

// Processes counts the members' processes.
func (e *etcdSystem) Processes() int { return len(e.members) }

// Pause stops the three members (SIGSTOP).
func (e *etcdSystem) Pause(ctx context.Context) error { return stopGroups(ctx, e.members) }

// Resume resumes them (SIGCONT).
func (e *etcdSystem) Resume(ctx context.Context) error { return contGroups(ctx, e.members) }

// Settle is the longest a member waits before it campaigns (etcd's
// randomized election timeout is below twice the configured one). etcd
// counts its election timeout in ticks of its own, so a pause alone does
// not expire it; the same settle rule as Strata's holds anyway.
func (e *etcdSystem) Settle() time.Duration { return 2 * e.election }

// Probe writes probeKey through etcd's gRPC gateway (JSON over HTTP on
// the client URL, etcd's default), reads it back (a linearizable range:
// serializable is false by default) and asks every member for its status:
// all must name the same leader and raft term, which is the view
// returned. The endpoint written to rotates from probe to probe.
func (e *etcdSystem) Probe(ctx context.Context) (string, error) {
	eps := e.cluster.Endpoints
	ep := eps[e.probes%len(eps)]
	e.probes++
	key := base64.StdEncoding.EncodeToString([]byte(probeKey))
	val := base64.StdEncoding.EncodeToString([]byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
	if err := gateway(ctx, ep, "/v3/kv/put", map[string]string{"key": key, "value": val}, nil); err != nil {
		return "", fmt.Errorf("probe write: %w", err)
	}
	var rr struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := gateway(ctx, ep, "/v3/kv/range", map[string]string{"key": key}, &rr); err != nil {
		return "", fmt.Errorf("probe read: %w", err)
	}
	if len(rr.Kvs) != 1 || rr.Kvs[0].Value != val {
		return "", fmt.Errorf("probe read %+v after writing %q", rr.Kvs, val)
	}
	var view string
	for i, ep := range eps {
		var st struct {
			Leader   json.Number `json:"leader"`
			RaftTerm json.Number `json:"raftTerm"`
		}
		if err := gateway(ctx, ep, "/v3/maintenance/status", map[string]string{}, &st); err != nil {
			return "", fmt.Errorf("member n%d status: %w", i+1, err)
		}
		if st.Leader == "" || st.Leader == "0" {
			return "", fmt.Errorf("member n%d knows no leader", i+1)
		}
		v := fmt.Sprintf("leader %s term %s", st.Leader, st.RaftTerm)
		if view != "" && v != view {
			return "", fmt.Errorf("members disagree: %s; member n%d: %s", view, i+1, v)
		}
		view = v
	}
	return view, nil
}

// gateway posts req as JSON to etcd's gRPC gateway at endpoint ep and
// decodes the reply into resp (if not nil).
func gateway(ctx context.Context, ep, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, ep+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(hr)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s%s: %w", ep, path, err)
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", ep, path, r.Status, bytes.TrimSpace(b))
	}
	if resp == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(resp); err != nil {
		return fmt.Errorf("%s%s: reply %q: %w", ep, path, b, err)
	}
	return nil
}

// etcdSyncMetrics are the members' disk syncs: WAL fdatasyncs and
// backend (bbolt) commits, as bench/etcd/ycsb counts them per phase.
var etcdSyncMetrics = []string{"etcd_disk_wal_fsync_duration_seconds_count", "etcd_disk_backend_commit_duration_seconds_count"}

// Syncs are the members' disk syncs so far, from their /metrics pages.
func (e *etcdSystem) Syncs(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, ep := range e.cluster.Endpoints {
		for _, m := range etcdSyncMetrics {
			v, err := kit.ScrapeCounter(ctx, ep+"/metrics", m)
			if err != nil {
				return 0, err
			}
			sum += v
		}
	}
	return sum, nil
}

// Stop resumes the members first, whatever their state (a stopped
// process would hold its SIGTERM until the grace period's SIGKILL), then
// stops them.
func (e *etcdSystem) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	contGroups(ctx, e.members)
	cancel()
	return e.cluster.Stop()
}
