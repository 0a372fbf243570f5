package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"strata/bench/kit"
	logbench "strata/bench/log"
	"strata/wormlog"
)

func benchLogCmd() *cobra.Command {
	var (
		quick, asJSON, noKafka                         bool
		dir                                            string
		records, latency, appenders, rounds, valueSize int
		curves                                         bool
		plotDir, curveAppenders, curveServers          string
		curveRecords, curveServerRecords               int
	)
	c := &cobra.Command{
		Use:   "log",
		Short: "Shared log: WormLog vs Apache Kafka " + logbench.KafkaVersion + " (3 servers each, 1 KiB records, acks from a majority); --curves: WormLog over paxos vs chain",
		Long: `Strata: 3 persistent wormservers ("strata wor serve", fdatasync before
every reply) and 2 log servers ("strata log serve": the sequencer and a
standby); this process appends through a wormlog.Client (a token from the
sequencer, then one write to the wormservers).

Kafka ` + logbench.KafkaVersion + ` (Maven Central, resolved with mvn into the user cache on first
use; Java on PATH): 3 brokers in KRaft mode, a topic of 1 partition with
replication factor 3 and min.insync.replicas=2, Kafka's own
ProducerPerformance (acks=all). Twice: kafka-fsync with
log.flush.interval.messages=1 (an fsync per message, as Strata) and
kafka-default with Kafka's default flushing (labelled: not the same
durability).

Cells: max, the append throughput (Strata: --appenders concurrent
appenders, one append outstanding each; Kafka: one asynchronous producer
at --throughput -1, its batching); one, one producer unloaded at 100
records a second on both sides (Strata: one appender, paced; Kafka:
--throughput 100) for the p50. Each cell after a warm-up of
a tenth of its records, not measured (Kafka: --warmup-records, its steady
state line). Fresh servers every round;
rounds alternate which system goes first. Ratios: appends/s strata/kafka
and p50 kafka/strata, median over rounds (x > 1: Strata better).

--quick: 5,000 records, 200 latency records, 1 round.

--curves runs, instead of the comparison (no Kafka), the WormSpace paper's
Figures 11 and 12 (§7.3) for WormLog over both WOR engines, paxos and
chain, fresh persistent servers (and 2 log servers) at every point:
  latency-throughput (Figure 11): 3 wormservers, --curve-appenders
    concurrent appenders (one append outstanding each), --curve-records
    appends per point; appends/s, p50 and p99 per point;
  latency-servers (Figure 12): one appender, --curve-servers wormservers,
    --curve-server-records appends per point; chain writes the servers one
    after another, paxos a majority in parallel.
Each point after a warm-up of a tenth of its appends. It prints the points
as tables (progress on stderr; --json: the points under "results") and
draws them (p50 and p99 panels) into --plot-dir as
` + logbench.PlotThroughput + ` and ` + logbench.PlotServers + `.
--curves --quick: appenders 1,8,64, servers 3,5,7, 2,000 and 300 appends
per point.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"records": "5000", "latency-records": "200", "rounds": "1",
					"curve-appenders": "1,8,64", "curve-servers": "3,5,7", "curve-records": "2000", "curve-server-records": "300"}); err != nil {
					return err
				}
			}
			if valueSize < 1 || valueSize > wormlog.MaxEntry {
				return fmt.Errorf("--value-size %d: want 1..%d", valueSize, wormlog.MaxEntry)
			}
			if curves {
				cfg := logbench.CurveConfig{Dir: dir, PlotDir: plotDir, ValueSize: valueSize, Records: curveRecords, ServerRecords: curveServerRecords, Progress: cmd.ErrOrStderr()}
				var err error
				if curveAppenders != "" {
					if cfg.Appenders, err = parseInts("--curve-appenders", curveAppenders, 1, 1024); err != nil {
						return err
					}
				}
				if curveServers != "" {
					if cfg.Servers, err = parseInts("--curve-servers", curveServers, 1, 15); err != nil {
						return err
					}
				}
				rep, err := logbench.RunCurves(ctx, cfg)
				return printLogReport(cmd, rep, err, asJSON)
			}
			rep, err := logbench.Run(ctx, logbench.Config{Dir: dir, Records: records, Latency: latency, ValueSize: valueSize,
				Appenders: appenders, Rounds: rounds, Kafka: !noKafka, Progress: cmd.ErrOrStderr()})
			return printLogReport(cmd, rep, err, asJSON)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 5,000 records, 200 latency records, 1 round (--curves: a short sweep, see above)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&noKafka, "no-kafka", false, "skip the Kafka peer: no ratios")
	f.StringVar(&dir, "dir", "bench-data/log", "the servers' data (emptied first)")
	f.IntVar(&records, "records", 50000, "records per throughput cell")
	f.IntVar(&latency, "latency-records", 3000, "records of the one-producer latency cell (100 a second on both sides: 30 s, so that Kafka's JVMs warm up)")
	f.IntVar(&appenders, "appenders", 64, "Strata's concurrent appenders in the throughput cell")
	f.IntVar(&rounds, "rounds", 3, "rounds, alternating which system goes first")
	f.IntVar(&valueSize, "value-size", 1024, "record size in bytes (both sides)")
	f.BoolVar(&curves, "curves", false, "run only the paxos vs chain curves (Figures 11 and 12), no Kafka")
	f.StringVar(&plotDir, "plot-dir", "docs/img", "--curves: draw "+logbench.PlotThroughput+" and "+logbench.PlotServers+" here ('' to skip)")
	f.StringVar(&curveAppenders, "curve-appenders", "1,4,16,64", "--curves: concurrent appenders of the latency-throughput points ('' to skip that curve)")
	f.StringVar(&curveServers, "curve-servers", "3,5,7,9", "--curves: wormservers of the latency-servers points ('' to skip that curve)")
	f.IntVar(&curveRecords, "curve-records", 10000, "--curves: appends measured per latency-throughput point")
	f.IntVar(&curveServerRecords, "curve-server-records", 2000, "--curves: appends measured per latency-servers point")
	return c
}

// printLogReport prints a bench log report (as JSON with asJSON) and
// returns the run's error.
func printLogReport(cmd *cobra.Command, rep *kit.Report, err error, asJSON bool) error {
	if rep == nil {
		return err
	}
	if asJSON {
		if jerr := rep.WriteJSON(cmd.OutOrStdout()); jerr != nil {
			return jerr
		}
	} else {
		logbench.Print(cmd.OutOrStdout(), rep)
	}
	return err
}
