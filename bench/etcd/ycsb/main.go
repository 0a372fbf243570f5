// Command ycsb runs the YCSB core workloads of strata/bench/ycsb (the
// generator and driver Strata's side of `strata bench kv` runs too)
// against an etcd cluster, with etcd's own Go client (clientv3 v3.6.16).
// strata/bench/kv starts it, once per load or run phase, against the
// members bench/etcd runs.
//
// It is a module of its own, beside the member's (bench/etcd), so that
// requiring the Strata module for the generator (a replace directive to
// the tree) raises no dependency of the etcd server: Go's minimal version
// selection would otherwise build etcd with Strata's newer Prometheus
// client and friends.
//
//	ycsb -endpoints http://127.0.0.1:23791,... -phase load -from 0 -to 100000 -clients 64
//	ycsb -endpoints ... -phase run -workload A -records 100000 -clients 16 -warmup 1s -duration 5s
//	ycsb -source   (prints the generator's source hash this binary was built with)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"strata/bench/ycsb"
)

// ycsbOutput is the one JSON line `etcdpeer ycsb` prints.
type ycsbOutput struct {
	System string `json:"system"`
	// Source is the hash of the YCSB generator this binary was built
	// with (ycsb.SourceHash): the harness checks it equals its own.
	Source string           `json:"source"`
	Load   *ycsb.LoadResult `json:"load,omitempty"`
	Run    *ycsb.Result     `json:"run,omitempty"`
	Bank   *ycsb.BankResult `json:"bank,omitempty"`
	// Syncs are the members' disk syncs (WAL fdatasyncs and backend
	// commits) over the phase, from their /metrics.
	Syncs uint64 `json:"syncs"`
	// CompactedTo is the revision compacted to after the phase (0: none).
	CompactedTo int64 `json:"compacted_to,omitempty"`
}

func main() {
	if err := runYCSB(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "etcd ycsb:", err)
		os.Exit(1)
	}
}

// runYCSB runs a YCSB load or run phase (strata/bench/ycsb, the generator
// Strata's side runs too) against the cluster with one clientv3 client
// shared by the phase's goroutines, and prints one JSON line (ycsbOutput).
// With -compact, it then compacts the key space's history up to the
// current revision and waits until the compaction is physical, outside
// the measurement: etcd keeps every version of every key until compacted
// (its auto-compaction is off by default), and a benchmark that updates
// 1 KiB values for minutes would otherwise fill its 2 GiB quota.
func runYCSB(args []string) error {
	fs := flag.NewFlagSet("ycsb", flag.ExitOnError)
	endpoints := fs.String("endpoints", "http://127.0.0.1:2379", "comma-separated client URLs")
	phase := fs.String("phase", "run", "load (insert records -from..-to-1) or run (a workload)")
	workload := fs.String("workload", "A", "YCSB core workload A..F (run)")
	clients := fs.Int("clients", 1, "concurrent clients, one request outstanding each")
	records := fs.Int64("records", 0, "records present (run); accounts (bank-load, bank)")
	from := fs.Int64("from", 0, "first record to insert (load)")
	to := fs.Int64("to", 0, "end of the records to insert (load)")
	valueSize := fs.Int("value-size", 1024, "bytes of a record's one field; the opening balance (bank-load)")
	warmup := fs.Duration("warmup", time.Second, "warm-up before the measured window (run)")
	duration := fs.Duration("duration", 5*time.Second, "measured window (run)")
	seed := fs.Uint64("seed", 1, "seed of the clients' generators")
	timeout := fs.Duration("timeout", ycsb.DefaultOpTimeout, "per-request timeout")
	compact := fs.Bool("compact", true, "compact the history after the phase (outside the measurement)")
	compacted := fs.Int64("compacted", 0, "the revision compacted to last (no compaction if the current one is not later)")
	source := fs.Bool("source", false, "print the YCSB generator's source hash and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *source {
		fmt.Println(ycsb.SourceHash())
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("ycsb: unexpected arguments %q", fs.Args())
	}
	switch *phase {
	case "load", "run", "bank-load", "bank":
	default:
		return fmt.Errorf("ycsb: -phase must be load, run, bank-load or bank, not %q", *phase)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	eps := strings.Split(*endpoints, ",")
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cli.Close()
	db := etcdDB{cli}
	out := ycsbOutput{System: "etcd", Source: ycsb.SourceHash()}
	syncs0, err := diskSyncs(eps)
	if err != nil {
		return err
	}
	switch *phase {
	case "bank-load":
		// The accounts, each with the opening balance (-value-size).
		for i := 0; i < int(*records); i++ {
			if _, err := cli.Put(ctx, ycsb.BankAccount(i), strconv.Itoa(*valueSize)); err != nil {
				return fmt.Errorf("bank load: %w", err)
			}
		}
	case "bank":
		res, err := ycsb.RunBank(ctx, etcdBank{cli}, ycsb.BankConfig{Accounts: int(*records), Clients: *clients, Warmup: *warmup, Measure: *duration, Seed: *seed, OpTimeout: *timeout})
		if err != nil {
			return err
		}
		out.Bank = &res
	case "load":
		lr, err := ycsb.Load(ctx, db, ycsb.LoadConfig{From: *from, To: *to, Clients: *clients, ValueSize: *valueSize, Seed: *seed, OpTimeout: *timeout,
			Progress: func(done, total int64) { fmt.Fprintf(os.Stderr, "etcd load: %d of %d records\n", done, total) }})
		if err != nil {
			return err
		}
		out.Load = &lr
	default:
		w, err := ycsb.Lookup(*workload)
		if err != nil {
			return err
		}
		res, err := ycsb.Run(ctx, db, ycsb.RunConfig{Workload: w, Records: *records, Clients: *clients, ValueSize: *valueSize,
			Warmup: *warmup, Measure: *duration, Seed: *seed, OpTimeout: *timeout})
		if err != nil {
			return err
		}
		out.Run = &res
	}
	syncs1, err := diskSyncs(eps)
	if err != nil {
		return err
	}
	out.Syncs = syncs1 - syncs0
	if *compact {
		if out.CompactedTo, err = compactAll(ctx, cli, *compacted, *timeout); err != nil {
			return err
		}
	}
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

// etcdBank transfers with etcd's Txn: one read of both balances (a Txn
// of two Gets), then a Txn that compares both keys' mod revisions with
// what it read and puts both new balances; a failed compare is a
// conflict (no effect: the driver retries, as etcd's STM would).
type etcdBank struct{ cli *clientv3.Client }

func (b etcdBank) Transfer(ctx context.Context, from, to string, amount int64) error {
	r, err := b.cli.Txn(ctx).Then(clientv3.OpGet(from), clientv3.OpGet(to)).Commit()
	if err != nil {
		return err
	}
	var bal [2]int64
	var rev [2]int64
	for i, rr := range r.Responses {
		kvs := rr.GetResponseRange().Kvs
		if len(kvs) == 0 {
			return fmt.Errorf("bank: account %d missing", i)
		}
		if bal[i], err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
			return err
		}
		rev[i] = kvs[0].ModRevision
	}
	if bal[0] < amount {
		return ycsb.ErrInsufficient
	}
	w, err := b.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(from), "=", rev[0]), clientv3.Compare(clientv3.ModRevision(to), "=", rev[1])).
		Then(clientv3.OpPut(from, strconv.FormatInt(bal[0]-amount, 10)), clientv3.OpPut(to, strconv.FormatInt(bal[1]+amount, 10))).
		Commit()
	if err != nil {
		return err
	}
	if !w.Succeeded {
		return ycsb.ErrConflict
	}
	return nil
}

// compactAll compacts the history up to the current revision and waits
// for the members to apply it physically, unless the current revision is
// the one compacted to last (a read-only phase writes nothing: etcd
// refuses to compact a compacted revision again).
func compactAll(ctx context.Context, cli *clientv3.Client, last int64, timeout time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 6*timeout)
	defer cancel()
	resp, err := cli.Get(ctx, ycsb.KeyPrefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("compact: current revision: %w", err)
	}
	rev := resp.Header.Revision
	if rev <= last {
		return last, nil
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !strings.Contains(err.Error(), "compacted") {
		return 0, fmt.Errorf("compact to revision %d: %w", rev, err)
	}
	return rev, nil
}

// etcdDB is YCSB's DB on etcd: a record is a key ("user...") whose value
// is the record's one field. Reads and scans are etcd's default,
// linearizable, Get.
type etcdDB struct{ cli *clientv3.Client }

func (d etcdDB) Read(ctx context.Context, key string) ([]byte, error) {
	resp, err := d.cli.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, ycsb.ErrNotFound
	}
	return resp.Kvs[0].Value, nil
}

func (d etcdDB) Update(ctx context.Context, key string, value []byte) error {
	_, err := d.cli.Put(ctx, key, string(value))
	return err
}

func (d etcdDB) Insert(ctx context.Context, key string, value []byte) error {
	_, err := d.cli.Put(ctx, key, string(value))
	return err
}

// Scan is a range Get from start to the end of the records' key space,
// limited to n keys (etcd returns them in key order).
func (d etcdDB) Scan(ctx context.Context, start string, n int) (int, error) {
	resp, err := d.cli.Get(ctx, start, clientv3.WithRange(ycsb.KeyPrefixEnd), clientv3.WithLimit(int64(n)))
	if err != nil {
		return 0, err
	}
	return len(resp.Kvs), nil
}

// ReadModifyWrite is a Get then a Put, as YCSB's core workload issues it.
func (d etcdDB) ReadModifyWrite(ctx context.Context, key string, value []byte) ([]byte, error) {
	v, err := d.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	return v, d.Update(ctx, key, value)
}

// syncMetrics are the members' disk syncs: WAL fdatasyncs (each makes raft
// entries durable before they are acknowledged) and backend (bbolt)
// commits. (bench/etcd's bench command counts the same.)
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
