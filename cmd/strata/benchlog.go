package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	logbench "strata/bench/log"
	"strata/wormlog"
)

func benchLogCmd() *cobra.Command {
	var (
		quick, asJSON, noKafka                         bool
		dir                                            string
		records, latency, appenders, rounds, valueSize int
	)
	c := &cobra.Command{
		Use:   "log",
		Short: "Shared log: WormLog vs Apache Kafka " + logbench.KafkaVersion + " (3 servers each, 1 KiB records, acks from a majority)",
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

--quick: 5,000 records, 200 latency records, 1 round.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"records": "5000", "latency-records": "200", "rounds": "1"}); err != nil {
					return err
				}
			}
			if valueSize < 1 || valueSize > wormlog.MaxEntry {
				return fmt.Errorf("--value-size %d: want 1..%d", valueSize, wormlog.MaxEntry)
			}
			rep, err := logbench.Run(ctx, logbench.Config{Dir: dir, Records: records, Latency: latency, ValueSize: valueSize,
				Appenders: appenders, Rounds: rounds, Kafka: !noKafka, Progress: cmd.ErrOrStderr()})
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
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 5,000 records, 200 latency records, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&noKafka, "no-kafka", false, "skip the Kafka peer: no ratios")
	f.StringVar(&dir, "dir", "bench-data/log", "the servers' data (emptied first)")
	f.IntVar(&records, "records", 50000, "records per throughput cell")
	f.IntVar(&latency, "latency-records", 3000, "records of the one-producer latency cell (100 a second on both sides: 30 s, so that Kafka's JVMs warm up)")
	f.IntVar(&appenders, "appenders", 64, "Strata's concurrent appenders in the throughput cell")
	f.IntVar(&rounds, "rounds", 3, "rounds, alternating which system goes first")
	f.IntVar(&valueSize, "value-size", 1024, "record size in bytes (both sides)")
	return c
}
