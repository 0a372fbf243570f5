package log

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"strata/bench/kit"
	"strata/internal/freeport"
)

// KafkaVersion is the peer's version (Maven Central).
const KafkaVersion = "4.4.0"

// kafkaArtifacts are what the peer's classpath is resolved from.
var kafkaArtifacts = []string{
	"org.apache.kafka:kafka_2.13:" + KafkaVersion,
	"org.apache.kafka:kafka-tools:" + KafkaVersion,
	"org.slf4j:slf4j-simple:2.0.20",
}

// kafkaClasspath resolves the brokers' and tools' classpath with Maven
// (cached in the user cache directory after the first run).
func kafkaClasspath(ctx context.Context, progress io.Writer) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "strata", "bench", "kafka-"+KafkaVersion)
	cpFile := filepath.Join(dir, "classpath.txt")
	if b, err := os.ReadFile(cpFile); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("kafka: mvn is not on PATH to resolve %v (on Debian: apt-get install maven): %w", kafkaArtifacts, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var deps strings.Builder
	for _, a := range kafkaArtifacts {
		p := strings.Split(a, ":")
		fmt.Fprintf(&deps, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", p[0], p[1], p[2])
	}
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>strata.bench</groupId><artifactId>kafka-peer</artifactId><version>1</version>
  <dependencies>
` + deps.String() + `  </dependencies>
</project>
`
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "kafka: resolving %s with Maven (first run only)\n", strings.Join(kafkaArtifacts, ", "))
	cmd := exec.CommandContext(ctx, mvn, "-q", "dependency:build-classpath", "-Dmdep.outputFile=classpath.tmp")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kafka: mvn dependency:build-classpath: %w\n%s", err, kit.Tail(string(out), 20))
	}
	b, err := os.ReadFile(filepath.Join(dir, "classpath.tmp"))
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("kafka: no classpath from Maven: %v", err)
	}
	if err := os.Rename(filepath.Join(dir, "classpath.tmp"), cpFile); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// kafkaCluster is three brokers in KRaft mode (each also a controller).
type kafkaCluster struct {
	cp        string
	procs     []*kit.Proc
	bootstrap string // host:port,...
	durable   bool   // log.flush.interval.messages=1
	dir       string
}

// kafkaSettings are the broker settings both variants share.
func kafkaSettings(durable bool) string {
	s := "3 brokers in KRaft mode (process.roles=broker,controller), one JVM each with kafka-server-start.sh's default heap (-Xmx1G -Xms1G), PLAINTEXT on loopback; topic of 1 partition, replication factor 3, min.insync.replicas=2; producer acks=all"
	if durable {
		return s + "; log.flush.interval.messages=1 (an fsync of the partition log per message, before the leader acknowledges: the durability Strata's wormservers give)"
	}
	return s + "; Kafka's default flushing (no fsync per message: the page cache and replication are its durability)"
}

// startKafka formats and starts three brokers under dir, and creates the
// topic.
func startKafka(ctx context.Context, cp, dir string, durable bool, progress io.Writer) (*kafkaCluster, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	ports, err := freeport.TCP(6)
	if err != nil {
		return nil, err
	}
	var voters, bootstrap []string
	for i := range 3 {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[3+i]))
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	clusterID := base64.RawURLEncoding.EncodeToString(id)
	k := &kafkaCluster{cp: cp, bootstrap: strings.Join(bootstrap, ","), durable: durable, dir: dir}
	for i := range 3 {
		bdir := filepath.Join(dir, fmt.Sprintf("broker-%d", i+1))
		if err := os.MkdirAll(bdir, 0o755); err != nil {
			return nil, err
		}
		props := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%s
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
group.initial.rebalance.delay.ms=0
`, i+1, strings.Join(voters, ","), ports[i], ports[3+i], ports[i], filepath.Join(bdir, "data"))
		if durable {
			props += "log.flush.interval.messages=1\n"
		}
		pf := filepath.Join(bdir, "server.properties")
		if err := os.WriteFile(pf, []byte(props), 0o644); err != nil {
			return nil, err
		}
		if _, err := kit.Output(ctx, kit.Cmd{Name: fmt.Sprintf("kafka format %d", i+1),
			Argv: []string{"java", "-cp", cp, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", pf}}); err != nil {
			return nil, fmt.Errorf("kafka: formatting broker %d: %w", i+1, err)
		}
	}
	for i := range 3 {
		p, err := kit.Start(ctx, kit.Cmd{Name: fmt.Sprintf("kafka broker %d", i+1),
			Argv: []string{"java", "-Xmx1G", "-Xms1G", "-cp", k.cp, "kafka.Kafka", filepath.Join(dir, fmt.Sprintf("broker-%d", i+1), "server.properties")}})
		if err != nil {
			k.stop()
			return nil, fmt.Errorf("kafka: starting broker %d: %w", i+1, err)
		}
		k.procs = append(k.procs, p)
	}
	for _, b := range bootstrap {
		if err := waitPort(ctx, b, 2*time.Minute); err != nil {
			k.stop()
			return nil, fmt.Errorf("kafka: broker at %s: %w", b, err)
		}
	}
	var err2 error
	for attempt := range 5 {
		_, err2 = kit.Output(ctx, kit.Cmd{Name: "kafka topics",
			Argv: []string{"java", "-cp", cp, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", k.bootstrap, "--create", "--topic", topic,
				"--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2"}})
		if err2 == nil {
			break
		}
		fmt.Fprintf(progress, "kafka: creating the topic (attempt %d): %v\n", attempt+1, firstLine(err2))
		time.Sleep(2 * time.Second)
	}
	if err2 != nil {
		k.stop()
		return nil, fmt.Errorf("kafka: creating topic %s: %w", topic, err2)
	}
	return k, nil
}

const topic = "strata-bench"

func waitPort(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after %v: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (k *kafkaCluster) stop() {
	for _, p := range k.procs {
		p.Stop()
	}
}

// produce runs Kafka's own load generator (ProducerPerformance, one
// producer: asynchronous, batching) for n records of size bytes at rate
// records a second (-1: as fast as it goes) and parses its summary.
func (k *kafkaCluster) produce(ctx context.Context, n, warmup, size, rate int) (Result, error) {
	out, err := kit.Output(ctx, kit.Cmd{Name: "kafka producer",
		Argv: []string{"java", "-Xmx512M", "-cp", k.cp, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
			"--num-records", strconv.Itoa(n + warmup), "--warmup-records", strconv.Itoa(warmup), "--record-size", strconv.Itoa(size), "--throughput", strconv.Itoa(rate),
			"--producer-props", "bootstrap.servers=" + k.bootstrap, "acks=all"}})
	if os.Getenv("STRATA_KAFKA_OUT") != "" {
		fmt.Fprintf(os.Stderr, "%s\n", out)
	}
	if err != nil {
		return Result{}, err
	}
	return parseProducerSummary(string(out))
}

// The summary lines ProducerPerformance prints at the end: the whole
// run's ("100000 records sent, 9930.1 records/sec (9.70 MB/sec), 2845.33
// ms avg latency, 4041.00 ms max latency, 2919 ms 50th, 3932 ms 95th, 4012
// ms 99th, 4038 ms 99.9th.") and, with --warmup-records, the steady
// state's after it ("90000 steady state records sent, ..."), which is the
// one taken when present.
var summaryRE = regexp.MustCompile(`(\d+) (steady state )?records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th`)

func parseProducerSummary(out string) (Result, error) {
	m := summaryRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return Result{}, fmt.Errorf("kafka producer: no summary line in its output:\n%s", kit.Tail(out, 5))
	}
	last := m[len(m)-1]
	for _, x := range m {
		if x[2] != "" {
			last = x
		}
	}
	f := func(i int) float64 { v, _ := strconv.ParseFloat(last[i], 64); return v }
	n, _ := strconv.Atoi(last[1])
	return Result{Appends: n, PerSec: f(3), P50us: f(6) * 1000, P99us: f(8) * 1000}, nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

var errNoJava = errors.New("java is not on PATH")
