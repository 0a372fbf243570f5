package stack

import (
	"encoding/binary"
	"errors"
	"sync"
)

// Bundles: a node sends several frames for one peer as one datagram
// (Node.flushLocked). Wire format: magic 'B', version 1, then for each
// frame its length (uvarint) and its bytes; at least two frames. A frame
// never starts with 'B' (the bottom layer's magic is 'S'), so a receiver
// tells a bundle from a frame by the first byte.
const (
	bundleMagic         = 'B'
	bundleVersion       = 1
	bundleFrameOverhead = binary.MaxVarintLen32
)

// errBundle: a datagram that starts like a bundle but is not a valid one.
var errBundle = errors.New("stack: malformed bundle")

// outFrame is a frame waiting to be sent: the message itself (its
// payload is immutable until the stack is done with it, see Node.Send),
// so that it is copied once, into the datagram or bundle.
type outFrame struct {
	to Addr
	m  *Msg
	n  int // m.Len()
}

// appendMsgToBundle adds m's bytes as a frame of bundle.
func appendMsgToBundle(bundle []byte, m *Msg, n int) []byte {
	if len(bundle) == 0 {
		bundle = append(bundle, bundleMagic, bundleVersion)
	}
	bundle = binary.AppendUvarint(bundle, uint64(n))
	return m.AppendTo(bundle)
}

// appendToBundle adds frame to bundle (starting it if empty).
func appendToBundle(bundle, frame []byte) []byte {
	if len(bundle) == 0 {
		bundle = append(bundle, bundleMagic, bundleVersion)
	}
	bundle = binary.AppendUvarint(bundle, uint64(len(frame)))
	return append(bundle, frame...)
}

// splitBundle calls f with each frame of a bundle (capacity-limited
// subslices of data). A malformed bundle yields the frames before the
// damage and an error.
func splitBundle(data []byte, f func(frame []byte)) error {
	if len(data) < 2 || data[0] != bundleMagic || data[1] != bundleVersion {
		return errBundle
	}
	rest := data[2:]
	frames := 0
	for len(rest) > 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n == 0 || n > uint64(len(rest)-k) {
			return errBundle
		}
		frame := rest[k : k+int(n) : k+int(n)]
		rest = rest[k+int(n):]
		f(frame)
		frames++
	}
	if frames < 2 {
		return errBundle
	}
	return nil
}

// Frame buffers are pooled by size class: most frames are small, and a
// bundle is at most maxBundle.
var framePools = [...]sync.Pool{
	{New: func() any { b := make([]byte, 0, 512); return &b }},
	{New: func() any { b := make([]byte, 0, 4096); return &b }},
	{New: func() any { b := make([]byte, 0, 65536); return &b }},
	{New: func() any { b := make([]byte, 0, maxBundle); return &b }},
}

// maxBundle caps a bundle below the transport's MTU (TCP's is 1 MiB):
// larger ones save no system calls worth having, and would miss the pool
// (each a fresh, zeroed allocation).
const maxBundle = 256 << 10

func poolFor(c int) int {
	switch {
	case c <= 512:
		return 0
	case c <= 4096:
		return 1
	case c <= 65536:
		return 2
	default:
		return 3
	}
}

// getFrame returns a buffer of length n (contents arbitrary).
func getFrame(n int) []byte {
	if n > maxBundle {
		return make([]byte, n)
	}
	bp := framePools[poolFor(n)].Get().(*[]byte)
	return (*bp)[:n]
}

// putFrame recycles a buffer from getFrame.
func putFrame(b []byte) {
	c := cap(b)
	if c != 512 && c != 4096 && c != 65536 && c != maxBundle {
		return
	}
	b = b[:0]
	framePools[poolFor(c)].Put(&b)
}
