package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/distsys/systems/raftkv"
)

// Real-process tests of the Raft KV store compiled from
// models/raftkv/RaftKV.tla: three `strata raftkv serve` processes, the
// leader killed with SIGKILL and restarted while clients put and get,
// and the history checked for linearizability with porcupine (the
// client-visible property the model states as GetSeesAckedPut, checked
// here in full).

type rkIn struct {
	put   bool
	key   string
	value string
}

type rkOut struct {
	unknown bool // the put failed or timed out: it may take effect at any later time
	found   bool
	value   string
}

// raftkvModel: a register per key, "" when unset. A put whose outcome is
// unknown may or may not take effect (its return is placed at the end of
// the history); gets whose outcome is unknown are left out.
var raftkvModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(rkIn).key
			if by[k] == nil {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(string), input.(rkIn), output.(rkOut)
		if in.put {
			if out.unknown {
				return []any{s, in.value}
			}
			return []any{in.value}
		}
		got := ""
		if out.found {
			got = out.value
		}
		if got == s {
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(rkIn), output.(rkOut)
		if in.put {
			if out.unknown {
				return fmt.Sprintf("put(%s, %s) -> unknown", in.key, in.value)
			}
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) -> %q (found %v)", in.key, out.value, out.found)
	},
}

// freeTCPPorts returns n distinct loopback TCP ports free at the moment.
func freeTCPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close() // held until all are chosen, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestRaftKVCheckerRejectsStaleRead: the checker used below rejects a get
// that returns a value overwritten by a put acknowledged before the get
// began, and accepts the same history with the fresh value (and with an
// unknown put that may land later).
func TestRaftKVCheckerRejectsStaleRead(t *testing.T) {
	m := raftkvModel.ToModel()
	hist := func(read string) []porcupine.Operation {
		return []porcupine.Operation{
			{ClientId: 0, Input: rkIn{put: true, key: "k", value: "a"}, Call: 0, Output: rkOut{}, Return: 10},
			{ClientId: 0, Input: rkIn{put: true, key: "k", value: "b"}, Call: 20, Output: rkOut{}, Return: 30},
			{ClientId: 1, Input: rkIn{key: "k"}, Call: 40, Output: rkOut{found: true, value: read}, Return: 50},
		}
	}
	if porcupine.CheckOperations(m, hist("a")) {
		t.Fatal("a stale read (a after b was acknowledged) was accepted")
	}
	if !porcupine.CheckOperations(m, hist("b")) {
		t.Fatal("a fresh read was rejected")
	}
	h := append(hist("c"), porcupine.Operation{ClientId: 2, Input: rkIn{put: true, key: "k", value: "c"}, Call: 35, Output: rkOut{unknown: true}, Return: 1000})
	if !porcupine.CheckOperations(m, h) {
		t.Fatal("a read of an unknown put's value was rejected")
	}
}

// TestRaftKVRealProcesses: three server processes; clients put and get
// concurrently while the leader is killed with SIGKILL and restarted,
// twice by default; the history is linearizable, writes resume after each kill, and
// the restarted server recovers from its journal. STRATA_RAFTKV_ROUNDS
// sets the number of kills (make test-long: 20).
func TestRaftKVRealProcesses(t *testing.T) {
	dir := t.TempDir()
	udp := freeUDPPorts(t, 3)
	tcp := freeTCPPorts(t, 3)
	var peers, clients []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("udp:127.0.0.1:%d", udp[i]))
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", tcp[i]))
	}
	procs := make([]*strataProc, 3)
	for i := range procs {
		procs[i] = &strataProc{name: fmt.Sprintf("raftkv-%d", i+1), logPath: filepath.Join(dir, fmt.Sprintf("raftkv-%d.log", i+1)),
			args: []string{"raftkv", "serve", "--id", strconv.Itoa(i + 1), "--peers", strings.Join(peers, ","),
				"--clients", strings.Join(clients, ","), "--dir", dir}}
		if err := procs[i].start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s log:\n%s", p.name, tail(p.logPath, 20))
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }

	var mu sync.Mutex // guards hist and acked
	var hist []porcupine.Operation
	acked := 0 // operations that returned ok
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	const writers = 3
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := raftkv.NewClient(clients)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.Timeout = 2 * time.Second
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; loadCtx.Err() == nil; n++ {
				key := fmt.Sprint("k", rng.IntN(3))
				in := rkIn{put: rng.IntN(2) == 0, key: key, value: fmt.Sprintf("w%d-%d", w, n)}
				opCtx, opCancel := context.WithTimeout(loadCtx, 8*time.Second)
				call := now()
				var out rkOut
				var err error
				if in.put {
					err = c.Put(opCtx, in.key, in.value)
					out.unknown = err != nil
				} else {
					out.value, out.found, err = c.Get(opCtx, in.key)
				}
				ret := now()
				opCancel()
				mu.Lock()
				switch {
				case err == nil:
					hist = append(hist, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret})
					acked++
				case in.put:
					hist = append(hist, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: -1})
				}
				mu.Unlock()
			}
		}()
	}
	waitAcked := func(n int, within time.Duration, what string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			a := acked
			mu.Unlock()
			if a >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d operations acknowledged after %v, want %d", what, a, within, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcked(20, failoverWait, "before any kill")

	probe, err := raftkv.NewClient(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("STRATA_RAFTKV_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for round := range rounds {
		if _, _, err := probe.Get(ctx, "k0"); err != nil {
			t.Fatal(err)
		}
		l := probe.Leader()
		t0 := time.Now()
		procs[l-1].kill()
		mu.Lock()
		before := acked
		mu.Unlock()
		waitAcked(before+20, failoverWait, fmt.Sprintf("round %d, leader %d killed", round, l))
		t.Logf("round %d: leader %d killed; 20 more operations acknowledged %v later", round, l, time.Since(t0).Round(time.Millisecond))
		if err := procs[l-1].start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		before = acked
		mu.Unlock()
		waitAcked(before+20, failoverWait, fmt.Sprintf("round %d, server %d restarted", round, l))
	}
	// The restarted servers catch up: each one's log holds the latest put.
	if err := probe.Put(ctx, "last", "x"); err != nil {
		t.Fatal(err)
	}
	stopLoad()
	wg.Wait()

	end := now()
	for i := range hist {
		if hist[i].Return < 0 {
			hist[i].Return = end + 1
		}
	}
	res, info := porcupine.CheckOperationsVerbose(raftkvModel.ToModel(), hist, time.Minute)
	t.Logf("%d operations (%d acknowledged), linearizability: %v", len(hist), acked, res)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), "raftkv-history.html")
		if f, err := os.Create(path); err == nil {
			porcupine.Visualize(raftkvModel.ToModel(), info, f)
			f.Close()
		}
		t.Fatalf("history is %v (visualization: %s)", res, path)
	}
}
