// Package wor is the write-once-register address space (WormSpace, SOSP
// '19): 64-bit addresses (segment and offset), each a register that can be
// written once, with Capture (a preemptable lock, Paxos phase 1), Write
// (phase 2) and Read (completing a half-written quorum), batch operations
// on segments, Alloc and Trim, and notifications of writes.
//
// Wormservers (Server) keep single-shot acceptor state per register, in
// memory or durably in a journal (a reply is sent only once the state it
// reports is on disk). Clients reach them through the protocol stack's RPC
// layer, with one of three engines behind the Engine interface: paxos
// (majority quorums; thrifty: one majority is asked, the others only when
// one of it is slow or down), chain (client-driven chain replication) and
// ec (Pando's erasure-coded Paxos: each server keeps its own
// Reed–Solomon split of a value, with the Phase 1a, Phase 1b and Phase 2
// quorum sizes of an ECPlan; see EC and docs/ec.md).
// A Cluster routes segments to partitions and follows reconfigurations
// published in the directory partition.
//
// Guarantees: every operation is linearizable with respect to a write-once
// register per address; once a value is returned for an address, every
// later read returns it, across server restarts (persistent mode) and
// reconfigurations. Assumes, for progress, that a majority of a paxos
// partition's servers (every server of a chain; for ec, a Phase 1b and a
// Phase 2 quorum) is reachable; operations otherwise fail with the
// caller's deadline. A memory-mode server that restarts has lost its
// state and must rejoin through reconfiguration.
//
// The ec engine gives the same guarantees under its plan's rules (which
// ECPlan.Validate enforces: Phase 1a ∩ Phase 2 ≥ 1 server, Phase 1b ∩
// Phase 2 ≥ K, Phase 2 ∩ Phase 2 ≥ K, Phase 1a ≥ K), assuming servers fail
// by stopping: a split that is damaged (checksum, length, index or plan
// wrong) is detected and counts as a missing answer, and a value rebuilt
// from splits is checked against its identity, but a server that forges
// a well-formed split is outside the model. It stores about n/K of a
// value's size in all instead of n copies; its partitions are not
// reconfigured yet, and every client of a partition must use one plan.
package wor
