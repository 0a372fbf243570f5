package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"

	"strata/stack"
)

// Sealed wraps a transport so that every datagram is encrypted and
// authenticated with a cluster key (XChaCha20-Poly1305), and replays are
// refused: the bottom of every Strata stack when a key file is in force
// (docs/security.md). It sits under the layers, so every stack Strata
// configures, the bypass and the generated fast paths included, runs on it
// unchanged.
//
// A sealed datagram is
//
//	version(1) key-id(1) nonce(24) ciphertext(len+16)
//
// The nonce is the sender's incarnation (8 bytes of its start time in
// nanoseconds and 8 random bytes) and a counter (8 bytes) that grows with
// every datagram it sends, so a nonce is never used twice under one key,
// across restarts too (a repeat needs two incarnations drawing the same
// 64 random bits in the same nanosecond). The associated data is the
// header and both addresses (sender, destination), so a datagram is only
// accepted by the node it was sent to, as coming from the node that sent
// it: a sealed node must listen on the address its peers send to (not a
// wildcard).
//
// Guarantees: a datagram is handed up only if it was sealed with a key of
// the keyring by a holder of it, for this destination, from this source,
// and not handed up before; otherwise it is dropped and counted
// (SealStats). Replays are refused within a window of the newest 1,024
// counters of each sender incarnation (older ones are refused as stale),
// and datagrams of a sender's earlier incarnations are refused once one of
// a later incarnation arrived. Not protected: traffic analysis (sizes,
// timing, who talks to whom), denial of service, and replays of an
// earlier incarnation's datagrams to a receiver that restarted and has not
// heard the sender's current incarnation yet (the stack's epochs make the
// layers drop those as stale).
//
// Key rotation: the keyring (SetKeys) holds a primary key, which seals,
// and any others, which still open; replacing it takes effect for the next
// datagram, so a cluster rotates by adding the new key everywhere, making
// it primary everywhere, then retiring the old one.
func Sealed(inner stack.Transport, keys *Keyring) (*SealTransport, error) {
	if keys == nil || keys.primary() == nil {
		return nil, ErrNoKey
	}
	var inc [16]byte
	binary.BigEndian.PutUint64(inc[:8], uint64(time.Now().UnixNano()))
	if _, err := rand.Read(inc[8:]); err != nil {
		return nil, fmt.Errorf("transport: seal: incarnation: %w", err)
	}
	t := &SealTransport{inner: inner, keys: keys, incarnation: inc,
		windows: map[[16]byte]*senderState{}, latest: map[stack.Addr]uint64{}, noticed: map[stack.Addr]time.Time{}}
	inner.SetReceiver(t.open)
	return t, nil
}

// Seal frame layout.
const (
	sealVersion   = 0x5a
	sealHdr       = 1 + 1 + chacha20poly1305.NonceSizeX
	sealOverhead  = sealHdr + chacha20poly1305.Overhead
	replayWindowN = 1024 // counters remembered per sender incarnation
	// maxIncarnations bounds the senders' incarnations remembered (a
	// forged datagram never gets this far: only authenticated ones are
	// remembered).
	maxIncarnations = 4096
)

// ErrNoKey is returned by Sealed and SetKeys without a primary key.
var ErrNoKey = errors.New("transport: seal: no key")

// SealKey is one key of a keyring: an id (carried in each datagram, so the
// receiver knows which key sealed it) and 32 secret bytes.
type SealKey struct {
	ID     byte
	Secret [chacha20poly1305.KeySize]byte
}

// Keyring is the keys a node seals and opens with: the first is the
// primary (it seals), all open. It is safe for concurrent use; SetKeys
// replaces the keys at once for every transport using the ring.
type Keyring struct {
	keys atomic.Pointer[keySet]
}

type keySet struct {
	primary *sealKey
	byID    map[byte]*sealKey
}

type sealKey struct {
	id     byte
	secret [chacha20poly1305.KeySize]byte
}

// subkeyAEAD is the cipher of one key and one sender incarnation.
//
// XChaCha20-Poly1305 derives, for every nonce, a ChaCha20-Poly1305 subkey
// from the key and the nonce's first 16 bytes (HChaCha20), and seals
// under it with the nonce's last 8 bytes (after 4 zero bytes). In a
// sealed datagram those 16 bytes are the sender's incarnation, the same
// for every datagram it sends, so the subkey is derived once per key and
// incarnation and kept (the sender's for its own, each receiver's per
// sender incarnation) instead of once per datagram: the same function of
// the same inputs, so the bytes on the wire are exactly XChaCha20-
// Poly1305's (TestSealIsXChaCha20Poly1305). Under one subkey the nonces
// still never repeat: the 8 bytes left are the incarnation's counter.
type subkeyAEAD struct {
	key  *sealKey // the keyring entry it was derived from (a new SetKeys makes new ones)
	aead cipherAEAD
}

// deriveSubkey returns the cipher of key k for incarnation inc.
func deriveSubkey(k *sealKey, inc []byte) (*subkeyAEAD, error) {
	sub, err := chacha20.HChaCha20(k.secret[:], inc)
	if err != nil {
		return nil, err
	}
	a, err := chacha20poly1305.New(sub)
	if err != nil {
		return nil, err
	}
	return &subkeyAEAD{key: k, aead: a}, nil
}

// cipherAEAD is the part of cipher.AEAD used here.
type cipherAEAD interface {
	Seal(dst, nonce, plaintext, additionalData []byte) []byte
	Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}

// NewKeyring returns a keyring with keys, the first primary.
func NewKeyring(keys ...SealKey) (*Keyring, error) {
	k := &Keyring{}
	if err := k.SetKeys(keys...); err != nil {
		return nil, err
	}
	return k, nil
}

// SetKeys replaces the ring's keys (the first is primary; ids must be
// distinct).
func (k *Keyring) SetKeys(keys ...SealKey) error {
	if len(keys) == 0 {
		return ErrNoKey
	}
	ks := &keySet{byID: map[byte]*sealKey{}}
	for i, key := range keys {
		if _, dup := ks.byID[key.ID]; dup {
			return fmt.Errorf("transport: seal: key id %d twice", key.ID)
		}
		sk := &sealKey{id: key.ID, secret: key.Secret}
		ks.byID[key.ID] = sk
		if i == 0 {
			ks.primary = sk
		}
	}
	k.keys.Store(ks)
	return nil
}

// IDs returns the ring's key ids, the primary first.
func (k *Keyring) IDs() []int {
	ks := k.keys.Load()
	if ks == nil {
		return nil
	}
	out := []int{int(ks.primary.id)}
	for id := range ks.byID {
		if id != ks.primary.id {
			out = append(out, int(id))
		}
	}
	slices.Sort(out[1:])
	return out
}

func (k *Keyring) primary() *sealKey {
	if ks := k.keys.Load(); ks != nil {
		return ks.primary
	}
	return nil
}

func (k *Keyring) byID(id byte) *sealKey {
	if ks := k.keys.Load(); ks != nil {
		return ks.byID[id]
	}
	return nil
}

// SealTransport is the transport Sealed returns.
type SealTransport struct {
	inner       stack.Transport
	keys        *Keyring
	incarnation [16]byte // this transport's: start time (ns) and random bytes
	counter     atomic.Uint64
	sealer      atomic.Pointer[subkeyAEAD] // the primary key's cipher for this incarnation (derived again when the primary changes)

	recv atomic.Pointer[func(from stack.Addr, data []byte)]

	mu      sync.Mutex
	windows map[[16]byte]*senderState // guarded by mu: per sender incarnation
	latest  map[stack.Addr]uint64     // guarded by mu: per sender, the newest incarnation's start time seen
	noticed map[stack.Addr]time.Time  // guarded by mu: when each unsealed sender was last told (SealNotice)
	// recent holds, lock-free, the state of the sender incarnations heard
	// lately, slot by the incarnation's last (random) byte, so that most
	// datagrams find their cipher and a first replay check without the
	// lock (open). Written under mu; a slot's entry is also in windows.
	recent [256]atomic.Pointer[senderState]

	stats struct {
		sealed, opened, malformed, unknownKey, forged, replayed, stale, oldIncarnation atomic.Uint64
	}
}

// SealStats counts what a sealed transport did with datagrams.
type SealStats struct {
	Sealed, Opened uint64 // datagrams sent, and received and handed up
	// Refused, by reason: too short or of another version; sealed with a
	// key not in the ring; failing authentication (forged, damaged, for
	// another destination or from another source); a counter seen
	// before; a counter older than the window; an earlier incarnation of
	// a sender whose later one was seen.
	Malformed, UnknownKey, Forged, Replayed, Stale, OldIncarnation uint64
}

// Refused is the datagrams dropped, whatever the reason.
func (s SealStats) Refused() uint64 {
	return s.Malformed + s.UnknownKey + s.Forged + s.Replayed + s.Stale + s.OldIncarnation
}

// Stats returns the counters.
func (t *SealTransport) Stats() SealStats {
	s := &t.stats
	return SealStats{Sealed: s.sealed.Load(), Opened: s.opened.Load(), Malformed: s.malformed.Load(), UnknownKey: s.unknownKey.Load(),
		Forged: s.forged.Load(), Replayed: s.replayed.Load(), Stale: s.stale.Load(), OldIncarnation: s.oldIncarnation.Load()}
}

// Inner is the wrapped transport.
func (t *SealTransport) Inner() stack.Transport { return t.inner }

// Local implements stack.Transport.
func (t *SealTransport) Local() stack.Addr { return t.inner.Local() }

// MTU implements stack.Transport: the inner MTU less the seal's overhead.
func (t *SealTransport) MTU() int { return t.inner.MTU() - sealOverhead }

// SetReceiver implements stack.Transport.
func (t *SealTransport) SetReceiver(f func(from stack.Addr, data []byte)) { t.recv.Store(&f) }

// SetBatcher passes the node's batcher to the inner transport.
func (t *SealTransport) SetBatcher(batch func(f func())) {
	if b, ok := t.inner.(interface{ SetBatcher(func(func())) }); ok {
		b.SetBatcher(batch)
	}
}

// Assist implements stack.Assister when the inner transport does: the
// datagrams it receives pass through open as always.
func (t *SealTransport) Assist(from stack.Addr, done func() bool, d time.Duration) bool {
	if a, ok := t.inner.(stack.Assister); ok {
		return a.Assist(from, done, d)
	}
	return false
}

// Close implements stack.Transport.
func (t *SealTransport) Close() error { return t.inner.Close() }

var sealBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// aad is the associated data: the header and both addresses.
func aad(buf []byte, hdr []byte, from, to stack.Addr) []byte {
	buf = append(buf[:0], hdr...)
	buf = append(buf, byte(len(from)))
	buf = append(buf, from...)
	buf = append(buf, byte(len(to)))
	return append(buf, to...)
}

// chachaNonce is the size of the ChaCha20-Poly1305 nonce (4 zero bytes,
// then the counter). Send and open put it in the pooled associated-data
// buffer, after the associated data, so that it needs no allocation of
// its own (a slice passed to an interface method escapes).
const chachaNonce = chacha20poly1305.NonceSize

// nonceAfter appends the ChaCha20-Poly1305 nonce of counter bytes ctr
// (the last 8 bytes of the XChaCha20 nonce) to buf and returns buf and
// the nonce.
func nonceAfter(buf []byte, ctr []byte) ([]byte, []byte) {
	n := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = append(buf, ctr...)
	return buf, buf[n : n+chachaNonce]
}

// sealerFor returns the cipher of primary key k for this incarnation.
func (t *SealTransport) sealerFor(k *sealKey) (*subkeyAEAD, error) {
	if s := t.sealer.Load(); s != nil && s.key == k {
		return s, nil
	}
	s, err := deriveSubkey(k, t.incarnation[:])
	if err != nil {
		return nil, err
	}
	t.sealer.Store(s)
	return s, nil
}

// Send implements stack.Transport: it seals the datagram with the
// primary key and sends it.
func (t *SealTransport) Send(to stack.Addr, vec [][]byte) error {
	n := 0
	for _, v := range vec {
		n += len(v)
	}
	if n > t.MTU() {
		return fmt.Errorf("transport: seal: datagram of %d bytes exceeds the MTU %d", n, t.MTU())
	}
	k := t.keys.primary()
	c, err := t.sealerFor(k)
	if err != nil {
		return fmt.Errorf("transport: seal: key %d: %w", k.id, err)
	}
	bp := sealBufs.Get().(*[]byte)
	defer sealBufs.Put(bp)
	b := (*bp)[:0]
	b = append(b, sealVersion, k.id)
	b = append(b, t.incarnation[:]...)
	b = binary.BigEndian.AppendUint64(b, t.counter.Add(1))
	hdr := b[:sealHdr]
	for _, v := range vec {
		b = append(b, v...)
	}
	ap := sealBufs.Get().(*[]byte)
	defer sealBufs.Put(ap)
	a := aad(*ap, hdr, t.inner.Local(), to)
	a, nonce := nonceAfter(a, hdr[18:26])
	*ap = a
	b = c.aead.Seal(b[:sealHdr], nonce, b[sealHdr:], a[:len(a)-chachaNonce])
	*bp = b
	t.stats.sealed.Add(1)
	return t.inner.Send(to, [][]byte{b})
}

// open checks and opens a received datagram and hands it up. It takes
// the transport's lock once, after authentication, to check and update
// the sender's replay window in one step; before, a lock-free look at the
// sender's recent state (recent) finds the cipher and refuses, without
// decrypting, most replays and stale counters (a replay flood costs a
// lookup, not a decryption). That early look only ever refuses what the
// window refuses; the check under the lock decides.
func (t *SealTransport) open(from stack.Addr, data []byte) {
	if len(data) < sealOverhead || data[0] != sealVersion {
		t.stats.malformed.Add(1)
		t.notice(from, data)
		return
	}
	k := t.keys.byID(data[1])
	if k == nil {
		t.stats.unknownKey.Add(1)
		return
	}
	hdr := data[:sealHdr]
	var inc [16]byte
	copy(inc[:], hdr[2:18])
	ctr := binary.BigEndian.Uint64(hdr[18:26])
	var c *subkeyAEAD
	if st := t.recent[inc[15]].Load(); st != nil && st.inc == inc {
		if v := st.window.check(ctr); v != fresh {
			t.refuse(v)
			return
		}
		if sc := st.cipher.Load(); sc != nil && sc.key == k {
			c = sc
		}
	}
	derived := c == nil
	if derived {
		var err error
		if c, err = deriveSubkey(k, inc[:]); err != nil {
			t.stats.forged.Add(1)
			return
		}
	}
	ap := sealBufs.Get().(*[]byte)
	a := aad(*ap, hdr, from, t.inner.Local())
	a, nonce := nonceAfter(a, hdr[18:26])
	plain, err := c.aead.Open(data[sealHdr:sealHdr], nonce, data[sealHdr:], a[:len(a)-chachaNonce])
	*ap = a
	sealBufs.Put(ap)
	if err != nil {
		t.stats.forged.Add(1)
		return
	}
	// Authentic: now it may change what is remembered.
	start := binary.BigEndian.Uint64(inc[:8])
	t.mu.Lock()
	if latest := t.latest[from]; start < latest {
		t.mu.Unlock()
		t.stats.oldIncarnation.Add(1)
		return
	}
	st := t.windows[inc]
	if st == nil {
		if len(t.windows) >= maxIncarnations {
			// Rare: the windows restart; the latest starts still
			// refuse old incarnations.
			clear(t.windows)
			for i := range t.recent {
				t.recent[i].Store(nil)
			}
		}
		st = &senderState{inc: inc}
		t.windows[inc] = st
	}
	if v := st.window.check(ctr); v != fresh {
		t.mu.Unlock()
		t.refuse(v)
		return
	}
	st.window.mark(ctr)
	if derived {
		st.cipher.Store(c)
	}
	t.recent[inc[15]].Store(st)
	if start > t.latest[from] {
		t.latest[from] = start
	}
	t.mu.Unlock()
	t.stats.opened.Add(1)
	if f := t.recv.Load(); f != nil {
		(*f)(from, plain)
	}
}

// senderState is what a receiver keeps of one sender incarnation: its
// replay window and the cipher of the key it last sealed with.
type senderState struct {
	inc    [16]byte                   // immutable
	cipher atomic.Pointer[subkeyAEAD] // stored under the transport's mu, read without it
	window replayWindow
}

// SealNotice is what a sealed transport answers, unsealed, to a process
// that sends it unsealed datagrams (at most once a noticeEvery per
// sender), so that the sender can say why it gets no answers
// (PlainTransport). It carries nothing else.
var SealNotice = []byte("\x00strata: this process requires sealed links (--key-file)")

const (
	noticeEvery = 10 * time.Second
	maxNoticed  = 1024 // senders remembered; beyond, the oldest times are forgotten
)

// notice tells from, rarely, that it must seal what it sends. Not for a
// notice (two sealed processes never send each other unsealed datagrams,
// but a notice must not start a ping-pong with anything).
func (t *SealTransport) notice(from stack.Addr, data []byte) {
	if bytes.Equal(data, SealNotice) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if last, ok := t.noticed[from]; ok && now.Sub(last) < noticeEvery {
		t.mu.Unlock()
		return
	}
	if len(t.noticed) >= maxNoticed {
		clear(t.noticed)
	}
	t.noticed[from] = now
	t.mu.Unlock()
	_ = t.inner.Send(from, [][]byte{SealNotice})
}

// Plain wraps an unsealed transport so that a SealNotice from a peer is
// reported to onNotice (with the peer) instead of reaching the stack:
// the process learns that the peer requires sealed links. Everything
// else passes through.
func Plain(inner stack.Transport, onNotice func(from stack.Addr)) *PlainTransport {
	t := &PlainTransport{inner: inner, onNotice: onNotice}
	inner.SetReceiver(func(from stack.Addr, data []byte) {
		if bytes.Equal(data, SealNotice) {
			onNotice(from)
			return
		}
		if f := t.recv.Load(); f != nil {
			(*f)(from, data)
		}
	})
	return t
}

// PlainTransport is the transport Plain returns.
type PlainTransport struct {
	inner    stack.Transport
	onNotice func(from stack.Addr)
	recv     atomic.Pointer[func(from stack.Addr, data []byte)]
}

func (t *PlainTransport) Local() stack.Addr                      { return t.inner.Local() }
func (t *PlainTransport) MTU() int                               { return t.inner.MTU() }
func (t *PlainTransport) Send(to stack.Addr, vec [][]byte) error { return t.inner.Send(to, vec) }
func (t *PlainTransport) Close() error                           { return t.inner.Close() }
func (t *PlainTransport) SetReceiver(f func(from stack.Addr, data []byte)) {
	t.recv.Store(&f)
}

// SetBatcher passes the node's batcher to the inner transport.
func (t *PlainTransport) SetBatcher(batch func(f func())) {
	if b, ok := t.inner.(interface{ SetBatcher(func(func())) }); ok {
		b.SetBatcher(batch)
	}
}

// Assist implements stack.Assister when the inner transport does.
func (t *PlainTransport) Assist(from stack.Addr, done func() bool, d time.Duration) bool {
	if a, ok := t.inner.(stack.Assister); ok {
		return a.Assist(from, done, d)
	}
	return false
}

// replayWindow remembers which of the newest replayWindowN counters of one
// sender incarnation arrived. It changes only under the transport's mu
// (mark); its words are atomic so that open may look at it without the
// lock, as a first check.
type replayWindow struct {
	hi   atomic.Uint64 // the highest counter seen (0: none)
	bits [replayWindowN / 64]atomic.Uint64
}

// verdict is what a replay window says of a counter.
type verdict int

const (
	fresh    verdict = iota
	stale            // older than the window (or 0: counters start at 1)
	replayed         // seen before
)

func (t *SealTransport) refuse(v verdict) {
	if v == stale {
		t.stats.stale.Add(1)
	} else {
		t.stats.replayed.Add(1)
	}
}

// check says whether ctr is new to the window: exactly, with the
// transport's mu held. Without it (open's first look, while mark may
// run), a verdict other than fresh is still right to refuse, because hi
// only grows and mark clears a counter's bit before hi passes it: a bit
// found set once hi >= ctr was set by ctr itself (a replay) or by a
// counter a whole window newer (ctr is stale; counted as replayed in
// that race).
func (w *replayWindow) check(ctr uint64) verdict {
	hi := w.hi.Load()
	switch {
	case ctr == 0:
		return stale
	case ctr > hi:
		return fresh
	case hi-ctr >= replayWindowN:
		return stale
	case w.bits[(ctr/64)%uint64(len(w.bits))].Load()&(1<<(ctr%64)) != 0:
		return replayed
	}
	return fresh
}

// mark records ctr (which check accepted). Called with the transport's mu
// held.
func (w *replayWindow) mark(ctr uint64) {
	if hi := w.hi.Load(); ctr > hi {
		// Slide: clear the bits of the counters that leave the window's
		// range (hi+1 .. ctr), at most the whole window. The bits are
		// cleared before hi moves, so a look without the lock never
		// takes an old bit for one of the new counters.
		for c, n := hi+1, 0; c < ctr && n < replayWindowN; c, n = c+1, n+1 {
			b := &w.bits[(c/64)%uint64(len(w.bits))]
			b.Store(b.Load() &^ (1 << (c % 64)))
		}
		w.hi.Store(ctr)
	}
	b := &w.bits[(ctr/64)%uint64(len(w.bits))]
	b.Store(b.Load() | 1<<(ctr%64))
}
