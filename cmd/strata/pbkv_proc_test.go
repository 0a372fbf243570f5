package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/internal/testseed"
	"strata/models/pbkv"
)

// The primary-backup store compiled from models/pbkv/PBKV.tla, run as
// three `strata pbkv serve` processes; clients in the test put and get
// while the primary is killed with SIGKILL, and the history is checked
// for linearizability with porcupine (one register per key).

// pbkvOp is one client operation as the client saw it; times are
// nanoseconds since the run began, ret is math.MaxInt64 for a put whose
// outcome is unknown (its call failed: it may take effect later, or not).
type pbkvOp struct {
	client    int
	put       bool
	key       string
	value     string // put: written; get: read
	found     bool   // get
	call, ret int64
}

type pbkvIn struct {
	put        bool
	key, value string
}

type pbkvOut struct {
	value string
	found bool
}

// pbkvState is one key's register: "" and not found until a put.
type pbkvState struct {
	value string
	found bool
}

var pbkvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(pbkvIn).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return pbkvState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(pbkvState), input.(pbkvIn), output.(pbkvOut)
		if in.put {
			return true, pbkvState{value: in.value, found: true}
		}
		return out.found == s.found && out.value == s.value, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(pbkvIn), output.(pbkvOut)
		if in.put {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		if !out.found {
			return fmt.Sprintf("get(%s) -> not found", in.key)
		}
		return fmt.Sprintf("get(%s) -> %s", in.key, out.value)
	},
}

// checkPBKVHistory returns nil if h is linearizable key by key.
func checkPBKVHistory(h []pbkvOp) error {
	var ops []porcupine.Operation
	for _, o := range h {
		ops = append(ops, porcupine.Operation{ClientId: o.client, Input: pbkvIn{put: o.put, key: o.key, value: o.value},
			Call: o.call, Output: pbkvOut{value: o.value, found: o.found}, Return: o.ret})
	}
	m := pbkvModel
	m.Partition = nil // partitioned here, to name the failing key
	for _, part := range pbkvModel.Partition(ops) {
		switch porcupine.CheckOperationsTimeout(m, part, time.Minute) {
		case porcupine.Ok:
		case porcupine.Unknown:
			return fmt.Errorf("key %s: porcupine gave up on %d operations", part[0].Input.(pbkvIn).key, len(part))
		default:
			var b strings.Builder
			sort.SliceStable(part, func(i, j int) bool { return part[i].Call < part[j].Call })
			for _, o := range part {
				ret := fmt.Sprint(o.Return)
				if o.Return == math.MaxInt64 {
					ret = "unknown"
				}
				fmt.Fprintf(&b, "\n  client %d [%d, %s] %s", o.ClientId, o.Call, ret, m.DescribeOperation(o.Input, o.Output))
			}
			return fmt.Errorf("key %s: history of %d operations is not linearizable:%s", part[0].Input.(pbkvIn).key, len(part), b.String())
		}
	}
	return nil
}

// TestPBKVCheckerRejects: the checker accepts a linearizable history
// (with a put of unknown outcome that a later get sees) and rejects a
// get that misses an acknowledged put (what a backup promoted without the
// put would answer) and a get that returns a value older than one a
// completed get already returned.
func TestPBKVCheckerRejects(t *testing.T) {
	ok := []pbkvOp{
		{client: 0, put: true, key: "x", value: "a", call: 0, ret: 10},
		{client: 1, put: true, key: "x", value: "b", call: 5, ret: math.MaxInt64},
		{client: 2, key: "x", value: "a", found: true, call: 11, ret: 12},
		{client: 2, key: "x", value: "b", found: true, call: 13, ret: 14},
		{client: 2, key: "y", call: 13, ret: 14},
	}
	if err := checkPBKVHistory(ok); err != nil {
		t.Fatalf("linearizable history rejected: %v", err)
	}
	lost := []pbkvOp{
		{client: 0, put: true, key: "x", value: "a", call: 0, ret: 10},
		{client: 1, key: "x", call: 20, ret: 30},
	}
	if err := checkPBKVHistory(lost); err == nil || !strings.Contains(err.Error(), "key x: history of 2 operations is not linearizable") {
		t.Fatalf("lost acknowledged put: %v", err)
	}
	stale := []pbkvOp{
		{client: 0, put: true, key: "x", value: "a", call: 0, ret: 10},
		{client: 0, put: true, key: "x", value: "b", call: 11, ret: math.MaxInt64},
		{client: 1, key: "x", value: "b", found: true, call: 20, ret: 30},
		{client: 2, key: "x", value: "a", found: true, call: 31, ret: 40},
	}
	if err := checkPBKVHistory(stale); err == nil {
		t.Fatal("a read going back in time was accepted")
	}
}

// freePorts returns n loopback ports that were free for network nw
// ("udp" or "tcp") a moment ago.
func freePorts(t *testing.T, nw string, n int) []int {
	t.Helper()
	var out []int
	for range n {
		var port int
		if nw == "udp" {
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port = c.LocalAddr().(*net.UDPAddr).Port
			c.Close()
		} else {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port = l.Addr().(*net.TCPAddr).Port
			l.Close()
		}
		out = append(out, port)
	}
	return out
}

// TestPBKVRealProcesses: three replicas as real processes; three clients
// put and get two keys concurrently (each put writes a value never
// written before); after a third of the operations the primary (replica
// 1) is killed with SIGKILL; every client must finish its operations
// (the clients move to replica 2), and the whole history, before and
// after the kill, must be linearizable.
func TestPBKVRealProcesses(t *testing.T) {
	seed := testseed.One(t) // the operations each client picks (timing is the machine's)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	var reps, clients []string
	for _, p := range freePorts(t, "udp", 3) {
		reps = append(reps, fmt.Sprintf("udp:127.0.0.1:%d", p))
	}
	for _, p := range freePorts(t, "tcp", 3) {
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", p))
	}
	procs := make([]*strataProc, 3)
	for i := range procs {
		procs[i] = &strataProc{name: fmt.Sprintf("pbkv replica %d", i+1), logPath: filepath.Join(dir, fmt.Sprintf("pbkv-%d.log", i+1)),
			args: []string{"pbkv", "serve", "--id", fmt.Sprint(i + 1), "--replicas", strings.Join(reps, ","),
				"--clients", strings.Join(clients, ","), "--heartbeat", "100ms", "--suspect-after", "3s"}}
	}
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s, last lines of its log:\n%s", p.name, tail(p.logPath, 30))
			}
		}
	})
	// Started together: a replica silent for --suspect-after from the
	// others' start would be suspected for good.
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() { errs <- p.start() }()
	}
	for range procs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	const nClients, nOps = 3, 30
	keys := []string{"x", "y"}
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex // guards hist and done
	var hist []pbkvOp
	done := 0
	killed := make(chan struct{})
	var wg sync.WaitGroup
	clientErr := make([]error, nClients) // each written by its own goroutine
	for c := range nClients {
		cl, err := pbkv.NewClient(clients)
		if err != nil {
			t.Fatal(err)
		}
		cl.Timeout = 2 * time.Second
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(c)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for i := range nOps {
				o := pbkvOp{client: c, put: crng.IntN(2) == 0, key: keys[crng.IntN(len(keys))]}
				o.call = now()
				var err error
				if o.put {
					o.value = fmt.Sprintf("c%d-%d", c, i)
					err = cl.Put(ctx, o.key, o.value)
				} else {
					o.value, o.found, err = cl.Get(ctx, o.key)
				}
				o.ret = now()
				if err != nil {
					clientErr[c] = fmt.Errorf("client %d op %d: %w", c, i, err)
					if o.put {
						o.ret = math.MaxInt64
						mu.Lock()
						hist = append(hist, o)
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				hist = append(hist, o)
				done++
				d := done
				mu.Unlock()
				if d == nClients*nOps/3 {
					procs[0].kill()
					t.Logf("killed the primary (replica 1) with SIGKILL after %d operations, at %v", d, time.Since(start).Round(time.Millisecond))
					close(killed)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range clientErr {
		if err != nil {
			t.Error(err)
		}
	}
	select {
	case <-killed:
	default:
		t.Fatal("the primary was never killed")
	}
	t.Logf("%d operations in %v", len(hist), time.Since(start).Round(time.Millisecond))
	if err := checkPBKVHistory(hist); err != nil {
		t.Fatal(err)
	}
}

// TestPBKVCommandErrors: wrong flags and arguments of strata pbkv are
// refused with errors that say what is wrong, before anything starts.
func TestPBKVCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pbkv", "serve", "--id", "5"}, "--id 5: no entry 5 in --clients (3 addresses)"},
		{[]string{"pbkv", "serve", "--id", "4", "--listen", "127.0.0.1:0"}, "pbkv: id 4 is not in 1..3"},
		{[]string{"pbkv", "serve", "--id", "1", "--replicas", "bogus:1", "--listen", "127.0.0.1:0"}, "pbkv: replica 1:"},
		{[]string{"pbkv", "up", "--clients", "127.0.0.1:1"}, "--replicas has 3 addresses and --clients 1"},
		{[]string{"pbkv", "put", "k"}, "accepts 2 arg(s)"},
		{[]string{"pbkv", "get", "k", "--servers", ""}, "pbkv: no replica addresses"},
	} {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strata %s: %v, want an error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
