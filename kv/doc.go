// Package kv is Strata's replicated key-value service: an ordered map of
// keys to values replicated with WormPaxos (package smr) over the
// write-once-register space, served over the protocol stack's RPC.
//
// Model (etcd's): every write is a command in the replicated log, and its
// revision is the command's log index. A key carries the revisions that
// created and last modified it and a version (1 after it was created,
// +1 per put; a delete removes the key, and a later put starts again at
// 1). Operations: Get, Put, Delete, CAS (compare-and-set on the version;
// 0 means the key must not exist), Scan of [start, end) in key order with
// a limit, and Watch of a key or a prefix from a revision (long polls
// over a bounded history of recent events; older revisions get
// ErrCompacted).
//
// Guarantees: writes are linearizable (applied in log order at the
// leader, their result returned once applied); gets and scans are
// linearizable by default (smr.Read with Linearizable) or, on request,
// sequentially consistent (served by the receiving server's own state,
// which may lag but never goes back). Each write carries a client session
// id and a sequence number: the state machine keeps per session the last
// sequence applied and its reply (in snapshots too), so a retried write
// is applied once and gets the first reply, whichever server the retry
// went through. Any server accepts any request and forwards writes to the
// leader; the Client follows leader changes and retries on the next
// server with the same sequence number.
//
// Assumes: the replicas of a group use the same MachineOptions (they
// decide which sessions are forgotten); a session has one write in
// flight at a time (the Client keeps a pool of sessions for concurrent
// calls); a retry comes before MaxSessions other sessions have written.
// Limits: keys 1..MaxKey bytes, values up to MaxValue bytes; oversize or
// malformed requests and unknown operations get their own errors
// (ErrKeyTooLarge, ErrValueTooLarge, ErrMalformed, ErrUnknownOp), never
// a crash.
package kv
