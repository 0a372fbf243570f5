package group

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// sealWith is transport options sealing with keys.
func sealWith(t *testing.T, keys ...transport.SealKey) (transport.Options, func() transport.SealStats) {
	t.Helper()
	ring, err := transport.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	var st *transport.SealTransport
	return transport.Options{Wrap: func(tr stack.Transport) (stack.Transport, error) {
			s, err := transport.Sealed(tr, ring)
			st = s
			return s, err
		}}, func() transport.SealStats {
			if st == nil {
				return transport.SealStats{}
			}
			return st.Stats()
		}
}

func sealKey(id byte, fill byte) transport.SealKey {
	k := transport.SealKey{ID: id}
	for i := range k.Secret {
		k.Secret[i] = fill + byte(i)
	}
	return k
}

// A process group runs over sealed links as over plain ones (membership,
// total order: the layers and their bypass are above the seal), and a
// process with another key cannot join it: its datagrams are refused
// and counted, and it learns nothing.
func TestSealedGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := sealKey(1, 7)
	member := func(contact stack.Addr) (*Member, func() transport.SealStats) {
		o := opts(contact)
		var stats func() transport.SealStats
		o.Transport, stats = sealWith(t, key)
		m, err := Join(ctx, "sealed", o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m, stats
	}
	a, aStats := member("")
	b, _ := member(a.Addr())
	c, _ := member(b.Addr())
	members := []*Member{a, b, c}
	for _, m := range members {
		waitView(t, m, 3)
	}
	const per = 20
	for i := range per {
		for k, m := range members {
			if err := m.Cast(fmt.Appendf(nil, "%d-%d", k, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	seqs := make([][]string, 3)
	for k, m := range members {
		for len(seqs[k]) < 3*per {
			seqs[k] = append(seqs[k], string(next(t, m, Message, nil).Body))
		}
	}
	for k := 1; k < 3; k++ {
		if !slices.Equal(seqs[k], seqs[0]) {
			t.Fatalf("member %d delivered another order", k)
		}
	}
	if s := aStats(); s.Opened == 0 || s.Refused() != 0 {
		t.Fatalf("a's seal: %+v", s)
	}
	// An outsider with the same key id and another secret.
	o := opts(a.Addr())
	var outStats func() transport.SealStats
	o.Transport, outStats = sealWith(t, sealKey(1, 99))
	jctx, jcancel := context.WithTimeout(ctx, 2*time.Second)
	defer jcancel()
	if m, err := Join(jctx, "sealed", o); err == nil {
		m.Close()
		t.Fatal("a process with another key joined")
	}
	if s := aStats(); s.Forged == 0 {
		t.Fatalf("the outsider's datagrams were not refused as forged: %+v", s)
	}
	if s := outStats(); s.Opened != 0 {
		t.Fatalf("the outsider opened %d of the group's datagrams", s.Opened)
	}
	for _, m := range members {
		if v := m.View(); len(v.Members) != 3 {
			t.Fatalf("view after the outsider: %v", v.Members)
		}
	}
}

// RPC over sealed UDP and TCP nodes: calls succeed and take the bypass
// as without the seal; a caller with another key gets no answer.
func TestSealedRPC(t *testing.T) {
	for _, n := range []string{"udp", "tcp"} {
		t.Run(n, func(t *testing.T) { sealedRPC(t, n) })
	}
}

func sealedRPC(t *testing.T, sealNet string) {
	key := sealKey(3, 1)
	so, serverStats := sealWith(t, key)
	srv, err := layers.ListenOpts(sealNet+":127.0.0.1:0", "RPC", so)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
	co, _ := sealWith(t, key)
	cli, err := layers.ListenOpts(sealNet+":127.0.0.1:0", "RPC", co)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 200 {
		resp, err := cli.Call(ctx, srv.Local(), fmt.Appendf(nil, "%d", i), time.Second)
		if err != nil || string(resp) != fmt.Sprintf("re:%d", i) {
			t.Fatalf("call %d: %q %v", i, resp, err)
		}
	}
	hits := uint64(0)
	for _, lc := range cli.Counters() {
		for _, c := range lc.Counters {
			if lc.Layer == "bypass" && strings.HasSuffix(c.Name, "_hits") {
				hits += c.Value
			}
		}
	}
	if hits == 0 {
		t.Fatal("the bypass was never taken over the sealed transport")
	}
	bo, _ := sealWith(t, sealKey(3, 2))
	bad, err := layers.ListenOpts(sealNet+":127.0.0.1:0", "RPC", bo)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bctx, bcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer bcancel()
	if _, err := bad.Call(bctx, srv.Local(), []byte("x"), 300*time.Millisecond); err == nil {
		t.Fatal("a caller with another key was answered")
	}
	if s := serverStats(); s.Forged == 0 || s.Opened < 200 {
		t.Fatalf("server seal: %+v", s)
	}
}
