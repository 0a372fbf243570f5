package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"strata/kv"
	"strata/stack"
	"strata/wor"
)

// Real-process tests of the key-value service: wormservers and kv servers
// run as child processes (this test binary acting as the CLI, see
// TestMain), are killed with SIGKILL and restarted, while clients in the
// test write and read. kv_netns_test.go runs the same servers on three
// network namespaces standing for three hosts.

// Bounds of the real-process tests. They are generous because the tests
// run on loaded CI machines, with the race detector, and because a kv
// client's try at a dead server lasts kv.DefaultAttemptTimeout: what
// they check is that the service recovers by itself, not how fast (the
// measured times are logged; bench kv measures them on a quiet machine).
const (
	procReady    = 60 * time.Second // a process prints its ready line
	failoverWait = 30 * time.Second // writes resume after a kill or a cut
	catchUpWait  = 30 * time.Second // a restarted server serves the latest write
)

// procAttr sets up a server process before it starts: on Linux
// (kv_netns_test.go) it dies with the test process, so that a test
// killed by go test's -timeout leaves no cluster behind (an idle kv
// leader writes heartbeats forever).
var procAttr = func(*exec.Cmd) {}

// strataProc is one server process a test started: args are strata's
// arguments; with ns set it runs inside that network namespace
// (ip netns exec, which execs the binary, so the process's pid is the
// server's). Its stderr is appended to logPath across restarts.
type strataProc struct {
	name    string
	ns      string
	args    []string
	logPath string

	// Set by start, read by the test goroutine only.
	cmd    *exec.Cmd
	addr   string        // from its "listening on ADDR" line
	exited chan struct{} // closed once the process is reaped
}

// firstLine is a process's stdout: it sends the first line on ch and
// drops the rest.
type firstLine struct {
	mu   sync.Mutex // guards buf and sent
	buf  []byte
	sent bool
	ch   chan string // buffered, one line
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.sent {
		w.buf = append(w.buf, p...)
		if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
			w.ch <- string(w.buf[:i])
			w.sent, w.buf = true, nil
		}
	}
	return len(p), nil
}

// start starts the process and waits for its "listening on" line.
func (p *strataProc) start() error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{bin}, p.args...)
	if p.ns != "" {
		argv = append([]string{"ip", "netns", "exec", p.ns}, argv...)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	fmt.Fprintf(logf, "=== %s: %s\n", time.Now().Format("15:04:05.000"), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out := &firstLine{ch: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = out, logf
	procAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(p.exited)
	select {
	case line := <-out.ch:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			p.kill()
			return fmt.Errorf("%s: first line %q, want \"listening on ADDR\"", p.name, line)
		}
		p.addr = strings.TrimSpace(addr)
		return nil
	case <-p.exited:
		return fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", p.name, cmd.ProcessState, tail(p.logPath, 30))
	case <-time.After(procReady):
		p.kill()
		return fmt.Errorf("%s not ready after %v; its log:\n%s", p.name, procReady, tail(p.logPath, 30))
	}
}

// kill sends SIGKILL and reaps the process (a no-op if it is not running).
func (p *strataProc) kill() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kvCluster is three persistent wormservers and three kv servers (ids 1,
// 2, 3) over them, as strata up runs them, with their logs in dir.
type kvCluster struct {
	t       *testing.T
	dir     string
	wor     []*strataProc
	kv      []*strataProc
	kvAddrs []string // fixed, so a restarted server comes back where the others look for it
}

// newKVCluster starts the servers: hosts[i] is where server i+1 runs (an
// IP address its wormserver and kv server listen on) and ns[i] its network
// namespace ("" for the test's own). Wormservers listen on worPorts[i] and
// kv servers on kvPorts[i] (0 for a wormserver: any port). The processes
// are killed when the test ends; if it failed, their logs are printed.
func newKVCluster(t *testing.T, hosts, ns []string, worPorts, kvPorts []int) *kvCluster {
	t.Helper()
	cl := &kvCluster{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		for _, p := range append(cl.kv, cl.wor...) {
			p.kill()
		}
		if t.Failed() {
			for _, p := range append(cl.wor, cl.kv...) {
				t.Logf("%s (%s), last lines of its log:\n%s", p.name, p.addr, tail(p.logPath, 40))
			}
		}
	})
	var worAddrs []string
	for i := range hosts {
		p := &strataProc{
			name: fmt.Sprintf("wormserver %d", i+1), ns: ns[i], logPath: filepath.Join(cl.dir, fmt.Sprintf("wor-%d.log", i+1)),
			args: []string{"wor", "serve", "--listen", fmt.Sprintf("udp:%s:%d", hosts[i], worPorts[i]),
				"--dir", filepath.Join(cl.dir, fmt.Sprintf("wor-%d", i+1)), "--blocks", "8192"},
		}
		cl.wor = append(cl.wor, p)
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		// A restart listens where the others know it.
		p.args[3] = p.addr
		worAddrs = append(worAddrs, p.addr)
	}
	cluster := filepath.Join(cl.dir, "cluster.json")
	if err := writeClusterFile(cluster, &wor.ClusterConfig{Engine: "paxos", Directory: worAddrs, Partitions: [][]string{worAddrs}}); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i := range hosts {
		addr := fmt.Sprintf("udp:%s:%d", hosts[i], kvPorts[i])
		cl.kvAddrs = append(cl.kvAddrs, addr)
		p := &strataProc{
			name: fmt.Sprintf("kv server %d", i+1), ns: ns[i], logPath: filepath.Join(cl.dir, fmt.Sprintf("kv-%d.log", i+1)),
			args: []string{"kv", "serve", "--listen", addr, "--cluster", cluster, "--id", fmt.Sprint(i + 1)},
		}
		cl.kv = append(cl.kv, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.start()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, p := range cl.kv {
		if p.addr != cl.kvAddrs[i] {
			t.Fatalf("%s listens on %s, was told %s", p.name, p.addr, cl.kvAddrs[i])
		}
	}
	return cl
}

// freeUDPPorts returns n distinct UDP ports that were free on 127.0.0.1.
func freeUDPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // held until all are chosen, so they differ
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return ports
}

// dial returns a client of the given kv servers, closed when the test
// ends.
func dialKV(t *testing.T, servers ...string) *kv.Client {
	t.Helper()
	c, err := kv.Dial(servers, kv.ClientConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// leader returns the index of the kv server that leads, as the servers'
// statuses say: the server that names itself leader at the highest epoch
// any reachable server reports. It retries until one does or within
// elapses.
func (cl *kvCluster) leader(ctx context.Context, c *kv.Client, within time.Duration) int {
	cl.t.Helper()
	deadline := time.Now().Add(within)
	var seen []string
	for {
		best, bestEpoch := -1, uint64(0)
		seen = seen[:0]
		for i, a := range cl.kvAddrs {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := c.Status(sctx, stack.Addr(a))
			cancel()
			if err != nil {
				seen = append(seen, fmt.Sprintf("%s: %v", a, err))
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: %+v", a, st))
			if st.LeaderID == uint64(i+1) && st.Epoch >= bestEpoch {
				best, bestEpoch = i, st.Epoch
			}
		}
		if best >= 0 {
			return best
		}
		if time.Now().After(deadline) {
			cl.t.Fatalf("no kv server leads after %v: %s", within, strings.Join(seen, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkCaughtUp writes a fresh value of key "latest" through c and waits
// until server i's sequential read (its own state) returns it; then a
// linearizable read through server i alone must return it too. It returns
// how long the sequential read took to see the write.
func (cl *kvCluster) checkCaughtUp(ctx context.Context, c *kv.Client, i int, what string) time.Duration {
	cl.t.Helper()
	want := fmt.Sprintf("%s at %s", what, time.Now().Format(time.RFC3339Nano))
	wctx, cancel := context.WithTimeout(ctx, failoverWait)
	_, err := c.Put(wctx, "latest", []byte(want))
	cancel()
	if err != nil {
		cl.t.Fatalf("%s: put latest: %v", what, err)
	}
	one := dialKV(cl.t, cl.kvAddrs[i])
	start := time.Now()
	for {
		gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		e, err := one.Get(gctx, "latest", kv.SequentialRead())
		cancel()
		if err == nil && string(e.Value) == want {
			break
		}
		if time.Since(start) > catchUpWait {
			cl.t.Fatalf("%s: kv server %d's sequential read of latest: %q, %v after %v; want %q", what, i+1, e.Value, err, catchUpWait, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	gctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	e, err := one.Get(gctx, "latest")
	if err != nil || string(e.Value) != want {
		cl.t.Fatalf("%s: linearizable read of latest through kv server %d: %q, %v; want %q", what, i+1, e.Value, err, want)
	}
	return took
}

// kvLoad is clients writing distinct keys ("load/W/N" = "wW-N") in a loop
// until stopped, recording every acknowledged write.
type kvLoad struct {
	mu     sync.Mutex        // guards the fields below
	acked  map[string]string // key -> value of every acknowledged write
	writes []loadWrite       // acknowledged writes, in completion order
	failed int               // writes that returned an error (outcome unknown)
	last   error             // the latest such error

	cancel context.CancelFunc
	wg     sync.WaitGroup // the writers
}

type loadWrite struct{ issued, done time.Time }

// startLoad starts writers goroutines, each with its own client of
// servers, writing one key after another.
func startLoad(t *testing.T, ctx context.Context, writers int, servers []string) *kvLoad {
	l := &kvLoad{acked: map[string]string{}}
	ctx, l.cancel = context.WithCancel(ctx)
	for w := range writers {
		c := dialKV(t, servers...)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				key, val := fmt.Sprintf("load/%d/%06d", w, n), fmt.Sprintf("w%d-%d", w, n)
				issued := time.Now()
				octx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := c.Put(octx, key, []byte(val))
				cancel()
				l.mu.Lock()
				if err == nil {
					l.acked[key] = val
					l.writes = append(l.writes, loadWrite{issued, time.Now()})
				} else if ctx.Err() == nil {
					l.failed++
					l.last = err
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// stop stops the writers and waits for them.
func (l *kvLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// waitAfter waits until n writes issued after t0 were acknowledged and
// returns how long after t0 the first of them was; it fails the test if
// that takes longer than within.
func (l *kvLoad) waitAfter(t *testing.T, t0 time.Time, n int, within time.Duration, what string) time.Duration {
	t.Helper()
	for {
		l.mu.Lock()
		count, first := 0, time.Time{}
		for _, w := range l.writes {
			if w.issued.After(t0) {
				if count == 0 {
					first = w.done
				}
				count++
			}
		}
		failed, last := l.failed, l.last
		l.mu.Unlock()
		if count >= n {
			return first.Sub(t0)
		}
		if time.Since(t0) > within {
			t.Fatalf("%s: %d writes acknowledged within %v, want %d (%d writes failed, the last with: %v)", what, count, within, n, failed, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// maxGap is the longest time between two consecutive acknowledgements
// from t0 on.
func (l *kvLoad) maxGap(t0 time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gap time.Duration
	prev := t0
	for _, w := range l.writes {
		if w.done.After(t0) {
			gap = max(gap, w.done.Sub(prev))
			prev = w.done
		}
	}
	return gap
}

// verify checks that every acknowledged write is readable with its value,
// by linearizable gets and a scan of the whole load range (which must
// hold nothing but values the writers wrote under their keys).
func (l *kvLoad) verify(t *testing.T, ctx context.Context, c *kv.Client) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	scanned := map[string]string{}
	for start := "load/"; ; {
		sctx, cancel := context.WithTimeout(ctx, failoverWait)
		kvs, more, err := c.Scan(sctx, start, "load0", 0)
		cancel()
		if err != nil {
			t.Fatalf("scan from %q: %v", start, err)
		}
		for _, e := range kvs {
			scanned[e.Key] = string(e.Value)
		}
		if !more || len(kvs) == 0 {
			break
		}
		start = kvs[len(kvs)-1].Key + "\x00"
	}
	for k, v := range scanned {
		var w, n int
		if _, err := fmt.Sscanf(k, "load/%d/%d", &w, &n); err != nil || v != fmt.Sprintf("w%d-%d", w, n) {
			t.Errorf("scan: %q = %q: no writer wrote that", k, v)
		}
	}
	for k, v := range l.acked {
		if got, ok := scanned[k]; !ok || got != v {
			t.Errorf("scan: acknowledged write %q = %q reads %q (present %v)", k, v, got, ok)
		}
		gctx, cancel := context.WithTimeout(ctx, failoverWait)
		e, err := c.Get(gctx, k)
		cancel()
		if err != nil || string(e.Value) != v {
			t.Fatalf("get %q: %q, %v; acknowledged %q", k, e.Value, err, v)
		}
	}
	t.Logf("%d acknowledged writes all readable; %d keys in the load range (the others: writes cancelled at the stop or failed, whose outcome their client did not learn); %d writes failed", len(l.acked), len(scanned), l.failed)
}

// kvRounds is how many times the real-process and namespace tests take
// the leader down: STRATA_KV_ROUNDS (a soak), default 1.
func kvRounds(t *testing.T) int {
	t.Helper()
	v := os.Getenv("STRATA_KV_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("STRATA_KV_ROUNDS=%q: want a positive number of rounds", v)
	}
	return n
}

// TestKVRealProcesses: three persistent wormservers and three kv servers,
// one process each on loopback, under writes of two clients. The kv
// leader's process is killed with SIGKILL: writes resume within
// failoverWait (the measured failover time, kill to the first write
// acknowledged after it, is logged) and the restarted server catches up
// (STRATA_KV_ROUNDS=N: N times).
// Then a follower is killed and restarted; then a wormserver is killed
// and restarted on its journal, and a second wormserver is killed for
// good, so the only majority left includes the restarted one. Every
// acknowledged write is readable at the end, by gets and a scan.
func TestKVRealProcesses(t *testing.T) {
	hosts := []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}
	cl := newKVCluster(t, hosts, []string{"", "", ""}, []int{0, 0, 0}, freeUDPPorts(t, 3))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := dialKV(t, cl.kvAddrs...)
	load := startLoad(t, ctx, 2, cl.kvAddrs)
	defer load.stop()
	load.waitAfter(t, time.Now().Add(-time.Second), 50, failoverWait, "start")

	// The leader dies, STRATA_KV_ROUNDS times (default once).
	for round := range kvRounds(t) {
		li := cl.leader(ctx, c, failoverWait)
		cl.kv[li].kill()
		tKill := time.Now() // once reaped: the writes it measures were issued to a dead leader
		failover := load.waitAfter(t, tKill, 20, failoverWait, fmt.Sprintf("round %d: after kill -9 of the leader, kv server %d", round+1, li+1))
		newLeader := cl.leader(ctx, c, failoverWait)
		if newLeader == li {
			t.Fatalf("round %d: kv server %d, killed, still leads", round+1, li+1)
		}
		t.Logf("round %d: failover: kill -9 of the leader (kv server %d) -> first write acknowledged %v later (longest pause between acknowledgements %v); new leader kv server %d",
			round+1, li+1, failover.Round(time.Millisecond), load.maxGap(tKill).Round(time.Millisecond), newLeader+1)
		tStart := time.Now()
		if err := cl.kv[li].start(); err != nil {
			t.Fatal(err)
		}
		ready := time.Since(tStart)
		took := cl.checkCaughtUp(ctx, c, li, fmt.Sprintf("round %d: restarted leader", round+1))
		t.Logf("round %d: kv server %d restarted: ready after %v, saw the latest write %v after that", round+1, li+1, ready.Round(time.Millisecond), took.Round(time.Millisecond))
	}

	// A follower dies.
	li := cl.leader(ctx, c, failoverWait)
	fi := (li + 1) % 3
	cl.kv[fi].kill()
	tKill := time.Now()
	load.waitAfter(t, tKill, 20, failoverWait, fmt.Sprintf("after kill -9 of a follower, kv server %d", fi+1))
	t.Logf("kill -9 of a follower (kv server %d): longest pause between acknowledgements %v", fi+1, load.maxGap(tKill).Round(time.Millisecond))
	if err := cl.kv[fi].start(); err != nil {
		t.Fatal(err)
	}
	took := cl.checkCaughtUp(ctx, c, fi, "restarted follower")
	t.Logf("kv server %d restarted: saw the latest write %v after ready", fi+1, took.Round(time.Millisecond))

	// A wormserver dies and comes back from its journal; then another
	// dies for good, so the log lives on the restarted one and the third.
	cl.wor[0].kill()
	tWor := time.Now()
	load.waitAfter(t, tWor, 20, failoverWait, "after kill -9 of wormserver 1")
	if err := cl.wor[0].start(); err != nil {
		t.Fatal(err)
	}
	tRestart := time.Now()
	load.waitAfter(t, tRestart, 20, failoverWait, "after wormserver 1's restart")
	cl.wor[1].kill()
	tKill = time.Now()
	load.waitAfter(t, tKill, 20, failoverWait, "after kill -9 of wormserver 2 (wormserver 1 restarted)")
	t.Logf("wormservers: longest pause between acknowledgements from the first kill on %v", load.maxGap(tWor).Round(time.Millisecond))
	for i := range cl.kv {
		cl.checkCaughtUp(ctx, c, i, fmt.Sprintf("with wormserver 2 down, kv server %d", i+1))
	}
	load.stop()
	load.verify(t, ctx, c)
}

// upRun is a `strata up` process a test started.
type upRun struct {
	cmd      *exec.Cmd
	exited   chan struct{} // closed once it is reaped
	children []int         // its servers' pids
	banner   string        // what it printed up to "Ctrl-C stops them."
}

// startUp runs strata up on dir (any free ports, no NFS export) until it
// is ready; the test's end interrupts it and kills its servers if they
// outlive it.
func startUp(t *testing.T, dir string, extra ...string) *upRun {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "up.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	u := &upRun{cmd: exec.Command(bin, append([]string{"up", "--dir", dir, "--port", "0", "--nfs-port", "0"}, extra...)...), exited: make(chan struct{})}
	u.cmd.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	u.cmd.Stderr = logf
	procAttr(u.cmd) // up stops its servers when it gets SIGINT, not SIGKILL: see the cleanup
	stdout, err := u.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		u.stop(10 * time.Second)
		for _, pid := range u.children {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("strata up's log:\n%s", tail(logPath, 60))
		}
	})
	lines := make(chan string, 64)
	go func() {
		defer close(u.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads after the ready line
			}
		}
		u.cmd.Wait()
	}()
	var banner []string
	for ready := false; !ready; {
		select {
		case line := <-lines:
			banner = append(banner, line)
			ready = strings.Contains(line, "Ctrl-C stops them")
		case <-u.exited:
			t.Fatalf("strata up exited (%v) after printing:\n%s", u.cmd.ProcessState, strings.Join(banner, "\n"))
		case <-time.After(procReady):
			t.Fatalf("strata up not ready after %v; it printed:\n%s", procReady, strings.Join(banner, "\n"))
		}
	}
	u.banner = strings.Join(banner, "\n")
	u.children = childPids(t, u.cmd.Process.Pid)
	return u
}

// stop interrupts strata up (Ctrl-C) and reports whether it exited
// within wait; if not, it is killed.
func (u *upRun) stop(wait time.Duration) bool {
	u.cmd.Process.Signal(os.Interrupt)
	select {
	case <-u.exited:
		return true
	case <-time.After(wait):
		u.cmd.Process.Kill()
		<-u.exited
		return false
	}
}

// child returns the pid of strata up's server started as "strata KIND
// serve ... --id ID" (id "": the first of that kind), or 0.
func (u *upRun) child(kind, id string) int {
	for _, pid := range u.children {
		if args := procArgs(pid); len(args) > 3 && args[1] == kind && args[2] == "serve" && (id == "" || flagValue(args, "--id") == id) {
			return pid
		}
	}
	return 0
}

// TestKVUp follows `make up`: strata up (on any free ports, data in a
// temporary folder, no NFS export) starts the wormservers and the kv
// servers; the CLI's put, get and scan work against it (servers from the
// kv.json strata up writes). Then the kv leader's process, found through
// `strata kv status`, is killed with SIGKILL, and get, put and scan still
// work; then a wormserver too, and they still work. Ctrl-C stops strata
// up and every server it started, and a second strata up on the folder
// serves the same keys.
func TestKVUp(t *testing.T) {
	dir := t.TempDir()
	up := startUp(t, dir)
	t.Logf("strata up:\n%s", up.banner)
	serversFile := filepath.Join(dir, "kv.json")
	servers, err := kv.LoadServers(serversFile)
	if err != nil {
		t.Fatalf("strata up's kv servers file: %v", err)
	}
	if len(servers) != 3 {
		t.Fatalf("strata up lists %d kv servers (%v), want 3", len(servers), servers)
	}
	cli := func(want string, args ...string) string {
		t.Helper()
		// --timeout 25s rather than the CLI's 10 s: under -race on two
		// busy cores a new leader's junk fill of a whole segment has
		// taken ~6 s, longer than the election timeout, and campaigns
		// then preempted each other for over 10 s.
		args = append(args[:2:2], append([]string{"--servers-file", serversFile, "--timeout", "25s"}, args[2:]...)...)
		out, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("strata %s: exit %d, output %q; want %q in it", strings.Join(args, " "), code, out, want)
		}
		return out
	}
	cli(`put "k": version 1`, "kv", "put", "k", "v")
	cli(`put "k2": version 1`, "kv", "put", "k2", "v2")
	cli(`"k" = "v" (version 1`, "kv", "get", "k")
	if out := cli("2 keys", "kv", "scan", ""); !strings.Contains(out, `"k2" = "v2"`) {
		t.Fatalf("scan lacks k2:\n%s", out)
	}
	// A value of 200 KB from a file (far larger than a log register),
	// read back byte for byte.
	big := make([]byte, 200_000)
	for i := range big {
		big[i] = byte(i*31 + i>>8)
	}
	bigFile := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(bigFile, big, 0o644); err != nil {
		t.Fatal(err)
	}
	cli(`put "big": version 1`, "kv", "put", "big", "--file", bigFile)
	if out := cli("", "kv", "get", "big", "--value"); out != string(big) {
		t.Fatalf("get big --value: %d bytes back, want the %d put", len(out), len(big))
	}
	cli(`deleted "big"`, "kv", "delete", "big")

	// The leader's process dies.
	status := cli("leader this server", "kv", "status")
	leaderID := ""
	for _, line := range strings.Split(status, "\n") {
		if _, after, ok := strings.Cut(line, "leader this server, "); ok {
			leaderID, _, _ = strings.Cut(after, " ")
		}
	}
	victim := up.child("kv", leaderID)
	if victim == 0 {
		t.Fatalf("no child of strata up is kv server %q, the leader in:\n%s", leaderID, status)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed kv server %s (pid %d), the leader, with SIGKILL", leaderID, victim)
	cli(`"k" = "v" (version 1`, "kv", "get", "k")
	cli(`put "k": version 2`, "kv", "put", "k", "v-after-kill")
	cli(`"k" = "v-after-kill" (version 2`, "kv", "get", "k")
	cli("2 keys", "kv", "scan", "")

	// A wormserver dies too.
	victim = up.child("wor", "")
	if victim == 0 {
		t.Fatal("no child of strata up is a wormserver")
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cli(`put "k3": version 1`, "kv", "put", "k3", "v3")
	cli("3 keys", "kv", "scan", "")

	// Ctrl-C stops strata up and the servers left; a new strata up
	// recovers the keys from the wormservers' journals.
	tStop := time.Now()
	if !up.stop(20 * time.Second) {
		t.Fatal("strata up still running 20 s after Ctrl-C")
	}
	stopped := time.Since(tStop)
	for _, pid := range up.children {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil && len(procArgs(pid)) > 1 {
			t.Errorf("strata up's server %d (%v) outlived it", pid, procArgs(pid))
		}
	}
	tStart := time.Now()
	startUp(t, dir)
	t.Logf("Ctrl-C stopped strata up in %v; a new strata up was ready %v after it started", stopped.Round(time.Millisecond), time.Since(tStart).Round(time.Millisecond))
	cli(`"k" = "v-after-kill" (version 2`, "kv", "get", "k")
	if out := cli("3 keys", "kv", "scan", ""); !strings.Contains(out, `"k3" = "v3"`) {
		t.Fatalf("scan after a new strata up lacks k3:\n%s", out)
	}
}

// childPids lists the processes whose parent is pid.
func childPids(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to find strata up's servers: %v", err)
	}
	var pids []int
	for _, e := range ents {
		var p int
		if _, err := fmt.Sscanf(e.Name(), "%d", &p); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		var state string
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscanf(string(b[i+1:]), " %s %d", &state, &ppid); err == nil && ppid == pid {
			pids = append(pids, p)
		}
	}
	return pids
}

// procArgs returns a process's command line.
func procArgs(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// flagValue returns the value of --name in args ("--name V" or
// "--name=V").
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestLogUp: the shared log through strata up and the CLI: append, read,
// subscribe; the sequencer's process (found with `strata log status`) is
// killed with SIGKILL and appends go on at a new sequencer; what was
// appended before is still there, once.
func TestLogUp(t *testing.T) {
	dir := t.TempDir()
	up := startUp(t, dir)
	serversFile, cluster := filepath.Join(dir, "log.json"), filepath.Join(dir, "cluster.json")
	servers, err := kv.LoadServers(serversFile)
	if err != nil || len(servers) != 2 {
		t.Fatalf("strata up's log servers file: %v, %v", servers, err)
	}
	cli := func(want string, args ...string) string {
		t.Helper()
		args = append(args[:2:2], append([]string{"--servers-file", serversFile, "--cluster", cluster, "--timeout", "25s"}, args[2:]...)...)
		out, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("strata %s: exit %d, output %q; want %q in it", strings.Join(args, " "), code, out, want)
		}
		return out
	}
	cli("appended at 0", "log", "append", "first")
	cli("appended at 1", "log", "append", "second")
	cli(`1 "second"`, "log", "read", "1")
	cli("2\n", "log", "tail")
	if out, code := runCLI(t, "log", "read", "7", "--servers-file", serversFile, "--cluster", cluster); code == 0 || !strings.Contains(out, "nothing appended") {
		t.Fatalf("read beyond the tail: exit %d, %q", code, out)
	}
	status := cli("sequencer udp:", "log", "status")
	seq := -1
	for i, s := range servers {
		if strings.Contains(status, "sequencer "+s+",") {
			seq = i
		}
	}
	if seq < 0 {
		t.Fatalf("status names no server of %v: %q", servers, status)
	}
	victim := up.child("log", fmt.Sprint(seq+1))
	if victim == 0 {
		t.Fatalf("no child of strata up is log server %d", seq+1)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed log server %d (pid %d), the sequencer, with SIGKILL", seq+1, victim)
	out := cli("appended at ", "log", "append", "after-kill")
	if strings.Contains(out, "appended at 2\n") {
		t.Fatalf("the append after the kill went to position 2, in the dead sequencer's segment: %q", out)
	}
	cli("sequencer "+servers[1-seq]+",", "log", "status")
	sub := cli(`"after-kill"`, "log", "subscribe", "--from", "0", "--count", "3", "--for", "25s")
	if strings.Count(sub, `"first"`) != 1 || strings.Count(sub, `"second"`) != 1 || strings.Count(sub, `"after-kill"`) != 1 {
		t.Fatalf("subscribe from 0 after the kill:\n%s", sub)
	}
}
