package rpc

import (
	"encoding/binary"
	"errors"
	"io"
)

// MaxRecord is the largest record (the sum of its fragments) the server
// accepts on a TCP connection, and the largest reply the client accepts:
// room for a 4 MiB NFS WRITE or READ and its headers. The server closes a
// connection that sends a larger one.
const MaxRecord = 4<<20 + 64<<10

// lastFragment is the record-marking bit of a record's last fragment.
const lastFragment = 1 << 31

// maxFragment is the largest length a fragment header can carry.
const maxFragment = 1<<31 - 1

// ErrRecordTooLarge is returned for a record longer than the reader's cap.
var ErrRecordTooLarge = errors.New("rpc: record too large")

// recordReader reassembles record-marked records (RFC 5531 §11) from a
// byte stream.
type recordReader struct {
	r   io.Reader
	max int // largest record accepted
	// chunk, if positive, bounds how far the buffer grows ahead of the data
	// actually received, so a peer that announces a large fragment and
	// sends nothing costs at most chunk bytes. Zero trusts the announced
	// length (one allocation of the right size).
	chunk int
	hdr   [4]byte
}

// next reads one record into buf[:0] (growing it as needed) and returns
// it. A clean end of stream between records gives io.EOF; one inside a
// record gives io.ErrUnexpectedEOF. On error the returned slice is buf[:0]
// (possibly grown) so the caller can reuse its storage.
func (rr *recordReader) next(buf []byte) ([]byte, error) {
	buf = buf[:0]
	first := true
	for {
		if _, err := io.ReadFull(rr.r, rr.hdr[:]); err != nil {
			if err == io.EOF && !first {
				err = io.ErrUnexpectedEOF
			}
			return buf[:0], err
		}
		first = false
		h := binary.BigEndian.Uint32(rr.hdr[:])
		n := int(h &^ lastFragment)
		if n > rr.max-len(buf) {
			return buf[:0], ErrRecordTooLarge
		}
		for n > 0 {
			step := n
			if rr.chunk > 0 && step > rr.chunk {
				step = rr.chunk
			}
			if cap(buf)-len(buf) < step {
				// Grow geometrically but never past max, so that a buffer
				// that held the largest record is exactly max long.
				nb := make([]byte, len(buf), min(max(len(buf)+step, 2*cap(buf), 64), rr.max))
				copy(nb, buf)
				buf = nb
			}
			m, err := io.ReadFull(rr.r, buf[len(buf):len(buf)+step])
			buf = buf[:len(buf)+m]
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return buf[:0], err
			}
			n -= step
		}
		if h&lastFragment != 0 {
			return buf, nil
		}
	}
}

// putRecordMark writes the header of a single-fragment record of n bytes.
func putRecordMark(b []byte, n int) {
	binary.BigEndian.PutUint32(b, lastFragment|uint32(n))
}
