// Package rpc implements ONC RPC version 2 (RFC 5531) for Strata's NFSv3
// server: a server over TCP (record marking) and UDP, a client for tests
// and benchmark drivers, and registration with the local portmapper
// (rpcbind version 2).
//
// # Server guarantees
//
//   - Input never makes the server panic. A message whose call header
//     cannot be parsed (too short for xid, message type, rpcvers, prog,
//     vers, proc, credential and verifier, or not a CALL) is dropped and
//     counted (Stats.Garbage); a TCP record longer than MaxRecord closes
//     the connection and is counted (Stats.BadRecords). A handler that
//     panics is recovered, logged, counted and answered with SYSTEM_ERR.
//   - Every call whose header parses gets exactly one reply (unless the
//     connection fails first): RPC_MISMATCH (low = high = 2) for rpcvers
//     != 2; AUTH_ERROR/AUTH_BADCRED for a credential flavor other than
//     AUTH_NONE and AUTH_SYS or a malformed AUTH_SYS body; PROG_UNAVAIL
//     for an unregistered program; PROG_MISMATCH with the lowest and
//     highest registered versions for an unregistered version; otherwise
//     whatever the Handler returns. Replies carry an AUTH_NONE verifier.
//     Verifiers in calls are parsed but not checked.
//   - Calls are handled concurrently: each on its own goroutine, up to
//     Server.MaxInFlight per TCP connection (the server stops reading a
//     connection at the limit) and Server.MaxInFlightUDP per UDP socket.
//     Replies on a connection may therefore leave in a different order
//     than their calls arrived; clients match them by XID. Each reply is
//     one single-fragment record, written whole under a per-connection
//     lock.
//   - ServeTCP and ServeUDP return only after every handler they started
//     has returned.
//
// # Assumptions
//
//   - Handlers do not keep the *Call, its Args or the bytes they return
//     after returning: the server reuses that memory.
//   - There is no duplicate request cache: a call retransmitted over UDP
//     runs again. Callers that need at-most-once execution of
//     non-idempotent procedures must provide it above this package.
//   - AUTH_SYS credentials are taken at face value (as NFS does); this
//     package does not authenticate anyone.
//
// # Client
//
// Client multiplexes concurrent calls over one TCP connection (matched by
// XID by one reader goroutine) or one UDP socket (same, with
// retransmission of the same XID on a timeout). Replies other than an
// accepted SUCCESS are returned as *ReplyError.
package rpc
