package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
	"strata/wor"
)

// Keyed mode: the service on keyed logs (Pando's per-key logs of
// versions, wor/keylog.go) instead of WormPaxos's one log. Each key is
// hashed to a segment at or above KeyedSegmentBase; that segment's
// versions are the successive states of its bucket (the keys hashed
// there: almost always just the one), each written only once the one
// below it is chosen, so reading the latest version is linearizable.
// Every server answers every request itself, with no leader and no
// forwarding: a get is the latest version (one round trip to the
// nearest Phase 1a quorum on the ec engine, when that version is known
// chosen); a write reads the latest version and proposes the next (its
// Phase 2 run by the engine's delegate, if one is set), then collects
// the versions below the new one. A write that loses its version to
// another retries on the new latest one.
//
// Scans and watches are refused (ErrUnsupported): keys are hashed, so
// there is no order to scan in and no log of events to watch. Sessions
// (the deduplication of a retried write) are kept per bucket, for its
// keyedSessions most recent clients. A key's Create and Mod are its
// bucket's versions (offset + 1), not service-wide revisions.

// KeyedSegmentBase is the first segment of keyed mode's buckets: the
// segments from it to wor.MaxSegment are the key space (2^39 buckets),
// and WormPaxos groups and logs must use segments below it.
const KeyedSegmentBase = 1 << 39

// keyedSessions bounds the client sessions a bucket remembers.
const keyedSessions = 16

// keyedWriteTries bounds how often a write retries after losing its
// version to another write.
const keyedWriteTries = 16

// KeyedSegment is the bucket segment of key.
func KeyedSegment(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return KeyedSegmentBase | h.Sum64()&(KeyedSegmentBase-1)
}

// bucket is one version of a bucket: its keys (sorted) and the sessions
// of the clients that wrote last.
type bucket struct {
	entries  []bucketEntry
	sessions []bucketSession // oldest first
}

type bucketEntry struct {
	key               string
	value             []byte
	create, mod, vers uint64
}

type bucketSession struct {
	client, seq uint64
	result      []byte // the encoded response
}

const bucketMagic = 'B'

func (b *bucket) encode() []byte {
	out := []byte{bucketMagic}
	out = binary.AppendUvarint(out, uint64(len(b.entries)))
	for _, e := range b.entries {
		out = appendBytes(out, e.key)
		out = appendBytes(out, e.value)
		out = binary.AppendUvarint(out, e.create)
		out = binary.AppendUvarint(out, e.mod)
		out = binary.AppendUvarint(out, e.vers)
	}
	out = binary.AppendUvarint(out, uint64(len(b.sessions)))
	for _, s := range b.sessions {
		out = binary.AppendUvarint(out, s.client)
		out = binary.AppendUvarint(out, s.seq)
		out = appendBytes(out, s.result)
	}
	return out
}

// decodeBucket reads a bucket version; nil or empty is the empty bucket
// (no version yet).
func decodeBucket(raw []byte) (*bucket, error) {
	b := &bucket{}
	if len(raw) == 0 {
		return b, nil
	}
	if raw[0] != bucketMagic {
		return nil, fmt.Errorf("%w: bucket version with magic %#x", ErrMalformed, raw[0])
	}
	d := &decoder{b: raw[1:], n: len(raw)}
	n := d.uvarint("key count")
	if n > uint64(len(raw)) {
		return nil, fmt.Errorf("%w: bucket of %d keys in %d bytes", ErrMalformed, n, len(raw))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		e := bucketEntry{key: string(d.bytes("key", MaxKey)), value: d.bytes("value", MaxValue)}
		e.create, e.mod, e.vers = d.uvarint("create"), d.uvarint("mod"), d.uvarint("version")
		if d.err == nil && (e.key == "" || (len(b.entries) > 0 && b.entries[len(b.entries)-1].key >= e.key)) {
			return nil, fmt.Errorf("%w: bucket keys empty or out of order", ErrMalformed)
		}
		b.entries = append(b.entries, e)
	}
	ns := d.uvarint("session count")
	if ns > keyedSessions {
		return nil, fmt.Errorf("%w: bucket with %d sessions", ErrMalformed, ns)
	}
	for i := uint64(0); i < ns && d.err == nil; i++ {
		b.sessions = append(b.sessions, bucketSession{client: d.uvarint("client"), seq: d.uvarint("sequence"), result: d.bytes("result", maxReplyBytes)})
	}
	if err := d.done("bucket version"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return b, nil
}

func (b *bucket) find(key string) (int, bool) {
	return slices.BinarySearchFunc(b.entries, key, func(e bucketEntry, k string) int {
		switch {
		case e.key < k:
			return -1
		case e.key > k:
			return 1
		}
		return 0
	})
}

// apply applies the write r as bucket version ver (offset + 1) and
// returns its response and whether the bucket changed. It records the
// client's session either way.
func (b *bucket) apply(r *Request, ver uint64) (*Response, bool) {
	i, found := b.find(r.Key)
	resp := &Response{Rev: ver, Existed: found}
	changed := false
	put := func() {
		e := bucketEntry{key: r.Key, value: append([]byte(nil), r.Value...), create: ver, mod: ver, vers: 1}
		if found {
			e.create, e.vers = b.entries[i].create, b.entries[i].vers+1
			b.entries[i] = e
		} else {
			b.entries = slices.Insert(b.entries, i, e)
		}
		resp.Version, resp.Succeeded, changed = e.vers, true, true
	}
	switch r.Op {
	case OpPut:
		put()
	case OpCAS:
		cur := uint64(0)
		if found {
			cur = b.entries[i].vers
		}
		if cur != r.Version {
			resp.Version = cur
		} else {
			put()
		}
	case OpDelete:
		if found {
			b.entries = slices.Delete(b.entries, i, i+1)
			resp.Succeeded, changed = true, true
		}
	}
	return resp, changed
}

// session is the client's session in the bucket, if it has one.
func (b *bucket) session(client uint64) (bucketSession, bool) {
	for _, s := range b.sessions {
		if s.client == client {
			return s, true
		}
	}
	return bucketSession{}, false
}

// remember records the client's latest write and its result, dropping
// the oldest session beyond keyedSessions.
func (b *bucket) remember(client, seq uint64, result []byte) {
	b.sessions = slices.DeleteFunc(b.sessions, func(s bucketSession) bool { return s.client == client })
	b.sessions = append(b.sessions, bucketSession{client, seq, result})
	if len(b.sessions) > keyedSessions {
		b.sessions = slices.Delete(b.sessions, 0, len(b.sessions)-keyedSessions)
	}
}

// KeyedServerConfig configures a KeyedServer.
type KeyedServerConfig struct {
	// Node is the server's RPC endpoint. The caller closes it after the
	// server.
	Node *stack.Node
	// Client is the WOR client of the keyed logs: its engine must serve
	// them (wor.KeyedLog: the ec engine, or a cluster of ec partitions).
	Client *wor.Client
	// RequestTimeout is how long the server works on a request that
	// names no timeout (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// KeyedServer serves the key-value service in keyed mode (above).
type KeyedServer struct {
	node    *stack.Node
	c       *wor.Client
	timeout time.Duration
	log     *slog.Logger

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // requests in flight and collections

	closing   atomic.Bool
	malformed atomic.Uint64
	retries   atomic.Uint64 // writes that lost their version and tried the next
	collected atomic.Uint64 // floors raised after writes

	obsMu    sync.Mutex // guards observer
	observer func(op Op, st Status, d time.Duration)

	cacheMu sync.Mutex
	cache   map[uint64]cachedBucket // guarded by cacheMu: per bucket segment, the latest version known chosen
}

// StartKeyedServer serves keyed mode on cfg.Node until Close.
func StartKeyedServer(cfg KeyedServerConfig) (*KeyedServer, error) {
	if cfg.Node == nil || cfg.Client == nil {
		return nil, errors.New("kv: KeyedServerConfig needs a Node and a Client")
	}
	s := &KeyedServer{node: cfg.Node, c: cfg.Client, timeout: cfg.RequestTimeout, log: cfg.Logger, cache: map[uint64]cachedBucket{}}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	cfg.Node.HandleAsync(func(_ stack.Addr, req []byte, respond func([]byte)) {
		if s.closing.Load() {
			respond(EncodeResponse(errorResponse(fmt.Errorf("%w: server %s is closing", ErrUnavailable, s.node.Local()))))
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			respond(s.Serve(req))
		}()
	})
	return s, nil
}

// Close stops serving; requests in flight end with ErrUnavailable.
func (s *KeyedServer) Close() error {
	s.closing.Store(true)
	s.cancel()
	s.wg.Wait()
	return nil
}

// SetObserver sets a function told each request's operation, status and
// time taken.
func (s *KeyedServer) SetObserver(f func(op Op, st Status, d time.Duration)) {
	s.obsMu.Lock()
	s.observer = f
	s.obsMu.Unlock()
}

// KeyedStats are a keyed server's counters.
type KeyedStats struct {
	Malformed, Retries, Collected uint64
}

// Stats returns the server's counters.
func (s *KeyedServer) Stats() KeyedStats {
	return KeyedStats{Malformed: s.malformed.Load(), Retries: s.retries.Load(), Collected: s.collected.Load()}
}

// Serve answers one encoded request with an encoded reply.
func (s *KeyedServer) Serve(b []byte) []byte {
	s.obsMu.Lock()
	f := s.observer
	s.obsMu.Unlock()
	return serveRequest(s.ctx, b, s.timeout, &s.malformed, func(ctx context.Context, r *Request) ([]byte, Status) {
		resp := s.serve(ctx, r)
		return EncodeResponse(resp), resp.Status
	}, f)
}

func (s *KeyedServer) serve(ctx context.Context, r *Request) *Response {
	switch r.Op {
	case OpGet:
		_, b, err := s.latest(ctx, KeyedSegment(r.Key))
		if err != nil {
			return errorResponse(err)
		}
		i, ok := b.find(r.Key)
		if !ok {
			return &Response{Status: StatusNotFound}
		}
		e := b.entries[i]
		return &Response{Rev: e.mod, KVs: []KeyValue{{Key: e.key, Value: e.value, Create: e.create, Mod: e.mod, Version: e.vers}}}
	case OpPut, OpDelete, OpCAS:
		return s.write(ctx, r)
	case OpScan, OpWatch:
		return errorResponse(fmt.Errorf("%w: %s in keyed mode (keys are hashed to buckets: no order to scan, no event log to watch)", ErrUnsupported, r.Op))
	case OpStatus:
		return &Response{}
	}
	return errorResponse(fmt.Errorf("%w: code %d", ErrUnknownOp, uint8(r.Op)))
}

// latest reads seg's latest bucket version: its offset + 1 (0: none yet)
// and the bucket.
func (s *KeyedServer) latest(ctx context.Context, seg uint64) (uint64, *bucket, error) {
	off, raw, err := s.c.Latest(ctx, seg)
	switch {
	case errors.Is(err, wor.ErrUnwritten):
		return 0, &bucket{}, nil
	case err != nil:
		return 0, nil, fmt.Errorf("%w: reading bucket %#x: %v", ErrUnavailable, seg, err)
	}
	b, err := decodeBucket(raw)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: bucket %#x version %d: %v", ErrInternal, seg, off, err)
	}
	s.remember(seg, off+1, raw)
	return off + 1, b, nil
}

// keyedCacheEntries bounds the buckets whose latest known version a
// server remembers (it forgets them all when full: a miss costs a read).
const keyedCacheEntries = 1 << 16

// cachedBucket is the latest version of a bucket a server knows chosen.
type cachedBucket struct {
	ver uint64 // offset + 1
	raw []byte
}

// cached returns seg's latest known version and bucket (nil if none),
// never fresh: it may be behind.
func (s *KeyedServer) cached(seg uint64) (ver uint64, b *bucket, fresh bool) {
	s.cacheMu.Lock()
	c, ok := s.cache[seg]
	s.cacheMu.Unlock()
	if !ok {
		return 0, nil, false
	}
	b, err := decodeBucket(c.raw)
	if err != nil {
		return 0, nil, false
	}
	return c.ver, b, false
}

// remember notes that bucket version ver (offset + 1) of seg, raw, is
// chosen, unless a later one is known.
func (s *KeyedServer) remember(seg, ver uint64, raw []byte) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if c, ok := s.cache[seg]; ok && c.ver >= ver {
		return
	}
	if len(s.cache) >= keyedCacheEntries {
		clear(s.cache)
	}
	s.cache[seg] = cachedBucket{ver, raw}
}

// write applies a put, delete or CAS as the bucket's next version.
func (s *KeyedServer) write(ctx context.Context, r *Request) *Response {
	seg := KeyedSegment(r.Key)
	// The base is the bucket's latest version this server knows (from
	// its last read or write of it, or a version another write took
	// from it): proposing the next version on it costs no read, and if
	// that version is taken the proposal returns its value, the next
	// base. Only an outcome that writes nothing must read the latest
	// version itself, since it is linearized at a read.
	ver, b, fresh := s.cached(seg)
	for try := 0; try < keyedWriteTries; try++ {
		if b == nil {
			var err error
			if ver, b, err = s.latest(ctx, seg); err != nil {
				return errorResponse(err)
			}
			fresh = true
		}
		if sess, ok := b.session(r.Client); ok {
			switch {
			case r.Seq == sess.seq:
				resp, err := DecodeResponse(sess.result)
				if err != nil {
					return errorResponse(fmt.Errorf("%w: a session's stored result: %v", ErrInternal, err))
				}
				return resp // a retry of a write that took effect
			case r.Seq < sess.seq:
				return errorResponse(fmt.Errorf("%w: client %x sequence %d, its session in this bucket applied %d", ErrStaleSequence, r.Client, r.Seq, sess.seq))
			}
		}
		resp, changed := b.apply(r, ver+1)
		if !changed {
			if !fresh {
				b = nil // read the latest version, then decide
				continue
			}
			// A failed CAS or the delete of an absent key: nothing to
			// write; the read of the latest version is its linearization.
			resp.Rev = ver
			return resp
		}
		b.remember(r.Client, r.Seq, EncodeResponse(resp))
		enc := b.encode()
		err := s.c.ProposeVersion(ctx, seg, ver, enc)
		var we *wor.WrittenError
		switch {
		case err == nil, errors.As(err, &we) && bytes.Equal(we.Value, enc):
			s.remember(seg, ver+1, enc)
			s.collect(seg, ver)
			return resp
		case errors.As(err, &we):
			// Another write took the version: its bucket is the base of
			// the next one.
			s.retries.Add(1)
			if b, err = decodeBucket(we.Value); err != nil {
				return errorResponse(fmt.Errorf("%w: bucket %#x version %d: %v", ErrInternal, seg, ver, err))
			}
			ver, fresh = ver+1, false
			s.remember(seg, ver, we.Value)
			continue
		case errors.Is(err, wor.ErrCollected):
			s.retries.Add(1) // the base was old: read the latest
			b = nil
			continue
		case errors.Is(err, wor.ErrStorage):
			return errorResponse(fmt.Errorf("%w: bucket %#x version %d of %d bytes was refused by the wormservers (too large for their storage?): %v", ErrValueTooLarge, seg, ver, len(enc), err))
		default:
			return errorResponse(fmt.Errorf("%w: writing bucket %#x version %d: %v", ErrUnavailable, seg, ver, err))
		}
	}
	return errorResponse(fmt.Errorf("%w: bucket %#x: %d writes in a row lost their version to others", ErrUnavailable, seg, keyedWriteTries))
}

// collect raises seg's floor to off, the version just chosen, in the
// background (Pando's garbage collection of old versions).
func (s *KeyedServer) collect(seg, off uint64) {
	if off == 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		defer cancel()
		if err := s.c.TrimBelow(ctx, seg, off); err != nil {
			s.log.Debug("kv: collecting old versions failed (a later write retries)", "segment", seg, "floor", off, "err", err)
			return
		}
		s.collected.Add(1)
	}()
}
