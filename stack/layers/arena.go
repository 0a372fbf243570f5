package layers

// arena hands out small buffers carved from larger chunks, for bytes a
// layer keeps per message (headers of kept casts, order entries), so that
// keeping them costs no allocation each. A chunk is garbage once nothing
// refers to it: messages are dropped when stable, so chunks are too.
type arena struct{ chunk []byte }

const arenaChunk = 8 << 10

// take returns a buffer of n bytes (zero if never used before; the caller
// overwrites it).
func (a *arena) take(n int) []byte {
	if n > arenaChunk/8 {
		return make([]byte, n)
	}
	if len(a.chunk) < n {
		a.chunk = make([]byte, arenaChunk)
	}
	b := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return b
}

// copy returns a copy of b in the arena.
func (a *arena) copy(b []byte) []byte {
	c := a.take(len(b))
	copy(c, b)
	return c
}
