// Package transport implements stack.Transport over real sockets: UDP
// datagrams (ListenUDP) and length-prefixed frames over TCP (ListenTCP).
//
// Addresses are stack.Addr values of the form "udp:host:port" and
// "tcp:host:port", with IPv6 hosts in brackets ("tcp:[::1]:7000"); Parse
// splits and checks them. Local returns the address a transport is bound
// to, which is also what its peers see as the sender of its datagrams.
//
// Guarantees common to both transports:
//
//   - Send never keeps a reference to its vec argument or to the buffers in
//     it, and never modifies them: the bytes are written out (or copied)
//     before it returns.
//   - Send rejects datagrams larger than MTU and malformed or foreign
//     addresses with an error; no input, sent or received, makes the
//     package panic.
//   - Each received datagram is handed to the receiver in a freshly
//     allocated slice of exactly its length, which the receiver owns.
//   - The receiver is called from one goroutine at a time per transport
//     (TCP: across all its connections). That goroutine is the reader's,
//     or, with busy polling, a caller's that took over receiving while it
//     waits for a reply (Assist, stack.Assister: the reader steps aside
//     at its next empty poll, or for TCP at its next frame boundary, and
//     resumes when the caller is done).
//     With no receiver set, datagrams are counted (Stats.Dropped) and
//     dropped. A receiver that blocks stalls reception (UDP: the kernel
//     drops datagrams; TCP: the sending peer's writes eventually time out).
//   - Close closes the sockets, stops every goroutine the transport started
//     and waits for them, so once it returns the receiver is not called any
//     more. Close may be called from within the receiver; it then does not
//     wait for the goroutine it runs on, which stops as soon as the
//     receiver returns. After Close, Send fails with an error matching
//     ErrClosed, and Close itself returns ErrClosed on every call after the
//     first.
//
// UDP (ListenUDP) is exactly as reliable as UDP: datagrams may be lost,
// duplicated or reordered, and nothing beyond the UDP checksum protects
// their content. Datagrams larger than the receiver's MTU are dropped and
// counted in Stats.BadFrames, so both ends should use the same MTU.
//
// TCP (ListenTCP) sends each datagram as a frame (4-byte big-endian length,
// then the bytes) on one connection per peer, dialed on the first Send to
// it and cached. The dialer first sends a hello frame announcing its listen
// address, which the acceptor reports as the sender of every frame on that
// connection; frames flow both ways, and the acceptor sends to the
// announced address on the accepted connection, so a pair of peers talking
// both ways needs one connection (two if both dial at once). Frames on
// one connection arrive complete and in order; frames in flight when a
// connection breaks are lost, and the Send that finds the connection
// broken returns an error, after which the next Send dials again — a
// reliability layer above recovers the loss by retransmitting. Besides, the
// reader goroutine of each connection notices when the peer closes it,
// and Send peeks (one non-blocking recv) at a connection idle for over a
// millisecond before reusing it, so a peer that restarted while idle
// usually costs no frame at all (on Unix; elsewhere only the reader). A
// connection whose hello is malformed or late, or that carries a frame
// longer than the receiver's MTU, is closed and counted in
// Stats.BadFrames. The announced address is not authenticated: any
// process that can connect can claim any sender address.
//
// Delayed wraps either transport to emulate a wide-area network on one
// machine: each datagram leaves a per-destination delay (plus optional
// jitter) after Send, in order per destination; Options.Wrap applies it
// in ListenOpts.
//
// Assumptions: peers run this package (same framing, same MTU); the
// receiver does not block for long; Send may block for up to the dial or
// write timeout when a TCP peer is unreachable or does not read.
package transport
