package smr

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"strata/wor"
)

func TestEntryCodec(t *testing.T) {
	cases := []entry{
		{kind: kindJunk},
		{kind: kindNoop, leader: 3, epoch: 1 << 40},
		{kind: kindBatch, proposer: 7, nonce: 1<<63 + 5, cmds: [][]byte{[]byte("a"), {}, bytes.Repeat([]byte{0xff}, 300)}},
		{kind: kindPointer, snap: snapRef{k: 9, index: 12345, at: pos{17, 1023}}},
		{kind: kindPart, proposer: 7, nonce: 9, part: 2, parts: 3, payload: []byte("tail")},
	}
	for _, e := range cases {
		var b []byte
		switch e.kind {
		case kindJunk:
			b = junkEntry
		case kindNoop:
			b = encodeNoop(e.leader, e.epoch)
		case kindBatch:
			b = encodeBatch(e.proposer, e.nonce, e.cmds)
		case kindPointer:
			b = encodePointer(e.snap)
		case kindPart:
			b = encodePart(e.proposer, e.nonce, e.part, e.parts, e.payload)
		}
		got, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("%q: %v", e.kind, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip of %+v gave %+v", e, got)
		}
		// Every strict prefix and every extension is refused.
		for i := range b {
			if _, err := decodeEntry(b[:i]); err == nil {
				t.Fatalf("%q: prefix of %d bytes accepted", e.kind, i)
			}
		}
		if _, err := decodeEntry(append(b[:len(b):len(b)], 0)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: trailing byte: %v", e.kind, err)
		}
	}
	for _, bad := range [][]byte{nil, {'W'}, {'X', 'J'}, {'W', 'Q'}, {'W', 'B', 1, 1, 0}, {'W', 'B', 1, 1, 5, 0}, {'W', 'P', 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		{'W', 'F', 1, 1, 0, 1, 1, 'x'}, {'W', 'F', 1, 1, 2, 2, 1, 'x'}, {'W', 'F', 1, 1, 0, 2, 0}, {'W', 'F', 1, 1, 0, 2, 2, 'x'}} {
		if _, err := decodeEntry(bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%x accepted: %v", bad, err)
		}
	}
}

func TestBatchFitsMaxEntry(t *testing.T) {
	// The largest command a batch of maxEntry bytes holds, with the
	// largest proposer and nonce, encodes within maxEntry.
	for _, max := range []int{64, 256, DefaultMaxEntry, wor.MaxValue} {
		cmd := make([]byte, maxCommand(max))
		if b := encodeBatch(^uint64(0), ^uint64(0), [][]byte{cmd}); len(b) > max {
			t.Fatalf("maxEntry %d: a command of %d bytes encodes in %d", max, len(cmd), len(b))
		}
	}
}

func TestPartsFitMaxEntry(t *testing.T) {
	// A command split into parts: each part within maxEntry, the parts
	// join to the command, and as few as the size needs.
	for _, max := range []int{64, 256, DefaultMaxEntry} {
		for _, n := range []int{1, max - partOverhead, max - partOverhead + 1, 10 * max} {
			cmd := bytes.Repeat([]byte{0xa5}, n)
			parts := encodeParts(^uint64(0), ^uint64(0), cmd, max)
			if want := (n + max - partOverhead - 1) / (max - partOverhead); len(parts) != want {
				t.Fatalf("maxEntry %d, command of %d bytes: %d parts, want %d", max, n, len(parts), want)
			}
			var joined []byte
			for i, b := range parts {
				if len(b) > max {
					t.Fatalf("maxEntry %d: part %d of %d bytes", max, i, len(b))
				}
				if len(parts) < 2 {
					continue // a one-part command is sent as a batch
				}
				e, err := decodeEntry(b)
				if err != nil || e.part != uint64(i) || e.parts != uint64(len(parts)) {
					t.Fatalf("maxEntry %d: part %d decodes to %+v, %v", max, i, e, err)
				}
				joined = append(joined, e.payload...)
			}
			if len(parts) > 1 && !bytes.Equal(joined, cmd) {
				t.Fatalf("maxEntry %d: %d parts join to %d bytes, want %d", max, len(parts), len(joined), n)
			}
		}
	}
}

func TestMetaCodecs(t *testing.T) {
	lm := logMeta{leader: 2, epoch: 5, size: 1024, addr: "udp:10.0.0.1:7000"}
	got, err := decodeLogMeta(encodeLogMeta(lm))
	if err != nil || got != lm {
		t.Fatalf("log metadata round trip: %+v, %v", got, err)
	}
	if _, err := decodeLogMeta(encodeLogMeta(logMeta{size: 1})); err == nil {
		t.Fatal("a log segment of one register accepted")
	}
	if _, err := decodeLogMeta(encodeLogMeta(logMeta{size: wor.MaxOffset + 1})); err == nil {
		t.Fatal("a log segment past MaxOffset accepted")
	}
	data := bytes.Repeat([]byte("snapshot"), 100)
	sm := newSnapMeta(snapRef{k: 3, index: 99, at: pos{4, 5}}, data, 64)
	if sm.chunks != 13 {
		t.Fatalf("%d chunks, want 13", sm.chunks)
	}
	got2, err := decodeSnapMeta(encodeSnapMeta(sm))
	if err != nil || got2 != sm {
		t.Fatalf("snapshot metadata round trip: %+v, %v", got2, err)
	}
	var joined []byte
	for i := range sm.chunks {
		joined = append(joined, sm.chunk(data, i)...)
	}
	if err := sm.check(joined); err != nil {
		t.Fatal(err)
	}
	joined[7] ^= 1
	if err := sm.check(joined); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a corrupted snapshot passed its check: %v", err)
	}
	if err := sm.check(joined[:10]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a short snapshot passed its check: %v", err)
	}
	// Kinds do not mix.
	if _, err := decodeSnapMeta(encodeLogMeta(lm)); err == nil {
		t.Fatal("log metadata decoded as a snapshot header")
	}
	if _, err := decodeLogMeta(encodeSnapMeta(sm)); err == nil {
		t.Fatal("a snapshot header decoded as log metadata")
	}
	bad := sm
	bad.chunks++
	if _, err := decodeSnapMeta(encodeSnapMeta(bad)); err == nil {
		t.Fatal("a header whose chunk count does not match its size accepted")
	}
}

// The fuzz targets: malformed bytes give ErrMalformed, never a panic;
// whatever decodes re-encodes to the same bytes.

func FuzzDecodeEntry(f *testing.F) {
	f.Add(junkEntry)
	f.Add(encodeNoop(1, 2))
	f.Add(encodeBatch(1, 2, [][]byte{[]byte("put k v"), nil}))
	f.Add(encodePointer(snapRef{k: 1, index: 2, at: pos{3, 4}}))
	f.Add(encodePart(1, 2, 0, 2, []byte("put k")))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		var again []byte
		switch e.kind {
		case kindJunk:
			again = junkEntry
		case kindNoop:
			again = encodeNoop(e.leader, e.epoch)
		case kindBatch:
			again = encodeBatch(e.proposer, e.nonce, e.cmds)
		case kindPointer:
			again = encodePointer(e.snap)
		case kindPart:
			again = encodePart(e.proposer, e.nonce, e.part, e.parts, e.payload)
		}
		if !bytes.Equal(again, b) {
			// Varints have one canonical form each except for padded
			// encodings; those must at least decode the same.
			e2, err := decodeEntry(again)
			if err != nil || !reflect.DeepEqual(e, e2) {
				t.Fatalf("%x decoded to %+v, which re-encodes to %x (%v)", b, e, again, err)
			}
		}
	})
}

func FuzzDecodeLogMeta(f *testing.F) {
	f.Add(encodeLogMeta(logMeta{leader: 1, epoch: 1, size: 1024, addr: "a"}))
	f.Add([]byte{'W', 'L'})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeLogMeta(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		if m2, err := decodeLogMeta(encodeLogMeta(m)); err != nil || m2 != m {
			t.Fatalf("%+v does not round-trip: %+v, %v", m, m2, err)
		}
	})
}

func FuzzDecodeSnapMeta(f *testing.F) {
	f.Add(encodeSnapMeta(newSnapMeta(snapRef{k: 1, index: 2, at: pos{3, 4}}, []byte("state"), 2)))
	f.Add(encodeSnapMeta(newSnapMeta(snapRef{}, nil, 64)))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeSnapMeta(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		if m2, err := decodeSnapMeta(encodeSnapMeta(m)); err != nil || m2 != m {
			t.Fatalf("%+v does not round-trip: %+v, %v", m, m2, err)
		}
		// A header that decodes describes chunks that cover its size.
		if m.chunks*m.chunkSize < m.size || (m.chunks > 0 && (m.chunks-1)*m.chunkSize >= m.size) {
			t.Fatalf("header %+v: chunks do not cover the size", m)
		}
	})
}

func TestConfigChecks(t *testing.T) {
	c := wor.NewClient(nil)
	good := Config{Client: c, ID: 1}
	if _, err := good.withDefaults(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no client":          func(c *Config) { c.Client = nil },
		"zero id":            func(c *Config) { c.ID = 0 },
		"log out of range":   func(c *Config) { c.Log = wor.MaxDataSegment },
		"segment of one":     func(c *Config) { c.SegmentSize = 1 },
		"segment too large":  func(c *Config) { c.SegmentSize = wor.MaxOffset + 1 },
		"tiny entries":       func(c *Config) { c.MaxEntry = 10 },
		"huge entries":       func(c *Config) { c.MaxEntry = wor.MaxValue + 1 },
		"negative pipeline":  func(c *Config) { c.Pipeline = -1 },
		"negative heartbeat": func(c *Config) { c.Heartbeat = -1 },
		"timeout too short":  func(c *Config) { c.Heartbeat, c.ElectionTimeout = 100*time.Millisecond, 150*time.Millisecond },
		"address too long":   func(c *Config) { c.Addr = string(make([]byte, maxAddr+1)) },
	} {
		cfg := good
		mod(&cfg)
		if _, err := cfg.withDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
