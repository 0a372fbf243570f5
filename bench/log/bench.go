// Package log is `strata bench log`: WormLog (the shared log over
// Strata's write-once registers) against Apache Kafka, three servers
// each on loopback, 1 KiB records, every record acknowledged by a
// majority.
//
// Strata runs three persistent `strata wor serve` processes (fdatasync
// before every reply) and two `strata log serve` processes (the
// sequencer and a standby); the harness appends through a wormlog.Client
// with A appenders, each with one append outstanding (a token from the
// sequencer, then one write). Kafka runs three brokers in KRaft mode
// (one JVM each), a topic of one partition with replication factor 3 and
// min.insync.replicas=2, and its own load generator (ProducerPerformance,
// one asynchronous producer with acks=all and its default batching).
// Kafka runs twice: with log.flush.interval.messages=1 (an fsync per
// message: Strata's durability) and with its default flushing (labelled:
// no fsync). Rounds alternate which system goes first; ratios pair the
// systems within a round and are summarized by their median.
package log

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/internal/wake"
	"strata/wormlog"
)

// Config is one run.
type Config struct {
	Strata    string // the strata binary the servers run (default: this executable)
	Dir       string // the servers' data (emptied first)
	Records   int    // records per throughput cell
	Latency   int    // records of the one-producer latency cell
	ValueSize int
	Appenders int // Strata's concurrent appenders in the throughput cell
	Rounds    int
	Kafka     bool
	Progress  io.Writer
}

// Result is one cell.
type Result struct {
	System  string  `json:"system"` // strata, kafka-fsync, kafka-default
	Round   int     `json:"round"`
	Cell    string  `json:"cell"` // "max" (throughput) or "one" (one producer, unloaded)
	Clients int     `json:"clients"`
	Appends int     `json:"appends"`
	PerSec  float64 `json:"appends_per_sec"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
}

func (cfg *Config) check() error {
	if cfg.Records < 100 || cfg.Latency < 10 || cfg.Rounds < 1 || cfg.Appenders < 1 {
		return fmt.Errorf("records %d (at least 100), latency records %d (at least 10), rounds %d, appenders %d: out of range", cfg.Records, cfg.Latency, cfg.Rounds, cfg.Appenders)
	}
	if cfg.ValueSize < 1 || cfg.ValueSize > wormlog.MaxEntry {
		return fmt.Errorf("value size %d: want 1..%d", cfg.ValueSize, wormlog.MaxEntry)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Strata == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.Strata = exe
	}
	return nil
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rep := kit.NewReport("log", kit.Settings{"records": cfg.Records, "latency records": cfg.Latency, "value size": cfg.ValueSize, "rounds": cfg.Rounds,
		"cells": "max: Strata with " + fmt.Sprint(cfg.Appenders) + " appenders, one append outstanding each; Kafka's ProducerPerformance, one producer, --throughput -1. one: 1 appender (Strata) or producer (Kafka), 100 records/s (unloaded)"})
	rep.System("strata", kit.Settings{
		"version":     kit.StrataVersion(),
		"wormservers": "3 `strata wor serve` processes (UDP on 127.0.0.1, paxos engine), persistent: a journal file each under the data folder; a reply leaves after a journal flush ending in fdatasync",
		"log servers": "2 `strata log serve` processes (the sequencer and a standby), segments of 1,024 registers pre-captured ahead of need",
		"client":      "a wormlog.Client in the harness process: token from the sequencer, then one write to the wormservers (acknowledged by 2 of 3, each durable)",
	})
	var cp string
	if cfg.Kafka {
		if _, err := exec.LookPath("java"); err != nil {
			return rep, fmt.Errorf("kafka: %w", errNoJava)
		}
		var err error
		if cp, err = kafkaClasspath(ctx, cfg.Progress); err != nil {
			return rep, err
		}
		rep.System("kafka-fsync", kit.Settings{"version": KafkaVersion, "brokers": kafkaSettings(true), "client": "org.apache.kafka.tools.ProducerPerformance (Kafka's own), acks=all, default batching (linger.ms, batch.size)"})
		rep.System("kafka-default", kit.Settings{"version": KafkaVersion, "brokers": kafkaSettings(false), "client": "as kafka-fsync", "label": "not the same durability: no fsync per message"})
	}
	var results []Result
	systems := []string{"strata"}
	if cfg.Kafka {
		systems = append(systems, "kafka-fsync", "kafka-default")
	}
	for r := range cfg.Rounds {
		for _, sys := range kit.Order(r, systems) {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			var rs []Result
			var err error
			if sys == "strata" {
				rs, err = strataRound(ctx, cfg, r)
			} else {
				rs, err = kafkaRound(ctx, cfg, cp, sys, r)
			}
			if err != nil {
				rep.Fail("round %d %s: %v", r+1, sys, firstLine(err))
				fmt.Fprintf(cfg.Progress, "FAILED: round %d %s: %v\n", r+1, sys, err)
				continue
			}
			for _, x := range rs {
				fmt.Fprintf(cfg.Progress, "round %d %-13s %-3s clients=%-3d %8.0f appends/s  p50 %8.0f µs  p99 %8.0f µs\n", r+1, x.System, x.Cell, x.Clients, x.PerSec, x.P50us, x.P99us)
			}
			results = append(results, rs...)
		}
	}
	rep.Results = results
	ratios := kit.Ratios{}
	for _, s := range results {
		if s.System != "strata" {
			continue
		}
		for _, p := range results {
			if p.System == "strata" || p.Round != s.Round || p.Cell != s.Cell {
				continue
			}
			if s.Cell == "max" {
				ratios.Higher(fmt.Sprintf("appends/s strata/%s max", p.System), s.PerSec, p.PerSec)
			} else {
				ratios.Lower(fmt.Sprintf("p50 strata/%s one producer", p.System), s.P50us, p.P50us)
			}
		}
	}
	ratios.Summarize(rep)
	if len(rep.Failures) > 0 {
		return rep, fmt.Errorf("%w: %d", kit.ErrPeerFailed, len(rep.Failures))
	}
	return rep, nil
}

// strataRound starts fresh servers and measures both cells.
func strataRound(ctx context.Context, cfg Config, r int) ([]Result, error) {
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("strata-r%d", r+1))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	appends := warmupOf(cfg.Latency) + cfg.Latency + warmupOf(cfg.Records) + cfg.Records
	cl, err := startCluster(ctx, cfg.Strata, dir, 3, "paxos", journalBlocksFor(appends))
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	c := cl.c
	// Each cell after a warm-up of a tenth of its records, as Kafka's
	// producer runs with --warmup-records.
	// The one-producer cell at Kafka's rate (oneRate), so that both sides
	// time the same unloaded appends.
	if _, err := appendCell(ctx, c, 1, warmupOf(cfg.Latency), cfg.ValueSize, oneRate); err != nil {
		return nil, err
	}
	one, err := appendCell(ctx, c, 1, cfg.Latency, cfg.ValueSize, oneRate)
	if err != nil {
		return nil, err
	}
	if _, err := appendCell(ctx, c, cfg.Appenders, warmupOf(cfg.Records), cfg.ValueSize, 0); err != nil {
		return nil, err
	}
	top, err := appendCell(ctx, c, cfg.Appenders, cfg.Records, cfg.ValueSize, 0)
	if err != nil {
		return nil, err
	}
	one.System, one.Round, one.Cell = "strata", r+1, "one"
	top.System, top.Round, top.Cell = "strata", r+1, "max"
	return []Result{one, top}, nil
}

// warmupOf is the warm-up before a cell of n records: a tenth, at least
// 10 (both systems).
func warmupOf(n int) int { return max(n/10, 10) }

// defaultLogBase is strata log serve's default --base.
const defaultLogBase = 1 << 37

// oneRate is the one-producer cell's rate, records a second, on both
// sides (Kafka's ProducerPerformance --throughput).
const oneRate = 100

// appendCell appends n records of size bytes with k appenders, each
// starting its next append once the last returns, and no sooner than
// rate allows in all (0: no limit); latency is from the call to its
// return, throughput over the whole cell.
func appendCell(ctx context.Context, c *wormlog.Client, k, n, size, rate int) (Result, error) {
	var mu sync.Mutex
	var lats []time.Duration
	var firstErr error
	next := 0
	value := make([]byte, size)
	start := time.Now()
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				mu.Lock()
				if next >= n || firstErr != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if rate > 0 {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 && !wake.Sleep(ctx, d) {
						return
					}
				}
				t := time.Now()
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := c.Append(actx, value)
				cancel()
				d := time.Since(t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lats = append(lats, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return Result{}, fmt.Errorf("append: %w", firstErr)
	}
	slices.Sort(lats)
	us := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))].Nanoseconds()) / 1e3 }
	return Result{Clients: k, Appends: len(lats), PerSec: float64(len(lats)) / el.Seconds(), P50us: us(0.5), P99us: us(0.99)}, nil
}

// kafkaRound starts fresh brokers of one durability and measures both
// cells with Kafka's producer.
func kafkaRound(ctx context.Context, cfg Config, cp, sys string, r int) ([]Result, error) {
	durable := sys == "kafka-fsync"
	k, err := startKafka(ctx, cp, filepath.Join(cfg.Dir, fmt.Sprintf("%s-r%d", sys, r+1)), durable, cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer k.stop()
	// Warm-up, as Strata's first append: a few records.
	if _, err := k.produce(ctx, 100, 0, cfg.ValueSize, -1); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	one, err := k.produce(ctx, cfg.Latency, warmupOf(cfg.Latency), cfg.ValueSize, 100)
	if err != nil {
		return nil, err
	}
	top, err := k.produce(ctx, cfg.Records, warmupOf(cfg.Records), cfg.ValueSize, -1)
	if err != nil {
		return nil, err
	}
	one.System, one.Round, one.Cell, one.Clients = sys, r+1, "one", 1
	top.System, top.Round, top.Cell, top.Clients = sys, r+1, "max", 1
	return []Result{one, top}, nil
}

// Print writes a report as tables: the Kafka comparison's, or the
// curves' (RunCurves).
func Print(w io.Writer, rep *kit.Report) {
	rep.PrintConfig(w)
	if ps, ok := rep.Results.([]Point); ok {
		printCurves(w, ps)
		rep.PrintRatios(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tsystem\tcell\tclients\tappends/s\tp50 µs\tp99 µs\t")
	rs, _ := rep.Results.([]Result)
	for _, x := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t\n", x.Round, x.System, x.Cell, x.Clients, x.PerSec, x.P50us, x.P99us)
	}
	tw.Flush()
	rep.PrintRatios(w)
}
