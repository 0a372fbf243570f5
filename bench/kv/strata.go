package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"strata/bench/kit"
	"strata/bench/ycsb"
	"strata/internal/freeport"
	"strata/internal/memlimit"
	kvs "strata/kv"
	"strata/smr"
	"strata/stack"
	"strata/wor"
)

// Ready lines of the Strata server commands.
const (
	worReady = "listening on "
	kvReady  = "listening on "
)

// strataSystem is Strata's side: three persistent wormservers and three
// key-value servers over them, one process each, as `strata up` runs
// them, and a kv.Client in the harness process.
type strataSystem struct {
	bin      string
	dir      string
	blocks   uint64
	progress io.Writer

	wor     []*kit.Proc
	metrics []string // the wormservers' Prometheus pages

	// kvMu guards kv: the failover trial replaces a killed server's
	// process.
	kvMu    sync.Mutex
	kv      []*kit.Proc
	kvAddrs []string   // "udp:127.0.0.1:PORT", fixed for restarts
	kvArgv  [][]string // each server's command line, for restarts

	client *kvs.Client
}

// startStrata starts the wormservers and the kv servers with their data
// in dir (emptied first) and dials them.
func startStrata(ctx context.Context, dir string, cfg *Config) (_ *strataSystem, err error) {
	s := &strataSystem{bin: cfg.Strata, dir: dir, blocks: cfg.journalBlocks(), progress: cfg.Progress}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freeport.TCP(3)
	if err != nil {
		return nil, err
	}
	var worAddrs []string
	for i := range 3 {
		m := fmt.Sprintf("127.0.0.1:%d", ports[i])
		p, err := kit.Start(ctx, kit.Cmd{
			Name: fmt.Sprintf("wormserver %d", i+1),
			Argv: []string{s.bin, "wor", "serve", "--listen", "udp:127.0.0.1:0", "--dir", filepath.Join(dir, fmt.Sprintf("wor-%d", i+1)),
				"--blocks", fmt.Sprint(s.blocks), "--metrics", m},
			Env:          memlimit.Env(worMemShare),
			Ready:        func(line string) bool { return strings.HasPrefix(line, worReady) },
			ReadyTimeout: 5 * time.Minute, // a new journal of many blocks is allocated first
		})
		if err != nil {
			return nil, err
		}
		s.wor = append(s.wor, p)
		s.metrics = append(s.metrics, "http://"+m+"/metrics")
		worAddrs = append(worAddrs, strings.TrimSpace(strings.TrimPrefix(p.Ready, worReady)))
	}
	clusterFile := filepath.Join(dir, "cluster.json")
	b, err := json.MarshalIndent(wor.ClusterConfig{Engine: "paxos", Directory: worAddrs, Partitions: [][]string{worAddrs}}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(clusterFile, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	// Fixed ports, so that a restarted server comes back where the
	// others and the clients look for it.
	kvPorts, err := freeport.TCP(3)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		addr := fmt.Sprintf("udp:127.0.0.1:%d", kvPorts[i])
		s.kvAddrs = append(s.kvAddrs, addr)
		s.kvArgv = append(s.kvArgv, []string{s.bin, "kv", "serve", "--listen", addr, "--cluster", clusterFile, "--id", fmt.Sprint(i + 1)})
	}
	s.kv = make([]*kit.Proc, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.kv[i], errs[i] = s.startKV(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.client, err = kvs.Dial(s.kvAddrs, kvs.ClientConfig{}); err != nil {
		return nil, err
	}
	return s, nil
}

// Memory shares of the servers (internal/memlimit), as "strata up" gives
// them: a kv server keeps its whole state in memory, a wormserver every
// live register's value (the log since the last snapshot and the
// snapshots' chunks). Each alone would take a quarter of the machine: six
// of them, loaded with a million records, outgrew it; with a sixteenth
// each, the wormservers sat at their limit at 800,000 records.
const (
	kvMemShare  = 1.0 / 8
	worMemShare = 1.0 / 8
)

// memShare describes a memory share as the servers get it.
func memShare(f float64) string {
	if env := memlimit.Env(f); len(env) > 0 {
		return strings.TrimPrefix(env[0], "GOMEMLIMIT=") + " bytes"
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return v + " (GOMEMLIMIT inherited)"
	}
	return "a quarter of the memory"
}

// startKV starts kv server i (0-based) and waits until it serves.
func (s *strataSystem) startKV(ctx context.Context, i int) (*kit.Proc, error) {
	return kit.Start(ctx, kit.Cmd{
		Name:         fmt.Sprintf("kv server %d", i+1),
		Argv:         s.kvArgv[i],
		Env:          memlimit.Env(kvMemShare),
		Ready:        func(line string) bool { return strings.HasPrefix(line, kvReady) },
		ReadyTimeout: 10 * time.Minute, // a restart catches up from a snapshot first
	})
}

func (s *strataSystem) Name() string { return "strata" }

// syncs sums the wormservers' journal barriers so far.
func (s *strataSystem) syncs(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, u := range s.metrics {
		v, err := kit.ScrapeCounter(ctx, u, "strata_wor_journal_barriers_total")
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// withSyncs runs f and returns the journal barriers the wormservers
// issued meanwhile (0 if they could not be read: a note says so).
func (s *strataSystem) withSyncs(ctx context.Context, f func() error) (uint64, error) {
	s0, err0 := s.syncs(ctx)
	if err := f(); err != nil {
		return 0, err
	}
	s1, err1 := s.syncs(ctx)
	if err := errors.Join(err0, err1); err != nil {
		fmt.Fprintf(s.progress, "strata: journal barriers not counted: %v\n", err)
		return 0, nil
	}
	return s1 - s0, nil
}

func (s *strataSystem) Load(ctx context.Context, lc ycsb.LoadConfig) (ycsb.LoadResult, uint64, error) {
	var lr ycsb.LoadResult
	lc.Progress = func(done, total int64) { fmt.Fprintf(s.progress, "strata load: %d of %d records\n", done, total) }
	syncs, err := s.withSyncs(ctx, func() error {
		var err error
		lr, err = ycsb.Load(ctx, kvDB{s.client}, lc)
		return err
	})
	return lr, syncs, err
}

func (s *strataSystem) Run(ctx context.Context, rc ycsb.RunConfig) (ycsb.Result, uint64, error) {
	var res ycsb.Result
	syncs, err := s.withSyncs(ctx, func() error {
		var err error
		res, err = ycsb.Run(ctx, kvDB{s.client}, rc)
		return err
	})
	return res, syncs, err
}

func (s *strataSystem) Settings() kit.Settings {
	return kit.Settings{
		"version":     kit.StrataVersion(),
		"wormservers": fmt.Sprintf("3 `%s wor serve` processes (UDP on 127.0.0.1), persistent: a journal per server (%s/wor-N/wor.img, %d blocks of 4 KiB) on the same file system as etcd's data; a reply leaves only after a journal flush ending in fdatasync", filepath.Base(s.bin), s.dir, s.blocks),
		"kv servers":  fmt.Sprintf("3 `%s kv serve --cluster %s/cluster.json --id N` processes (UDP on 127.0.0.1), as `strata up` runs them: WormPaxos over the wormservers (log, snapshots and trims in write-once registers), kv defaults", filepath.Base(s.bin), s.dir),
		"replica": fmt.Sprintf("smr defaults (kv serve sets none): segments of %d registers, a snapshot every %d commands, heartbeat %v, election timeout %v, entries up to %d bytes, %d log writes in flight; wormserver request timeout 1s (kv serve's default)",
			smr.DefaultSegmentSize, smr.DefaultSnapshotEvery, smr.DefaultHeartbeat, smr.DefaultElectionTimeout, smr.DefaultMaxEntry, smr.DefaultPipeline),
		"failover": "a client of the two other servers writes one key after another (1 KiB values); the kv leader's process gets SIGKILL; failover = kill to completion of the first write issued after it; then the process restarts with the same address and id: recovery = restart to ready (it catches up from the snapshot and the log before serving) and to applying the leader's revision of the restart",
		"memory": fmt.Sprintf("GOGC=400 (strata's default); soft memory limit (GOMEMLIMIT) %s per kv server, %s per wormserver, as `strata up` gives them",
			memShare(kvMemShare), memShare(worMemShare)),
		"durability": "a write is acknowledged once its log register is written at a majority of wormservers, each durable (fdatasync) before it replies",
		"client":     "one kv.Client in the harness process (its own UDP socket, stack " + kvs.Props + ", all three servers; it starts at a random one and, once a forwarded write's reply names the leader, sends every request to the leader; a follower forwards writes to the leader), N goroutines, one request outstanding each (closed loop), no rate limit",
		"ycsb":       "read: Get (linearizable, the default); update and insert: Put; scan: Scan from the start key to \"" + ycsb.KeyPrefixEnd + "\" with a limit (linearizable); read-modify-write: Get then Put",
	}
}

// pids are the servers' processes: the kv servers first, then the
// wormservers, the order they are stopped in (a kv server is never left
// running against stopped wormservers); they are resumed in reverse.
func (s *strataSystem) pids() []int {
	var out []int
	for _, p := range s.procs() {
		out = append(out, p.Pid())
	}
	return out
}

// procs are the servers' processes in that order.
func (s *strataSystem) procs() []*kit.Proc {
	var out []*kit.Proc
	s.kvMu.Lock()
	for _, p := range s.kv {
		if p != nil {
			out = append(out, p)
		}
	}
	s.kvMu.Unlock()
	return append(out, s.wor...)
}

// Processes counts the servers' processes.
func (s *strataSystem) Processes() int { return len(s.pids()) }

// Pause stops all six servers (SIGSTOP).
func (s *strataSystem) Pause(ctx context.Context) error { return stopGroups(ctx, s.pids()) }

// Resume resumes them (SIGCONT), wormservers first.
func (s *strataSystem) Resume(ctx context.Context) error {
	p := s.pids()
	slices.Reverse(p)
	return contGroups(ctx, p)
}

// probeKey is the key a health probe writes, outside YCSB's key space.
const probeKey = "bench-health"

// Probe writes probeKey, reads it back (linearizable Get) and asks every
// kv server for its view of the group: all must name the same leader and
// epoch, which is the view returned.
func (s *strataSystem) Probe(ctx context.Context) (string, error) {
	val := []byte(strconv.FormatInt(time.Now().UnixNano(), 10))
	if _, err := s.client.Put(ctx, probeKey, val); err != nil {
		return "", fmt.Errorf("probe write: %w", err)
	}
	kv, err := s.client.Get(ctx, probeKey)
	if err != nil {
		return "", fmt.Errorf("probe read: %w", err)
	}
	if !bytes.Equal(kv.Value, val) {
		return "", fmt.Errorf("probe read %q after writing %q", kv.Value, val)
	}
	var view string
	for i, a := range s.kvAddrs {
		st, err := s.client.Status(ctx, stack.Addr(a))
		if err != nil {
			return "", fmt.Errorf("kv server %d status: %w", i+1, err)
		}
		if st.Leader == "" {
			return "", fmt.Errorf("kv server %d knows no leader", i+1)
		}
		v := fmt.Sprintf("leader %d (%s) epoch %d", st.LeaderID, st.Leader, st.Epoch)
		if view != "" && v != view {
			return "", fmt.Errorf("kv servers disagree: %s; kv server %d: %s", view, i+1, v)
		}
		view = v
	}
	return view, nil
}

// Settle is the longest a follower waits on a still log before it
// campaigns (twice the election timeout): after a resume, a follower
// that saw the leader's silence by wall time campaigns at once.
func (s *strataSystem) Settle() time.Duration { return 2 * smr.DefaultElectionTimeout }

// Syncs are the wormservers' journal barriers so far.
func (s *strataSystem) Syncs(ctx context.Context) (uint64, error) { return s.syncs(ctx) }

// Stop resumes the servers first, whatever their state (a stopped
// process would hold its SIGTERM until the grace period's SIGKILL), then
// stops them.
func (s *strataSystem) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	p := s.pids()
	slices.Reverse(p)
	contGroups(ctx, p)
	cancel()
	if s.client != nil {
		s.client.Close()
	}
	var errs []error
	for _, p := range s.procs() {
		errs = append(errs, p.Stop())
	}
	return errors.Join(errs...)
}

// kvDB is YCSB's DB on Strata's key-value service: a record is a key
// whose value is the record's one field.
type kvDB struct{ c *kvs.Client }

func (d kvDB) Read(ctx context.Context, key string) ([]byte, error) {
	kv, err := d.c.Get(ctx, key)
	if errors.Is(err, kvs.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ycsb.ErrNotFound, err)
	}
	return kv.Value, err
}

func (d kvDB) Update(ctx context.Context, key string, value []byte) error {
	_, err := d.c.Put(ctx, key, value)
	return err
}

func (d kvDB) Insert(ctx context.Context, key string, value []byte) error {
	_, err := d.c.Put(ctx, key, value)
	return err
}

func (d kvDB) Scan(ctx context.Context, start string, n int) (int, error) {
	kvs, _, err := d.c.Scan(ctx, start, ycsb.KeyPrefixEnd, n)
	return len(kvs), err
}

func (d kvDB) ReadModifyWrite(ctx context.Context, key string, value []byte) ([]byte, error) {
	v, err := d.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	return v, d.Update(ctx, key, value)
}

// Failover is one failover trial: the kv leader's process killed with
// SIGKILL while a client writes.
type Failover struct {
	Records    int64  `json:"records"`
	Killed     int    `json:"killed_server"` // 1-based
	NewLeader  string `json:"new_leader"`
	WritesPre  int    `json:"writes_before"`
	WritesPost int    `json:"writes_after"`
	// FailoverMs is the time from the kill to the completion of the first
	// write the client issued after it (applied by the new leader: the
	// old one was dead when it was sent).
	FailoverMs float64 `json:"failover_ms"`
	// GapMs is the longest the client waited between two completed
	// writes around the kill.
	GapMs float64 `json:"gap_ms"`
}

// Recovery is a killed server's restart: from the new process's start
// to its ready line (it caught up from the snapshot and the log before
// it serves) and to applying the leader's revision at the restart.
type Recovery struct {
	Records     int64   `json:"records"`
	Server      int     `json:"server"`
	Revision    uint64  `json:"revision"` // the leader's when the server restarted
	ReadyMs     float64 `json:"ready_ms"`
	CaughtUpMs  float64 `json:"caught_up_ms"`
	AppliedThen uint64  `json:"applied"` // the restarted server's revision when caught up
}

// leader returns the index of the server the others name as leader,
// asking every server but exclude (-1: none) and passing over a view
// that names it (a survivor that has not yet learned that a killed
// leader was replaced still names it).
func (s *strataSystem) leader(ctx context.Context, exclude int) (int, string, error) {
	var errs []error
	for j, a := range s.kvAddrs {
		if j == exclude {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := s.client.Status(ctx, stack.Addr(a))
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Leader == "" {
			continue
		}
		i := slices.IndexFunc(s.kvAddrs, func(b string) bool { return sameAddr(st.Leader, b) })
		switch {
		case i < 0:
			return -1, "", fmt.Errorf("the leader %q is none of the servers %v", st.Leader, s.kvAddrs)
		case i == exclude:
			errs = append(errs, fmt.Errorf("kv server %d names kv server %d", j+1, i+1))
			continue
		}
		return i, st.Leader, nil
	}
	return -1, "", fmt.Errorf("no server knows a leader: %w", errors.Join(errs...))
}

// sameAddr compares two server addresses with or without the transport
// prefix.
func sameAddr(a, b string) bool {
	strip := func(s string) string {
		if k, rest, ok := strings.Cut(s, ":"); ok && (k == "udp" || k == "tcp") {
			return rest
		}
		return s
	}
	return strip(a) == strip(b)
}

// failover kills the leader's process while a client of the two other
// servers writes one key after another, measures how long the writes
// stop, then restarts the killed server and measures its recovery.
func (s *strataSystem) failover(ctx context.Context, records int64, valueSize int) (Failover, Recovery, error) {
	fo := Failover{Records: records}
	rec := Recovery{Records: records}
	li, _, err := s.leader(ctx, -1)
	if err != nil {
		return fo, rec, err
	}
	fo.Killed, rec.Server = li+1, li+1
	var others []string
	for i, a := range s.kvAddrs {
		if i != li {
			others = append(others, a)
		}
	}
	// The writer speaks to the surviving servers only, so that what is
	// measured is the service's failover, not a client's timeout on a
	// dead server.
	wc, err := kvs.Dial(others, kvs.ClientConfig{})
	if err != nil {
		return fo, rec, err
	}
	defer wc.Close()
	value := make([]byte, valueSize)
	type done struct {
		issued, completed time.Time
	}
	var (
		mu     sync.Mutex
		writes []done // guarded by mu
		werr   error  // guarded by mu: why the writer stopped early
	)
	wctx, stopWriter := context.WithCancel(ctx)
	wdone := make(chan struct{}) // closed when the writer returns
	go func() {
		defer close(wdone)
		for i := 0; wctx.Err() == nil; i++ {
			t0 := time.Now()
			octx, cancel := context.WithTimeout(wctx, time.Minute)
			_, err := wc.Put(octx, fmt.Sprintf("bench-failover/%d", i), value)
			cancel()
			mu.Lock()
			if err == nil {
				writes = append(writes, done{t0, time.Now()})
			} else if wctx.Err() == nil {
				werr = fmt.Errorf("write %d during the failover: %w", i, err)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	stop := func() error {
		stopWriter()
		<-wdone
		mu.Lock()
		defer mu.Unlock()
		return werr
	}
	time.Sleep(time.Second) // steady writes before the kill
	s.kvMu.Lock()
	victim := s.kv[li]
	s.kvMu.Unlock()
	tKill := time.Now()
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		stop()
		return fo, rec, fmt.Errorf("kill -9 of kv server %d: %w", li+1, err)
	}
	<-victim.Exited()
	// Wait for the first write issued after the kill to complete (or a
	// minute), then a little more of steady writing.
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	var first time.Time
wait:
	for first.IsZero() {
		select {
		case <-wdone:
			break wait
		case <-deadline.C:
			break wait
		case <-time.After(5 * time.Millisecond):
		}
		mu.Lock()
		for _, w := range writes {
			if w.issued.After(tKill) {
				first = w.completed
				break
			}
		}
		mu.Unlock()
	}
	if !first.IsZero() {
		time.Sleep(500 * time.Millisecond)
	}
	if err := stop(); err != nil {
		return fo, rec, err
	}
	if first.IsZero() {
		return fo, rec, fmt.Errorf("no write completed within a minute of killing the leader (kv server %d)", li+1)
	}
	fo.FailoverMs = ms(first.Sub(tKill))
	prev := tKill
	for _, w := range writes {
		if w.completed.Before(tKill) {
			fo.WritesPre++
			prev = w.completed
			continue
		}
		fo.WritesPost++
		fo.GapMs = max(fo.GapMs, ms(w.completed.Sub(prev)))
		prev = w.completed
	}
	// The new leader: a survivor that has not learned of it yet may still
	// name the killed one, so ask until a survivor names a survivor.
	ni, err := s.newLeader(ctx, li)
	if err != nil {
		return fo, rec, fmt.Errorf("after the failover: %w", err)
	}
	fo.NewLeader = s.kvAddrs[ni]

	// Recovery: restart the killed server and wait until it has applied
	// the leader's revision of now.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	st, err := s.client.Status(sctx, stack.Addr(s.kvAddrs[ni]))
	cancel()
	if err != nil {
		return fo, rec, fmt.Errorf("status of the new leader, kv server %d: %w", ni+1, err)
	}
	rec.Revision = st.Revision
	t0 := time.Now()
	p, err := s.startKV(ctx, li)
	if err != nil {
		return fo, rec, fmt.Errorf("restart of kv server %d: %w", li+1, err)
	}
	rec.ReadyMs = ms(time.Since(t0))
	s.kvMu.Lock()
	s.kv[li] = p
	s.kvMu.Unlock()
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := s.client.Status(sctx, stack.Addr(s.kvAddrs[li]))
		cancel()
		if err == nil && st.Revision >= rec.Revision {
			rec.CaughtUpMs, rec.AppliedThen = ms(time.Since(t0)), st.Revision
			return fo, rec, nil
		}
		if time.Since(t0) > 10*time.Minute {
			return fo, rec, fmt.Errorf("restarted kv server %d did not reach revision %d in 10 minutes (last status %+v, %v)", li+1, rec.Revision, st, err)
		}
		select {
		case <-ctx.Done():
			return fo, rec, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// newLeader asks the servers but the killed one until one names a leader
// other than it, for up to a minute, and returns that leader's index.
func (s *strataSystem) newLeader(ctx context.Context, killed int) (int, error) {
	t0 := time.Now()
	for {
		i, _, err := s.leader(ctx, killed)
		if err == nil {
			return i, nil
		}
		if time.Since(t0) > time.Minute {
			return -1, fmt.Errorf("no new leader a minute after the kill: %w", err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return -1, err
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
