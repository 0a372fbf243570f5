package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

const prefillKeys = 1000

// result is the one JSON line the bench prints.
type result struct {
	System    string  `json:"system"`
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Size      int     `json:"size"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	// OpsTotal counts every successful operation, warm-up included.
	OpsTotal int `json:"ops_total"`
	// Syncs are the members' disk syncs from the start of the warm-up to
	// the end of the last operation: WAL fdatasyncs and backend commits,
	// summed over the members (from their /metrics).
	Syncs uint64 `json:"syncs"`
}

// runBench drives C closed-loop clients (goroutines sharing one clientv3
// client, one outstanding request each, no rate limit) against the cluster
// for -warmup plus -duration, and prints one JSON line with throughput and
// latency percentiles of the operations that started in the measured
// window and ended before its end.
//
// Operations: create (a create-if-absent transaction on a fresh key: If
// version == 0 Then put; etcd's counterpart of writing a write-once
// register) and get (a linearizable range read of one prefilled key).
func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	endpoints := fs.String("endpoints", "http://127.0.0.1:2379", "comma-separated client URLs")
	op := fs.String("op", "create", "create (create-if-absent txn on a fresh key) or get (linearizable)")
	clients := fs.Int("clients", 1, "concurrent clients, one outstanding request each")
	duration := fs.Duration("duration", 3*time.Second, "measured duration, after the warm-up")
	warmup := fs.Duration("warmup", time.Second, "warm-up before the measured window")
	size := fs.Int("size", 8, "value size in bytes")
	prefix := fs.String("prefix", "bench", "key prefix (use a fresh one per run)")
	reqTimeout := fs.Duration("timeout", 10*time.Second, "per-request timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *op != "create" && *op != "get" {
		return fmt.Errorf("bench: -op must be create or get, not %q", *op)
	}
	if *clients < 1 || *size < 0 || *duration <= 0 || *warmup < 0 {
		return errors.New("bench: need -clients >= 1, -size >= 0, -duration > 0, -warmup >= 0")
	}

	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(*endpoints, ","),
		DialTimeout: 10 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cli.Close()

	value := strings.Repeat("v", *size)

	var getKeys []string
	if *op == "get" {
		getKeys, err = prefill(cli, *prefix, value, *reqTimeout)
		if err != nil {
			return err
		}
	}

	eps := strings.Split(*endpoints, ",")
	syncs0, err := diskSyncs(eps)
	if err != nil {
		return err
	}
	start := time.Now()
	measureFrom := start.Add(*warmup)
	measureTo := measureFrom.Add(*duration)

	var (
		wg      sync.WaitGroup
		errCnt  atomic.Int64
		firstMu sync.Mutex
		first   error
	)
	lats := make([][]time.Duration, *clients)
	totals := make([]int, *clients)
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c)+1, uint64(start.UnixNano())))
			var mine []time.Duration
			for n := 0; ; n++ {
				t0 := time.Now()
				if !t0.Before(measureTo) {
					break
				}
				ctx, cancel := context.WithTimeout(context.Background(), *reqTimeout)
				var err error
				if *op == "create" {
					key := fmt.Sprintf("%s/p/c%d/%d", *prefix, c, n)
					var resp *clientv3.TxnResponse
					resp, err = cli.Txn(ctx).
						If(clientv3.Compare(clientv3.Version(key), "=", 0)).
						Then(clientv3.OpPut(key, value)).
						Commit()
					if err == nil && !resp.Succeeded {
						err = fmt.Errorf("create of fresh key %q did not succeed", key)
					}
				} else {
					key := getKeys[rng.IntN(len(getKeys))]
					var resp *clientv3.GetResponse
					resp, err = cli.Get(ctx, key)
					if err == nil && len(resp.Kvs) != 1 {
						err = fmt.Errorf("get %q: %d kvs", key, len(resp.Kvs))
					}
				}
				cancel()
				t1 := time.Now()
				if err != nil {
					errCnt.Add(1)
					firstMu.Lock()
					if first == nil {
						first = err
					}
					firstMu.Unlock()
					continue
				}
				totals[c]++
				// Count operations that started after the warm-up and
				// finished inside the measured window.
				if !t0.Before(measureFrom) && t1.Before(measureTo) {
					mine = append(mine, t1.Sub(t0))
				}
			}
			lats[c] = mine
		}(c)
	}
	wg.Wait()
	syncs1, err := diskSyncs(eps)
	if err != nil {
		return err
	}

	var all []time.Duration
	total := 0
	for c, l := range lats {
		all = append(all, l...)
		total += totals[c]
	}
	if n := errCnt.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "etcdpeer bench: %d errors, first: %v\n", n, first)
	}
	if len(all) == 0 {
		return fmt.Errorf("no successful operations in the measured window (errors %d, first %v)", errCnt.Load(), first)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	secs := duration.Seconds()
	res := result{
		System:    "etcd",
		Op:        *op,
		Clients:   *clients,
		Size:      *size,
		Ops:       len(all),
		Seconds:   secs,
		OpsPerSec: float64(len(all)) / secs,
		P50us:     micros(percentile(all, 0.50)),
		P99us:     micros(percentile(all, 0.99)),
		OpsTotal:  total,
		Syncs:     syncs1 - syncs0,
	}
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	if errCnt.Load() > 0 {
		return fmt.Errorf("%d operations failed", errCnt.Load())
	}
	return nil
}

// prefill writes prefillKeys keys under prefix+"/g/" with 16 concurrent
// writers and returns their names.
func prefill(cli *clientv3.Client, prefix, value string, timeout time.Duration) ([]string, error) {
	keys := make([]string, prefillKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s/g/%d", prefix, i)
	}
	const writers = 16
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		mu   sync.Mutex
		ferr error
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(keys) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				_, err := cli.Put(ctx, keys[i], value)
				cancel()
				if err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = fmt.Errorf("prefill %q: %w", keys[i], err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return keys, ferr
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// percentile returns the nearest-rank percentile of sorted durations (the
// definition strata/bench/wor uses for Strata's side too).
func percentile(sorted []time.Duration, p float64) time.Duration {
	idx := int(float64(len(sorted))*p+0.999999) - 1
	if idx < 0 {
		idx = 0
	}
	if idx >= len(sorted) {
		idx = len(sorted) - 1
	}
	return sorted[idx]
}

// syncMetrics are the members' disk syncs: WAL fdatasyncs (each makes raft
// entries durable before they are acknowledged) and backend (bbolt)
// commits.
var syncMetrics = []string{"etcd_disk_wal_fsync_duration_seconds_count", "etcd_disk_backend_commit_duration_seconds_count"}

// diskSyncs sums syncMetrics over the members, from the /metrics page each
// serves on its client URL.
func diskSyncs(endpoints []string) (uint64, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	var sum uint64
	for _, ep := range endpoints {
		resp, err := hc.Get(ep + "/metrics")
		if err != nil {
			return 0, fmt.Errorf("metrics: %w", err)
		}
		found := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			for _, m := range syncMetrics {
				if v, ok := strings.CutPrefix(sc.Text(), m+" "); ok {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil {
						resp.Body.Close()
						return 0, fmt.Errorf("metrics %s: %s: %w", ep, m, err)
					}
					sum += uint64(f)
					found++
				}
			}
		}
		err = sc.Err()
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("metrics %s: %w", ep, err)
		}
		if found != len(syncMetrics) {
			return 0, fmt.Errorf("metrics %s: found %d of %v", ep, found, syncMetrics)
		}
	}
	return sum, nil
}
