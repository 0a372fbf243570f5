package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
)

// ErrNoServers: a client needs at least one server address.
var ErrNoServers = errors.New("kv: no servers")

// Bounds of how long a client waits for one server's reply before it
// tries the next (see ClientConfig).
const (
	DefaultAttemptTimeout    = 2 * time.Second
	DefaultMinAttemptTimeout = 250 * time.Millisecond
	// initialAttemptTimeout is the try timeout before any round trip was
	// measured (TCP's initial retransmission timeout).
	initialAttemptTimeout = time.Second
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Node is the client's RPC endpoint (a stack running Props). The
	// caller closes it after the client, unless Dial made it.
	Node *stack.Node
	// Servers are the kv servers' addresses; the client starts with a
	// random one and moves on when one fails.
	Servers []stack.Addr
	// A try at one server gives up after the smoothed round trip plus
	// four deviations (as TCP's retransmission timeout; 1 s before the
	// first reply), doubled for every try of the call that failed, and
	// at least MinAttemptTimeout (default DefaultMinAttemptTimeout), at
	// most AttemptTimeout (default DefaultAttemptTimeout); a watch poll
	// adds its wait. A short try timeout makes a dead leader cost little
	// (the next server knows the new one once it is elected); a try that
	// was merely slow is repeated elsewhere, and a write is applied once
	// all the same.
	AttemptTimeout, MinAttemptTimeout time.Duration
	Logger                            *slog.Logger
	// Listen opens the node Dial makes (default layers.Listen): a caller
	// that adds transport options (an emulated WAN) passes its own.
	Listen func(listen, props string) (*stack.Node, error)
}

// Client calls the key-value service. It is safe for concurrent use.
//
// Every write carries a session id (random, 64 bits) and the session's
// next sequence number; a try that fails or times out is repeated on the
// next server with the same id and number, so the write is applied once
// whichever tries reached the log. A session has one write in flight at
// a time: concurrent calls take different sessions from a pool.
type Client struct {
	node               *stack.Node
	servers            []stack.Addr
	timeout, minTimout time.Duration
	log                *slog.Logger
	owned              bool // Dial made node: Close closes it

	mu        sync.Mutex // guards preferred, free, srtt and rttvar
	preferred int        // index in servers of the server to try first
	free      []*clientSession
	// smoothed round trip of the answered tries and its deviation (0:
	// none measured yet)
	srtt, rttvar time.Duration
}

type clientSession struct{ id, seq uint64 }

// NewClient returns a client of the servers reached through cfg.Node.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Node == nil {
		return nil, errors.New("kv: ClientConfig.Node is nil")
	}
	if len(cfg.Servers) == 0 {
		return nil, ErrNoServers
	}
	c := &Client{node: cfg.Node, servers: slices.Clone(cfg.Servers), timeout: cfg.AttemptTimeout, minTimout: cfg.MinAttemptTimeout, log: cfg.Logger}
	if c.timeout <= 0 {
		c.timeout = DefaultAttemptTimeout
	}
	if c.minTimout <= 0 {
		c.minTimout = min(DefaultMinAttemptTimeout, c.timeout)
	}
	c.minTimout = min(c.minTimout, c.timeout)
	if c.log == nil {
		c.log = slog.Default()
	}
	c.preferred = rand.IntN(len(c.servers))
	return c, nil
}

// Dial returns a client of servers ("udp:HOST:PORT" or "tcp:HOST:PORT",
// all of one kind) on a node of its own, bound to the loopback address
// if the first server is on it, else to every address; Close closes it.
func Dial(servers []string, cfg ClientConfig) (*Client, error) {
	var addrs []stack.Addr
	for _, s := range servers {
		if s = strings.TrimSpace(s); s != "" {
			addrs = append(addrs, stack.Addr(s))
		}
	}
	if len(addrs) == 0 {
		return nil, ErrNoServers
	}
	kind, hostport, ok := strings.Cut(string(addrs[0]), ":")
	host, _, err := net.SplitHostPort(hostport)
	if !ok || err != nil {
		return nil, fmt.Errorf("kv: server address %q: want udp:HOST:PORT or tcp:HOST:PORT", addrs[0])
	}
	bind := "0.0.0.0"
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		bind = "127.0.0.1"
	}
	listen := cfg.Listen
	if listen == nil {
		listen = layers.Listen
	}
	n, err := listen(kind+":"+bind+":0", Props)
	if err != nil {
		return nil, err
	}
	cfg.Node, cfg.Servers = n, addrs
	c, err := NewClient(cfg)
	if err != nil {
		n.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// ServersFile is the file `strata up` writes listing its kv servers (and
// its log servers and RMs, in files of their own).
type ServersFile struct {
	Servers []string `json:"servers"`
	// Security, if present, names the files that secure the links to the
	// servers (the cluster key file, TLS files), relative to the servers
	// file's directory unless absolute, as in a cluster file.
	Security *wor.Security `json:"security,omitempty"`
}

// LoadServers reads a servers file (JSON: {"servers": [ADDR, ...]}).
func LoadServers(path string) ([]string, error) {
	f, err := LoadServersFile(path)
	if err != nil {
		return nil, err
	}
	return f.Servers, nil
}

// LoadServersFile reads and checks a servers file: at least one server,
// and a security section, if any, that names a file.
func LoadServersFile(path string) (*ServersFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f ServersFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("kv: servers file %s: %w", path, err)
	}
	if len(f.Servers) == 0 {
		return nil, fmt.Errorf("kv: servers file %s: %w", path, ErrNoServers)
	}
	if f.Security != nil {
		if err := f.Security.Validate(); err != nil {
			return nil, fmt.Errorf("kv: servers file %s: %w", path, err)
		}
	}
	return &f, nil
}

// Close closes the client's node if Dial made it.
func (c *Client) Close() error {
	if c.owned {
		return c.node.Close()
	}
	return nil
}

// ReadOption modifies a Get or Scan.
type ReadOption func(*Request)

// SequentialRead serves a Get or Scan from the state of whichever server
// receives it, without a linearizable read of the log: cheaper, and
// sequentially consistent (a server's state is a prefix of the log that
// only grows; it may miss the newest writes, and a client that moves to
// another server may see an older state).
func SequentialRead() ReadOption { return func(r *Request) { r.Sequential = true } }

// WriteResult is what a write did.
type WriteResult struct {
	// Rev is the write's revision (its log index).
	Rev uint64
	// Version is the key's version after the write (0 after a delete);
	// for a CAS that failed, the key's current version (0: absent).
	Version uint64
	// Succeeded: the CAS matched (always true for a put; for a delete:
	// the key existed).
	Succeeded bool
	// Existed: the key existed before the write.
	Existed bool
}

// Get returns key's value and revisions, or ErrNotFound.
func (c *Client) Get(ctx context.Context, key string, opts ...ReadOption) (KeyValue, error) {
	r := &Request{Op: OpGet, Key: key}
	for _, o := range opts {
		o(r)
	}
	resp, err := c.do(ctx, r)
	if errors.Is(err, ErrNotFound) {
		return KeyValue{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if err != nil {
		return KeyValue{}, err
	}
	if len(resp.KVs) != 1 || resp.KVs[0].Key != key {
		return KeyValue{}, fmt.Errorf("%w: get %q answered with %d keys", ErrBadReply, key, len(resp.KVs))
	}
	return resp.KVs[0], nil
}

// Put sets key to value.
func (c *Client) Put(ctx context.Context, key string, value []byte) (WriteResult, error) {
	return c.write(ctx, &Request{Op: OpPut, Key: key, Value: value})
}

// Delete removes key (Succeeded false: it did not exist).
func (c *Client) Delete(ctx context.Context, key string) (WriteResult, error) {
	return c.write(ctx, &Request{Op: OpDelete, Key: key})
}

// CAS sets key to value if its version is version (0: if it does not
// exist). Succeeded says whether it did; if not, Version is the key's
// current version.
func (c *Client) CAS(ctx context.Context, key string, version uint64, value []byte) (WriteResult, error) {
	return c.write(ctx, &Request{Op: OpCAS, Key: key, Version: version, Value: value})
}

// Scan returns the keys in [start, end) in order (end "": to the last
// key), at most limit (0: MaxScanLimit), and whether the range holds more
// (continue from the last key + "\x00"). A reply holds at most a few
// MiB: a scan may return fewer than limit keys, with more set.
func (c *Client) Scan(ctx context.Context, start, end string, limit int, opts ...ReadOption) (kvs []KeyValue, more bool, err error) {
	if limit < 0 {
		return nil, false, fmt.Errorf("%w: negative scan limit %d", ErrMalformed, limit)
	}
	r := &Request{Op: OpScan, Key: start, End: end, Limit: uint64(limit)}
	for _, o := range opts {
		o(r)
	}
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, false, err
	}
	return resp.KVs, resp.More, nil
}

// Poll is one watch long poll: the events of key (with prefix, of every
// key starting with key) from revision from on (0: from the next one),
// waiting up to wait for the first; next is where to continue. A from
// older than the server's history gets ErrCompacted.
func (c *Client) Poll(ctx context.Context, key string, prefix bool, from uint64, wait time.Duration) (evs []Event, next uint64, err error) {
	resp, err := c.do(ctx, &Request{Op: OpWatch, Key: key, Prefix: prefix, Rev: from, Wait: max(wait, 0)})
	if err != nil {
		return nil, 0, err
	}
	if resp.Next == 0 || resp.Next < from {
		return nil, 0, fmt.Errorf("%w: watch from %d continues at %d", ErrBadReply, from, resp.Next)
	}
	return resp.Events, resp.Next, nil
}

// Watch calls fn with every event of key (or prefix) from revision from
// on (0: from now), in revision order, until ctx ends (then it returns
// ctx's error) or fn returns an error (returned). Servers may change
// under it; it resumes where it was.
func (c *Client) Watch(ctx context.Context, key string, prefix bool, from uint64, fn func(Event) error) error {
	const wait = 10 * time.Second
	for {
		evs, next, err := c.Poll(ctx, key, prefix, from, wait)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				return err
			}
		}
		from = next
	}
}

// ServerStatus is a server's view of its group.
type ServerStatus struct {
	Revision        uint64 // the last index it applied
	LeaderID, Epoch uint64
	Leader          string // the leader's address ("": unknown)
}

// Status asks one server (not necessarily one of the client's) for its
// view.
func (c *Client) Status(ctx context.Context, server stack.Addr) (ServerStatus, error) {
	resp, err := c.call(ctx, server, &Request{Op: OpStatus}, 0)
	if err != nil {
		return ServerStatus{}, err
	}
	if err := resp.Err(); err != nil {
		return ServerStatus{}, err
	}
	return ServerStatus{Revision: resp.Rev, LeaderID: resp.LeaderID, Epoch: resp.Epoch, Leader: resp.Leader}, nil
}

// write runs a write under a session of its own.
func (c *Client) write(ctx context.Context, r *Request) (WriteResult, error) {
	if err := r.Validate(); err != nil && !errors.Is(err, ErrMalformed) {
		return WriteResult{}, err // no session needed to know it fails
	}
	s := c.session()
	s.seq++
	r.Client, r.Seq = s.id, s.seq
	resp, err := c.do(ctx, r)
	// The session moves on whatever happened: a try still in flight
	// with this sequence number is applied before the next or refused
	// as stale after it.
	c.release(s)
	if err != nil {
		return WriteResult{}, err
	}
	return WriteResult{Rev: resp.Rev, Version: resp.Version, Succeeded: resp.Succeeded, Existed: resp.Existed}, nil
}

func (c *Client) session() *clientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		s := c.free[n-1]
		c.free = c.free[:n-1]
		return s
	}
	return &clientSession{id: 1 + rand.Uint64N(1<<64-1)}
}

func (c *Client) release(s *clientSession) {
	c.mu.Lock()
	c.free = append(c.free, s)
	c.mu.Unlock()
}

// do sends r to the preferred server and, while servers fail or are
// unavailable, to the next ones in turn, until one answers or ctx ends.
// Validation errors come back without a call.
func (c *Client) do(ctx context.Context, r *Request) (*Response, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var last error
	for try := 0; ; try++ {
		c.mu.Lock()
		i := c.preferred
		c.mu.Unlock()
		srv := c.servers[i]
		resp, err := c.call(ctx, srv, r, try)
		if err == nil && resp.Status != StatusUnavailable {
			c.mu.Lock()
			c.preferred = i
			if resp.Leader != "" {
				// Served by the leader through this server: go to the
				// leader from now on (one hop fewer per request).
				if j := slices.Index(c.servers, stack.Addr(resp.Leader)); j >= 0 {
					c.preferred = j
				}
			}
			c.mu.Unlock()
			return resp, resp.Err()
		}
		if err == nil {
			err = resp.Err()
		}
		last = err
		if ctx.Err() != nil {
			return nil, fmt.Errorf("kv: %s %q: %w (last error: %v)", r.Op, r.Key, ctx.Err(), last)
		}
		c.log.Debug("kv: try failed", "server", srv, "op", r.Op, "try", try, "err", err)
		next := (i + 1) % len(c.servers)
		if resp != nil && resp.Leader != "" {
			// The server knows the leader: go there (to the same server
			// if it has just become the leader itself).
			if j := slices.Index(c.servers, stack.Addr(resp.Leader)); j >= 0 {
				next = j
			}
		}
		c.mu.Lock()
		if c.preferred == i {
			c.preferred = next
		}
		c.mu.Unlock()
		if (try+1)%len(c.servers) == 0 {
			// Every server failed once more: leadership is moving or a
			// majority is unreachable; give it time.
			pause := min(20*time.Millisecond<<min(try/len(c.servers), 5), 500*time.Millisecond)
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("kv: %s %q: %w (last error: %v)", r.Op, r.Key, ctx.Err(), last)
			case <-time.After(pause):
			}
		}
	}
}

// tryTimeout is how long try number try of a call waits for its reply.
func (c *Client) tryTimeout(try int) time.Duration {
	c.mu.Lock()
	rto := initialAttemptTimeout
	if c.srtt > 0 {
		rto = c.srtt + 4*c.rttvar
	}
	c.mu.Unlock()
	return min(max(rto, c.minTimout)<<min(try, 8), c.timeout)
}

// observe folds an answered try's round trip into the smoothed one
// (Jacobson's estimator, as TCP's).
func (c *Client) observe(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srtt == 0 {
		c.srtt, c.rttvar = d, d/2
		return
	}
	dev := c.srtt - d
	if dev < 0 {
		dev = -dev
	}
	c.rttvar = (3*c.rttvar + dev) / 4
	c.srtt = (7*c.srtt + d) / 8
}

// call makes one try (number try of its call) at one server.
func (c *Client) call(ctx context.Context, srv stack.Addr, r *Request, try int) (*Response, error) {
	wait := min(r.Wait, MaxWatchWait)
	timeout := c.tryTimeout(try) + wait
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	// The server gets a little less, so that its answer (say, that it
	// could not reach the leader) arrives before this try gives up.
	r.Timeout = max(timeout*9/10, time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	b, err := c.node.Call(cctx, srv, EncodeRequest(r), timeout)
	if err != nil {
		return nil, err
	}
	resp, err := DecodeResponse(b)
	if err == nil && resp.Status != StatusUnavailable && r.Op != OpWatch {
		// A watch waits for its events and says nothing of the round
		// trip; neither does a server that could not serve.
		c.observe(time.Since(start))
	}
	return resp, err
}
