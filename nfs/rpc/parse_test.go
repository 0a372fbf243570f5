package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"strata/nfs/xdr"
)

func TestParseCall(t *testing.T) {
	var body xdr.Writer
	a := &AuthSys{Stamp: 9, Machine: "host", UID: 1, GID: 2, GIDs: []uint32{3, 4}}
	a.Marshal(&body)
	msg := rawCall(0xabcdef, 2, 100003, 3, 7, AuthSysFlavor, body.Bytes(), []byte{1, 2, 3, 4, 5})
	var h callHeader
	out, err := parseCall(msg, &h)
	if out != parseOK || err != nil {
		t.Fatalf("outcome %d err %v", out, err)
	}
	if h.xid != 0xabcdef || h.prog != 100003 || h.vers != 3 || h.proc != 7 || h.credFlavor != AuthSysFlavor ||
		!bytes.Equal(h.args, []byte{1, 2, 3, 4, 5}) || h.sys == nil || h.sys.Machine != "host" ||
		!slices.Equal(h.sys.GIDs, []uint32{3, 4}) {
		t.Fatalf("header %+v sys %+v", h, h.sys)
	}
	// Every strict prefix that cuts the header is dropped.
	hdrLen := len(msg) - 5
	for n := range hdrLen {
		out, err := parseCall(msg[:n], &h)
		if n >= 12 && out == parseOK {
			t.Fatalf("prefix %d parsed", n)
		}
		if out != parseDrop || err == nil {
			t.Fatalf("prefix %d: outcome %d err %v", n, out, err)
		}
	}
	if out, _ := parseCall(msg[:hdrLen], &h); out != parseOK || len(h.args) != 0 {
		t.Fatalf("header without args: %d", out)
	}
	// A reply is not a call.
	reply := slices.Clone(msg)
	binary.BigEndian.PutUint32(reply[4:], msgReply)
	if out, _ := parseCall(reply, &h); out != parseDrop {
		t.Fatal("reply parsed as a call")
	}
	// rpcvers mismatch needs only 12 bytes.
	if out, _ := parseCall([]byte{0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1}, &h); out != parseRPCMismatch || h.xid != 5 {
		t.Fatalf("rpcvers 1: outcome %d xid %d", out, h.xid)
	}
	// Unknown flavor; verifier over 400 bytes.
	if out, _ := parseCall(rawCall(1, 2, 1, 1, 1, 3, nil, nil), &h); out != parseBadCred {
		t.Fatalf("flavor 3: %d", out)
	}
	var w xdr.Writer
	for _, v := range []uint32{1, 0, 2, 1, 1, 1, 0, 0, 0} {
		w.Uint32(v)
	}
	w.Opaque(make([]byte, 401))
	if out, _ := parseCall(w.Bytes(), &h); out != parseDrop {
		t.Fatalf("long verifier: %d", out)
	}
}

func TestAuthSysLimits(t *testing.T) {
	ok := []AuthSys{
		{},
		{Stamp: 1, Machine: string(bytes.Repeat([]byte{'x'}, 255)), UID: 2, GID: 3, GIDs: make([]uint32, 16)},
	}
	for _, a := range ok {
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
		var w xdr.Writer
		a.Marshal(&w)
		if w.Len() > MaxAuthBytes {
			t.Fatalf("largest AUTH_SYS body is %d bytes", w.Len())
		}
		got, err := UnmarshalAuthSys(w.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got.Machine != a.Machine || len(got.GIDs) != len(a.GIDs) || got.UID != a.UID {
			t.Fatalf("got %+v", got)
		}
	}
	bad := []AuthSys{
		{Machine: string(bytes.Repeat([]byte{'x'}, 256))},
		{GIDs: make([]uint32, 17)},
	}
	for _, a := range bad {
		if err := a.Validate(); !errors.Is(err, ErrBadAuthSys) {
			t.Fatalf("Validate %v", err)
		}
		var w xdr.Writer
		a.Marshal(&w)
		if _, err := UnmarshalAuthSys(w.Bytes()); !errors.Is(err, ErrBadAuthSys) {
			t.Fatalf("Unmarshal %v", err)
		}
	}
	// A huge gid count must not allocate.
	if _, err := UnmarshalAuthSys([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}); !errors.Is(err, ErrBadAuthSys) {
		t.Fatal(err)
	}
}

func TestParseReply(t *testing.T) {
	var w xdr.Writer
	appendAcceptedHeader(&w, 4, ProgMismatch, 2, 3)
	if _, _, err := parseReply(w.Bytes()[:len(w.Bytes())-4]); !errors.Is(err, ErrBadReply) {
		t.Fatalf("truncated PROG_MISMATCH: %v", err)
	}
	for _, msg := range [][]byte{
		nil,
		{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, // a call
		{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2}, // bad reply_stat
		{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7}, // bad reject_stat
		{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, // AUTH_ERROR without auth_stat
	} {
		if _, _, err := parseReply(msg); !errors.Is(err, ErrBadReply) {
			t.Fatalf("%v: %v", msg, err)
		}
	}
	e := &ReplyError{Denied: true, Reject: AuthError, Auth: AuthTooWeak}
	if e.Error() == "" || (&ReplyError{Accept: 42}).Error() == "" || errors.Is(e, &ReplyError{Denied: true, Reject: AuthError, Auth: AuthBadCred}) {
		t.Fatal("ReplyError matching")
	}
}

func TestRecordReader(t *testing.T) {
	stream := append(fragments([]byte("abcdefgh"), 4), fragments([]byte("12345678"))...)
	stream = append(stream, fragments(nil)...)
	rr := recordReader{r: bytes.NewReader(stream), max: 8, chunk: 3}
	var buf []byte
	for _, want := range []string{"abcdefgh", "12345678", ""} {
		got, err := rr.next(buf)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
		buf = got
	}
	if _, err := rr.next(buf); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	// Cut inside a header, inside data, and after a non-last fragment.
	for _, cut := range [][]byte{stream[:2], stream[:6], stream[:8]} {
		rr := recordReader{r: bytes.NewReader(cut), max: 100}
		if _, err := rr.next(nil); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut %d: %v", len(cut), err)
		}
	}
	rr = recordReader{r: bytes.NewReader(stream), max: 7}
	if _, err := rr.next(nil); err != ErrRecordTooLarge {
		t.Fatalf("over max: %v", err)
	}
}

func TestPmapNoRpcbind(t *testing.T) {
	old := pmapAddr
	defer func() { pmapAddr = old }()

	// A closed port: refused at once.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pmapAddr = pc.LocalAddr().String()
	pc.Close()
	start := time.Now()
	if _, err := PmapSet(context.Background(), testProg, 1, IPProtoTCP, 2049); !errors.Is(err, ErrNoRpcbind) {
		t.Fatalf("closed port: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("closed port took %v", d)
	}

	// A port where nobody answers: about a second.
	pc, err = net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pmapAddr = pc.LocalAddr().String()
	start = time.Now()
	if _, err := PmapUnset(context.Background(), testProg, 1); !errors.Is(err, ErrNoRpcbind) {
		t.Fatalf("silent port: %v", err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("silent port took %v", d)
	}

	// The caller's own cancellation is not ErrNoRpcbind.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PmapUnset(ctx, testProg, 1); errors.Is(err, ErrNoRpcbind) || err == nil {
		t.Fatalf("cancelled: %v", err)
	}

	// The real one, if nothing runs there.
	pmapAddr = old
	start = time.Now()
	_, err = PmapUnset(context.Background(), testProg, 1)
	if err == nil || !errors.Is(err, ErrNoRpcbind) {
		t.Skipf("something answers on %s (%v): not asserting ErrNoRpcbind", old, err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("took %v", d)
	}
}

func TestPmapAgainstFakeRpcbind(t *testing.T) {
	old := pmapAddr
	defer func() { pmapAddr = old }()
	type mapping struct{ prog, vers, proto, port uint32 }
	var set []mapping
	s := NewServer(nil)
	s.Register(PmapProg, PmapVers, func(ctx context.Context, c *Call, res *xdr.Writer) AcceptStat {
		m := mapping{c.Args.Uint32(), c.Args.Uint32(), c.Args.Uint32(), c.Args.Uint32()}
		if c.Args.Done() != nil {
			return GarbageArgs
		}
		switch c.Proc {
		case pmapProcSet:
			res.Bool(!slices.Contains(set, m))
			set = append(set, m) // the server handles one call at a time here
		case pmapProcUns:
			n := len(set)
			set = slices.DeleteFunc(set, func(x mapping) bool { return x.prog == m.prog && x.vers == m.vers })
			res.Bool(len(set) < n)
		default:
			return ProcUnavail
		}
		return Success
	})
	s.MaxInFlightUDP = 1
	pmapAddr = serveUDP(t, s, nil)
	ctx := testCtx(t)
	if ok, err := PmapSet(ctx, 100003, 3, IPProtoTCP, 2049); !ok || err != nil {
		t.Fatalf("set: %v %v", ok, err)
	}
	if ok, err := PmapSet(ctx, 100003, 3, IPProtoTCP, 2049); ok || err != nil {
		t.Fatalf("second set: %v %v", ok, err)
	}
	if ok, err := PmapUnset(ctx, 100003, 3); !ok || err != nil {
		t.Fatalf("unset: %v %v", ok, err)
	}
	if ok, err := PmapUnset(ctx, 100003, 3); ok || err != nil {
		t.Fatalf("second unset: %v %v", ok, err)
	}
}
