// Package wor is the write-once-register address space (WormSpace, SOSP
// '19): 64-bit addresses, each a register that can be written once, with
// Capture (a preemptable lock, Paxos phase 1), Write (phase 2) and Read
// (phase 1 without a new ballot, completing a half-written quorum).
//
// This first slice implements the paxos engine over a replica set of
// wormservers in memory mode, reached through the protocol stack's RPC
// layer. Guarantees: every operation is linearizable with respect to a
// write-once register per address; once a value is returned for an
// address, every later read returns it. Assumes a majority of the replica
// set is reachable for progress (operations otherwise fail with the
// caller's deadline); acceptor state lives in memory (a restarted server
// must rejoin through reconfiguration, a later slice).
package wor
