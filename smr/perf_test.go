package smr

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
)

// TestPerf measures Propose and Read(Linearizable) over three in-memory
// wormservers on loopback UDP, at 1, 16 and 64 clients (run it without
// -race, with STRATA_SMR_PERF=1; not part of CI), against pre-captured
// writes of the WOR space alone. It reports operations per second, the
// median and 99th percentile latency and the leader's batching.
// STRATA_SMR_PERF_OPS=raw-write,propose,read-leader,read-follower picks
// the operations; STRATA_SMR_PERF_ALONE=1 stops the followers first (to
// see what their reading costs the leader).
func TestPerf(t *testing.T) {
	if os.Getenv("STRATA_SMR_PERF") == "" {
		t.Skip("set STRATA_SMR_PERF=1 to measure")
	}
	mk := func() *stack.Node {
		nd, err := layers.Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		return nd
	}
	var servers []stack.Addr
	for range 3 {
		nd := mk()
		srv := wor.NewServer(nil)
		nd.HandleAsync(srv.HandleAsync)
		srv.SetNotifier(func(to stack.Addr, msg []byte) { _ = nd.Send(to, msg) })
		servers = append(servers, nd.Local())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var reps []*Replica
	for id := uint64(1); id <= 3; id++ {
		e, err := wor.NewPaxos(mk(), servers, id, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Start(ctx, Config{Client: wor.NewClient(e), ID: id, Log: 1 << 20, SegmentSize: perfSegSize()}, newTestSM())
		if err != nil {
			t.Fatal(err)
		}
		defer rep.Close()
		reps = append(reps, rep)
	}
	if err := reps[0].Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("STRATA_SMR_PERF_ALONE") != "" {
		reps[1].Close()
		reps[2].Close()
	}
	value := string(make([]byte, 1000))
	re, err := wor.NewPaxos(mk(), servers, 99, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rawc := wor.NewClient(re)
	rawcid := make([]wor.CaptureID, 64)
	ops := []string{"raw-write", "propose", "read-leader", "read-follower"}
	if o := os.Getenv("STRATA_SMR_PERF_OPS"); o != "" {
		ops = strings.Split(o, ",")
	}
	for _, op := range ops {
		for _, clients := range []int{1, 16, 64} {
			before := reps[0].Stats()
			var mu sync.Mutex
			var lat []time.Duration
			deadline := time.Now().Add(2 * time.Second)
			var wg sync.WaitGroup
			for k := range clients {
				wg.Go(func() {
					var mine []time.Duration
					for i := 0; time.Now().Before(deadline); i++ {
						t0 := time.Now()
						var err error
						switch op {
						case "raw-write":
							// The WOR space alone: a pre-captured 1 KiB write.
							seg := uint64(5000 + 1000000*clients + k + 100*(i/1024))
							if i%1024 == 0 {
								if err = rawc.Alloc(ctx, seg, nil); err == nil {
									rawcid[k], err = rawc.SegCapture(ctx, seg, 0, 1024)
								}
							}
							if err == nil {
								err = rawc.Write(ctx, seg, uint64(i%1024), []byte(value), rawcid[k])
							}
						case "propose":
							_, err = reps[0].Propose(ctx, []byte(fmt.Sprintf("put k%d %s c%d-%d", i%100, value[:1000-40], k, i)))
						case "read-leader":
							err = reps[0].Read(ctx, Linearizable, func() {})
						default:
							err = reps[1].Read(ctx, Linearizable, func() {})
						}
						if err != nil {
							t.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			slices.Sort(lat)
			st := reps[0].Stats()
			t.Logf("%-13s %2d clients: %7.0f ops/s, p50 %v, p99 %v; leader: %d entries, %d commands, %d SegWrites, %d settled, %d probes",
				op, clients, float64(len(lat))/2, lat[len(lat)/2], lat[len(lat)*99/100],
				st.Entries-before.Entries, st.Commands-before.Commands, st.SegWrites-before.SegWrites, st.Settled-before.Settled, st.Probes-before.Probes)
		}
	}
}

func perfSegSize() int {
	n, _ := strconv.Atoi(os.Getenv("STRATA_SMR_PERF_SEG"))
	return n
}
