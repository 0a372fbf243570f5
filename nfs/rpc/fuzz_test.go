package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"strata/nfs/xdr"
)

// FuzzCallHeader runs the server's call parser, and then its whole
// dispatch, on arbitrary messages: nothing panics, and every reply the
// server would send parses and carries the call's XID.
func FuzzCallHeader(f *testing.F) {
	var body xdr.Writer
	(&AuthSys{Stamp: 1, Machine: "m", UID: 2, GID: 3, GIDs: []uint32{4}}).Marshal(&body)
	f.Add(rawCall(1, 2, testProg, 1, procEcho, AuthNone, nil, opaqueArgs([]byte("hi"))))
	f.Add(rawCall(2, 2, testProg, 1, procCred, AuthSysFlavor, body.Bytes(), nil))
	f.Add(rawCall(3, 2, testProg, 2, procNull, AuthNone, nil, nil))
	f.Add(rawCall(4, 3, testProg, 1, procNull, AuthNone, nil, nil))
	f.Add(rawCall(5, 2, testProg, 1, procPanic, 6, []byte{1, 2, 3, 4}, nil))
	f.Add([]byte{0, 0, 0, 1})

	s, _ := newTestServer(f)
	// Cancelled, so that procSleep with a random duration returns at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, msg []byte) {
		var h callHeader
		out, err := parseCall(msg, &h)
		if (out == parseOK) != (err == nil) {
			t.Fatalf("outcome %d with error %v", out, err)
		}
		if out == parseOK {
			if !bytes.HasSuffix(msg, h.args) || len(h.args) > len(msg)-40 {
				t.Fatalf("args are not the tail of the message")
			}
			if (h.credFlavor == AuthSysFlavor) != (h.sys != nil) {
				t.Fatal("Sys does not match the flavor")
			}
			if h.sys != nil && h.sys.Validate() != nil {
				t.Fatal("accepted an invalid AUTH_SYS")
			}
		}

		req := s.getRequest()
		defer s.putRequest(req)
		if !s.handle(ctx, req, msg, "tcp", nil, MaxUDPMessage) {
			if out != parseDrop {
				t.Fatalf("no reply for outcome %d", out)
			}
			return
		}
		if out == parseDrop {
			t.Fatal("reply to a dropped message")
		}
		req.hdr.Write(req.res.Bytes())
		xid, _, err := parseReply(req.hdr.Bytes())
		var re *ReplyError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("unparseable reply: %v", err)
		}
		if xid != h.xid {
			t.Fatalf("reply xid %d, call xid %d", xid, h.xid)
		}
	})
}

// FuzzAuthSys decodes arbitrary AUTH_SYS bodies: no panic, and what
// decodes is within limits and re-encodes to the same bytes (apart from
// padding).
func FuzzAuthSys(f *testing.F) {
	var w xdr.Writer
	(&AuthSys{Stamp: 7, Machine: "abcde", UID: 1, GID: 2, GIDs: []uint32{1, 2, 3}}).Marshal(&w)
	f.Add(w.Bytes())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := UnmarshalAuthSys(body)
		if err != nil {
			if !errors.Is(err, ErrBadAuthSys) {
				t.Fatalf("error %v does not wrap ErrBadAuthSys", err)
			}
			return
		}
		if a.Validate() != nil {
			t.Fatal("decoded an invalid AuthSys")
		}
		var re xdr.Writer
		a.Marshal(&re)
		got := re.Bytes()
		if len(got) != len(body) {
			t.Fatalf("re-encoded %d bytes from %d", len(got), len(body))
		}
		for i := range got {
			if got[i] != body[i] && got[i] != 0 {
				t.Fatalf("byte %d differs", i)
			}
		}
	})
}

// refRecords is a simple reference reassembler: it returns the complete
// records in stream and how it ended.
func refRecords(stream []byte, max int) ([][]byte, error) {
	var recs [][]byte
	var cur []byte
	inRecord := false
	for {
		if len(stream) == 0 {
			if inRecord {
				return recs, io.ErrUnexpectedEOF
			}
			return recs, io.EOF
		}
		if len(stream) < 4 {
			return recs, io.ErrUnexpectedEOF
		}
		h := binary.BigEndian.Uint32(stream)
		n := int(h & 0x7fffffff)
		stream = stream[4:]
		if len(cur)+n > max {
			return recs, ErrRecordTooLarge
		}
		if n > len(stream) {
			return recs, io.ErrUnexpectedEOF
		}
		cur = append(cur, stream[:n]...)
		stream = stream[n:]
		inRecord = true
		if h&0x80000000 != 0 {
			recs = append(recs, cur)
			cur = nil
			inRecord = false
		}
	}
}

// smallReader returns at most n bytes per Read.
type smallReader struct {
	r io.Reader
	n int
}

func (s *smallReader) Read(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	return s.r.Read(p)
}

// FuzzRecordReader reassembles arbitrary byte streams and compares the
// records and the final error with a reference implementation.
func FuzzRecordReader(f *testing.F) {
	f.Add(fragments([]byte("hello world"), 3, 3, 8), uint16(64), uint8(3), uint8(5))
	f.Add(append(fragments([]byte("ab")), 0x80, 0, 0), uint16(2), uint8(0), uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(100), uint8(1), uint8(100))
	f.Fuzz(func(t *testing.T, stream []byte, max uint16, chunk, readSize uint8) {
		want, wantErr := refRecords(stream, int(max))
		rr := recordReader{
			r:     &smallReader{r: bytes.NewReader(stream), n: int(readSize) + 1},
			max:   int(max),
			chunk: int(chunk),
		}
		var buf []byte
		for i := 0; ; i++ {
			rec, err := rr.next(buf)
			if err != nil {
				if i != len(want) || err != wantErr {
					t.Fatalf("after %d records: %v; reference: %d records, %v", i, err, len(want), wantErr)
				}
				return
			}
			if i >= len(want) || !bytes.Equal(rec, want[i]) {
				t.Fatalf("record %d differs from the reference", i)
			}
			if len(rec) > int(max) {
				t.Fatal("record over max")
			}
			buf = rec
		}
	})
}
