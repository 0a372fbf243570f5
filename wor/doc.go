// Package wor is the write-once-register address space (WormSpace, SOSP
// '19): 64-bit addresses (segment and offset), each a register that can be
// written once, with Capture (a preemptable lock, Paxos phase 1), Write
// (phase 2) and Read (completing a half-written quorum), batch operations
// on segments, Alloc and Trim, and notifications of writes.
//
// Wormservers (Server) keep single-shot acceptor state per register, in
// memory or durably in a journal (a reply is sent only once the state it
// reports is on disk). Clients reach them through the protocol stack's RPC
// layer, with one of two engines behind the Engine interface: paxos
// (majority quorums; thrifty: one majority is asked, the others only when
// one of it is slow or down) and chain (client-driven chain replication).
// A Cluster routes segments to partitions and follows reconfigurations
// published in the directory partition.
//
// Guarantees: every operation is linearizable with respect to a write-once
// register per address; once a value is returned for an address, every
// later read returns it, across server restarts (persistent mode) and
// reconfigurations. Assumes, for progress, that a majority of a paxos
// partition's servers (every server of a chain) is reachable; operations
// otherwise fail with the caller's deadline. A memory-mode server that
// restarts has lost its state and must rejoin through reconfiguration.
package wor
