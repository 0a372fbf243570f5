package wor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"strata/stack"
)

// Partitions and the directory. Segments map to partitions by segment id
// modulo the number of partitions (WormSpace §3.1). Each partition's
// configuration history lives in the directory: a separate replica set
// whose registers are never sealed; configuration epoch e of partition p
// is the value of register (DirSegment(p), e). Epoch 0 is the cluster
// file's.
const (
	// MaxPartitions bounds the partitions of a cluster.
	MaxPartitions = 1 << 16
	// DirPart is the partition number directory requests carry.
	DirPart = ^uint32(0)
	// MaxDataSegment is the highest segment id applications may use; the
	// ones above it belong to the directory.
	MaxDataSegment = MaxSegment - MaxPartitions
)

// DirSegment is the directory segment holding partition p's
// configurations.
func DirSegment(p uint32) uint64 { return MaxDataSegment + 1 + uint64(p) }

// ClusterConfig is the cluster configuration file (JSON).
type ClusterConfig struct {
	// Engine is "paxos" (default), "chain" or "ec".
	Engine string `json:"engine,omitempty"`
	// Plan is the ec engine's plan, for every partition (each must have
	// k+r servers); its fields are those of strata geo plan --json. Without
	// it an ec partition gets DefaultECPlan for its size (one failure
	// tolerated from three servers on). Only for engine "ec".
	Plan *ECPlan `json:"plan,omitempty"`
	// Plans, if present, gives each partition a plan of its own (null:
	// Plan, or the default): Pando's plans are per access set, so keys
	// read and written from different regions go in segments of
	// different partitions (segment s is in partition s mod the number of
	// partitions), each with the servers and plan the planner chose for
	// its access set. Only for engine "ec".
	Plans []*ECPlan `json:"plans,omitempty"`
	// Directory is the replica set holding the partitions' configuration
	// registers (paxos, majority quorums). It is not reconfigured.
	Directory []string `json:"directory"`
	// Partitions lists each partition's replica set.
	Partitions [][]string `json:"partitions"`
	// Epochs, if present, gives the configuration epoch of each listed
	// replica set (default 0: the initial one). "strata wor reconfigure"
	// rewrites Partitions and Epochs, so that clients started from the file
	// go straight to the current servers even when the directory is out
	// of reach.
	Epochs []uint32 `json:"epochs,omitempty"`
	// Security, if present, names the files that secure the cluster's
	// links: processes given this file use them unless their flags or
	// environment name others (docs/security.md).
	Security *Security `json:"security,omitempty"`
}

// Security names the files of a cluster's secured links
// (docs/security.md): the cluster key file that seals every datagram,
// and the TLS files of tcp: links (a directory holding ca.pem, node.pem
// and node-key.pem, or the files one by one, each overriding the
// directory's). A relative path is relative to the directory of the file
// that names it. Only file names: keys themselves are never in a
// cluster file, which clients may read.
type Security struct {
	KeyFile string `json:"key_file,omitempty"`
	TLSDir  string `json:"tls_dir,omitempty"`
	TLSCA   string `json:"tls_ca,omitempty"`
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
}

// Validate checks that s names at least one file and that TLS files
// given one by one without a directory are all three.
func (s *Security) Validate() error {
	if *s == (Security{}) {
		return errors.New("security names no file (give key_file, tls_dir, or tls_ca, tls_cert and tls_key)")
	}
	if s.TLSDir == "" && (s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "") && (s.TLSCA == "" || s.TLSCert == "" || s.TLSKey == "") {
		return errors.New("security: without tls_dir, tls_ca, tls_cert and tls_key are needed together")
	}
	return nil
}

// LoadClusterConfig reads and checks a cluster configuration file.
// Unknown keys are errors.
func LoadClusterConfig(path string) (*ClusterConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wor: cluster config: %w", err)
	}
	return ParseClusterConfig(b)
}

// ParseClusterConfig parses and checks a cluster configuration.
func ParseClusterConfig(b []byte) (*ClusterConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c ClusterConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("wor: cluster config: %w", err)
	}
	if dec.More() {
		return nil, errors.New("wor: cluster config: trailing data after the JSON object")
	}
	return &c, c.Validate()
}

// Validate checks the configuration: a known engine, a non-empty
// directory, 1..MaxPartitions partitions with non-empty replica sets and no
// server twice in one set, and for the ec engine a plan that keeps the
// quorum rules for every partition (the error names the rule broken), and
// a security section that names a file.
func (c *ClusterConfig) Validate() error {
	switch c.Engine {
	case "", "paxos", "chain", "ec":
	default:
		return fmt.Errorf("wor: cluster config: unknown engine %q (want paxos, chain or ec)", c.Engine)
	}
	if (c.Plan != nil || len(c.Plans) > 0) && c.Engine != "ec" {
		return fmt.Errorf("wor: cluster config: a plan is for engine ec, not %q", c.Engine)
	}
	if len(c.Plans) > 0 && len(c.Plans) != len(c.Partitions) {
		return fmt.Errorf("wor: cluster config: %d plans for %d partitions (one per partition, null for the default)", len(c.Plans), len(c.Partitions))
	}
	if c.Security != nil {
		if err := c.Security.Validate(); err != nil {
			return fmt.Errorf("wor: cluster config: %w", err)
		}
	}
	if len(c.Directory) == 0 {
		return errors.New("wor: cluster config: no directory servers")
	}
	if err := distinct("directory", c.Directory); err != nil {
		return err
	}
	if len(c.Partitions) == 0 || len(c.Partitions) > MaxPartitions {
		return fmt.Errorf("wor: cluster config: %d partitions (want 1..%d)", len(c.Partitions), MaxPartitions)
	}
	if len(c.Epochs) != 0 && len(c.Epochs) != len(c.Partitions) {
		return fmt.Errorf("wor: cluster config: %d epochs for %d partitions", len(c.Epochs), len(c.Partitions))
	}
	for i, p := range c.Partitions {
		if len(p) == 0 {
			return fmt.Errorf("wor: cluster config: partition %d has no servers", i)
		}
		if err := distinct(fmt.Sprintf("partition %d", i), p); err != nil {
			return err
		}
		if c.Engine == "ec" {
			if _, err := c.ecPlan(i, len(p)); err != nil {
				return fmt.Errorf("wor: cluster config: partition %d: %w", i, err)
			}
		}
	}
	return nil
}

// ecPlan is the plan of ec partition part, of n servers: its own in
// Plans, else Plan, else the default for n.
func (c *ClusterConfig) ecPlan(part, n int) (ECPlan, error) {
	p := c.Plan
	if part < len(c.Plans) && c.Plans[part] != nil {
		p = c.Plans[part]
	}
	if p == nil {
		return EngineECPlan(n)
	}
	return *p, p.Validate(n)
}

func distinct(what string, servers []string) error {
	seen := map[string]bool{}
	for _, s := range servers {
		if s == "" {
			return fmt.Errorf("wor: cluster config: %s: empty server address", what)
		}
		if seen[s] {
			return fmt.Errorf("wor: cluster config: %s lists %s twice", what, s)
		}
		seen[s] = true
	}
	return nil
}

func addrs(ss []string) []stack.Addr {
	out := make([]stack.Addr, len(ss))
	for i, s := range ss {
		out[i] = stack.Addr(s)
	}
	return out
}

// partConfig is one epoch of a partition's configuration, as stored in
// the directory.
type partConfig struct {
	Epoch   uint32   `json:"epoch"`
	Servers []string `json:"servers"`
}

// partEngine is what the cluster needs of an engine besides Engine: a
// write at a resolved ballot, so that a write interrupted by a
// reconfiguration is re-sent unchanged to the new configuration.
type partEngine interface {
	Engine
	writeAt(addr, ballot uint64, v []byte, written bool, cb func(error))
	segWriteAt(seg, start, ballot uint64, vals [][]byte, cb func(error))
}

// route is a partition's current configuration and engine.
type route struct {
	cfg partConfig
	eng partEngine
}

// Cluster is an Engine over a partitioned cluster: it routes each call to
// its segment's partition and, when a partition's servers report a sealed
// or not-yet-active configuration, fetches the newest one from the
// directory and retries, so applications keep running across
// reconfigurations. Captures stay valid across a reconfiguration (the
// promises move to the new servers with the state).
type Cluster struct {
	node    *stack.Node
	timeout time.Duration
	engine  string
	plan    *ECPlan   // the ec engine's plan (nil: DefaultECPlan per partition)
	plans   []*ECPlan // per partition, overriding plan (ClusterConfig.Plans)
	dir     *Paxos
	*ballots
	hub    *notifyHub    // shared by the partitions' engines
	counts *QuorumCounts // shared by the partitions' paxos engines

	dirServers []string

	mu      sync.Mutex
	routes  []*route
	fetched []bool // the directory was consulted for the partition
	// The ec partitions' proposers (SetECProposers), guarded by mu: the
	// leader of the leader fallback and the delegate of partial
	// delegation; "" for none.
	ecLeader, ecDelegate stack.Addr
}

var _ Engine = (*Cluster)(nil)

// maxRouteRetries bounds the retries of one call after sealed or
// not-ready answers.
const maxRouteRetries = 20

// NewCluster returns the cluster engine for client id (unique among the
// cluster's clients) over node, whose stack must provide RPC.
func NewCluster(node *stack.Node, cfg *ClusterConfig, id uint64, timeout time.Duration) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := newBallots(id)
	if err != nil {
		return nil, err
	}
	c := &Cluster{node: node, timeout: timeout, engine: cfg.Engine, plan: cfg.Plan, plans: slices.Clone(cfg.Plans), ballots: b, hub: &notifyHub{}, counts: &QuorumCounts{}}
	c.dir = &Paxos{node: node, replicas: addrs(cfg.Directory), timeout: timeout, conf: conf{part: DirPart}, ballots: b, counts: c.counts}
	for i, p := range cfg.Partitions {
		var ep uint32
		if len(cfg.Epochs) > 0 {
			ep = cfg.Epochs[i]
		}
		c.routes = append(c.routes, c.newRoute(uint32(i), partConfig{Epoch: ep, Servers: slices.Clone(p)}))
	}
	c.dirServers = slices.Clone(cfg.Directory)
	c.fetched = make([]bool, len(c.routes))
	return c, nil
}

func (c *Cluster) newRoute(part uint32, pc partConfig) *route {
	cf := conf{part: part, epoch: pc.Epoch}
	var e partEngine
	switch c.engine {
	case "ec":
		// Validate checked the plan for the configuration's partitions;
		// reconfiguration, which could change a partition's size, is
		// refused for ec.
		plan, err := (&ClusterConfig{Plan: c.plan, Plans: c.plans}).ecPlan(int(part), len(pc.Servers))
		codec, cerr := newSplitCodec(len(pc.Servers), plan.K)
		if err != nil || cerr != nil {
			e = &brokenRoute{err: fmt.Errorf("wor: partition %d: %w", part, errors.Join(err, cerr))}
			break
		}
		e = &EC{node: c.node, servers: addrs(pc.Servers), timeout: c.timeout, plan: plan, codec: codec, conf: cf, ballots: c.ballots, hub: c.hub,
			leader: c.ecLeader, delegate: c.ecDelegate} // c.mu is held, or c is not shared yet
	case "chain":
		e = &Chain{node: c.node, chain: addrs(pc.Servers), timeout: c.timeout, conf: cf, ballots: c.ballots, hub: c.hub}
	default:
		e = &Paxos{node: c.node, replicas: addrs(pc.Servers), timeout: c.timeout, conf: cf, ballots: c.ballots, hub: c.hub, counts: c.counts}
	}
	return &route{cfg: pc, eng: e}
}

// QuorumStats reports what the cluster's paxos engines (the directory's
// included) did beyond asking one majority (zero for the chain engine).
func (c *Cluster) QuorumStats() QuorumStats { return c.counts.snapshot() }

// ClusterConfig returns the configuration this client knows, in the
// file's form (with every partition's current epoch).
func (c *Cluster) ClusterConfig() *ClusterConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &ClusterConfig{Engine: c.engine, Plan: c.plan, Plans: slices.Clone(c.plans), Directory: slices.Clone(c.dirServers)}
	for _, r := range c.routes {
		out.Partitions = append(out.Partitions, slices.Clone(r.cfg.Servers))
		out.Epochs = append(out.Epochs, r.cfg.Epoch)
	}
	return out
}

// Partitions is the number of partitions.
func (c *Cluster) Partitions() int { return len(c.routes) }

// PartitionOf is the partition holding segment seg.
func (c *Cluster) PartitionOf(seg uint64) uint32 { return uint32(seg % uint64(len(c.routes))) }

// Config returns partition part's configuration as this client knows it.
func (c *Cluster) Config(part uint32) (epoch uint32, servers []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.routes[part]
	return r.cfg.Epoch, slices.Clone(r.cfg.Servers)
}

// with runs op on part's current route, first consulting the directory
// once, and again (then retrying) whenever the route's servers answer
// that its epoch is sealed or not active yet.
func (c *Cluster) with(part uint32, op func(*route, func(error) bool)) {
	var attempt func(n int, refresh bool)
	attempt = func(n int, refresh bool) {
		run := func() {
			c.mu.Lock()
			r := c.routes[part]
			c.mu.Unlock()
			op(r, func(err error) bool {
				if n >= maxRouteRetries || !(errors.Is(err, ErrSealed) || errors.Is(err, ErrNotReady)) {
					return false
				}
				if errors.Is(err, ErrNotReady) {
					// A reconfiguration is installing state: give it time.
					c.node.AfterFunc(time.Duration(n+1)*2*time.Millisecond, func() { attempt(n+1, true) })
				} else {
					attempt(n+1, true)
				}
				return true
			})
		}
		c.mu.Lock()
		first := !c.fetched[part]
		c.fetched[part] = true
		c.mu.Unlock()
		if refresh || first {
			c.refresh(part, func(error) { run() }) // on failure, the current route is tried
			return
		}
		run()
	}
	attempt(0, false)
}

// Refresh reads partition part's newest configuration from the directory.
func (c *Cluster) Refresh(ctx context.Context, part uint32) error {
	if int(part) >= len(c.routes) {
		return fmt.Errorf("wor: no partition %d", part)
	}
	return c.do(ctx, func(cb func(error)) { c.refresh(part, cb) })
}

// refresh reads part's newest configuration from the directory.
func (c *Cluster) refresh(part uint32, cb func(error)) {
	c.mu.Lock()
	from := c.routes[part].cfg.Epoch
	c.mu.Unlock()
	var next func(e uint32, found *partConfig)
	next = func(e uint32, found *partConfig) {
		c.dir.Read(Addr(DirSegment(part), uint64(e)), func(v []byte, err error) {
			if err == nil {
				var pc partConfig
				if jerr := json.Unmarshal(v, &pc); jerr != nil || pc.Epoch != e || len(pc.Servers) == 0 {
					cb(fmt.Errorf("wor: directory entry for partition %d epoch %d is malformed", part, e))
					return
				}
				next(e+1, &pc)
				return
			}
			if !errors.Is(err, ErrUnwritten) {
				cb(fmt.Errorf("wor: read partition %d's configuration: %w", part, err))
				return
			}
			if found != nil {
				c.mu.Lock()
				if c.routes[part].cfg.Epoch < found.Epoch {
					c.routes[part] = c.newRoute(part, *found)
				}
				c.mu.Unlock()
			}
			cb(nil)
		})
	}
	next(from+1, nil)
}

func segOf(addr uint64) uint64 { return addr >> offsetBits }

// Capture implements Engine.
func (c *Cluster) Capture(addr uint64, cb func(CaptureID, error)) {
	c.with(c.PartitionOf(segOf(addr)), func(r *route, retry func(error) bool) {
		r.eng.Capture(addr, func(cid CaptureID, err error) {
			if err != nil && retry(err) {
				return
			}
			cb(cid, err)
		})
	})
}

// Write implements Engine. The ballot and value are resolved once, so a
// retry after a reconfiguration sends the same accept.
func (c *Cluster) Write(addr uint64, value []byte, cid CaptureID, cb func(error)) {
	b, v, written, err := c.take(addr, value, cid)
	if err != nil {
		cb(err)
		return
	}
	c.with(c.PartitionOf(segOf(addr)), func(r *route, retry func(error) bool) {
		r.eng.writeAt(addr, b, v, written, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(err)
		})
	})
}

// Read implements Engine.
func (c *Cluster) Read(addr uint64, cb func([]byte, error)) {
	c.with(c.PartitionOf(segOf(addr)), func(r *route, retry func(error) bool) {
		r.eng.Read(addr, func(v []byte, err error) {
			if err != nil && retry(err) {
				return
			}
			cb(v, err)
		})
	})
}

// Trim implements Engine.
func (c *Cluster) Trim(seg uint64, cb func(error)) {
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		r.eng.Trim(seg, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(err)
		})
	})
}

// SegCapture implements Engine.
func (c *Cluster) SegCapture(seg, start, end uint64, cb func(CaptureID, error)) {
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		r.eng.SegCapture(seg, start, end, func(cid CaptureID, err error) {
			if err != nil && retry(err) {
				return
			}
			cb(cid, err)
		})
	})
}

// SegWrite implements Engine; like Write, it resolves ballot and values
// once, so a retry after a reconfiguration re-sends the same accepts.
func (c *Cluster) SegWrite(seg, start uint64, values [][]byte, cid CaptureID, cb func([][]byte, error)) {
	b, vals, err := c.takeSeg(seg, start, values, cid)
	if err != nil {
		cb(nil, err)
		return
	}
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		r.eng.segWriteAt(seg, start, b, vals, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(vals, err)
		})
	})
}

// Subscribe implements Engine: the registration goes to the segment's
// partition's current servers (renewals follow reconfigurations).
func (c *Cluster) Subscribe(seg uint64, ttl time.Duration, notify func(addr uint64), cb func(error)) (cancel func()) {
	cancel = func() {}
	if notify != nil {
		c.hub.start(c.node)
		f := new(noteFunc)
		*f = addrOnly(notify)
		c.hub.add(seg, f)
		cancel = func() { c.hub.remove(seg, f) }
	}
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		r.eng.Subscribe(seg, ttl, nil, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(err)
		})
	})
	return cancel
}

// brokenRoute is a partition whose configuration the cluster cannot
// serve (an ec partition whose size the plan does not fit): every call
// fails with err, so the problem is reported where it is met.
type brokenRoute struct{ err error }

func (b *brokenRoute) Capture(_ uint64, cb func(CaptureID, error))           { cb(0, b.err) }
func (b *brokenRoute) Write(_ uint64, _ []byte, _ CaptureID, cb func(error)) { cb(b.err) }
func (b *brokenRoute) Read(_ uint64, cb func([]byte, error))                 { cb(nil, b.err) }
func (b *brokenRoute) Trim(_ uint64, cb func(error))                         { cb(b.err) }
func (b *brokenRoute) SegCapture(_, _, _ uint64, cb func(CaptureID, error)) {
	cb(0, b.err)
}
func (b *brokenRoute) SegWrite(_, _ uint64, _ [][]byte, _ CaptureID, cb func([][]byte, error)) {
	cb(nil, b.err)
}
func (b *brokenRoute) Subscribe(_ uint64, _ time.Duration, _ func(uint64), cb func(error)) func() {
	cb(b.err)
	return func() {}
}
func (b *brokenRoute) writeAt(_, _ uint64, _ []byte, _ bool, cb func(error)) { cb(b.err) }
func (b *brokenRoute) segWriteAt(_, _, _ uint64, _ [][]byte, cb func(error)) { cb(b.err) }

// SetECProposers sets the ec partitions' leader (a write preempted by
// another client goes to it: Pando's leader fallback) and delegate (it
// runs Phase 2 of Propose: partial delegation), as EC.SetLeader and
// EC.SetDelegate do; "" turns either off. Both must be served by
// ServeECLeader nodes.
func (c *Cluster) SetECProposers(leader, delegate stack.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ecLeader, c.ecDelegate = leader, delegate
	for _, r := range c.routes {
		if e, ok := r.eng.(*EC); ok {
			e.SetLeader(leader)
			e.SetDelegate(delegate)
		}
	}
}

var (
	_ Proposer = (*Cluster)(nil)
	_ KeyedLog = (*Cluster)(nil)
)

// Propose implements Proposer: the partition's engine proposes if it can
// (the ec engine, delegating Phase 2 when it has a delegate); otherwise
// a capture, then a write.
func (c *Cluster) Propose(addr uint64, value []byte, cb func(error)) {
	c.mu.Lock()
	_, can := c.routes[c.PartitionOf(segOf(addr))].eng.(Proposer)
	c.mu.Unlock()
	if !can {
		c.Capture(addr, func(cid CaptureID, err error) {
			if err != nil {
				cb(err)
				return
			}
			c.Write(addr, value, cid, func(err error) { cb(ours(value, err)) })
		})
		return
	}
	c.with(c.PartitionOf(segOf(addr)), func(r *route, retry func(error) bool) {
		r.eng.(Proposer).Propose(addr, value, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(err)
		})
	})
}

// Latest implements KeyedLog for partitions whose engine serves keyed
// logs (ec); others answer with an error.
func (c *Cluster) Latest(seg uint64, cb func(off uint64, value []byte, err error)) {
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		k, ok := r.eng.(KeyedLog)
		if !ok {
			cb(0, nil, fmt.Errorf("wor: partition %d's %s engine has no keyed logs (the ec engine has)", c.PartitionOf(seg), c.engine))
			return
		}
		k.Latest(seg, func(off uint64, v []byte, err error) {
			if err != nil && retry(err) {
				return
			}
			cb(off, v, err)
		})
	})
}

// TrimBelow implements KeyedLog, as Latest.
func (c *Cluster) TrimBelow(seg, off uint64, cb func(error)) {
	c.with(c.PartitionOf(seg), func(r *route, retry func(error) bool) {
		k, ok := r.eng.(KeyedLog)
		if !ok {
			cb(fmt.Errorf("wor: partition %d's %s engine has no keyed logs (the ec engine has)", c.PartitionOf(seg), c.engine))
			return
		}
		k.TrimBelow(seg, off, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(err)
		})
	})
}
