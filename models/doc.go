// Package models holds TLA+, PlusCal and Modular PlusCal models of the
// protocols Strata builds on, one directory per model, and the tests that
// check them with TLC (through strata/mpcal/tlc) under small bounds.
//
// pando/ is the TLA+ specification of Pando's reads and writes, transcribed
// from appendix B of the Pando paper, with a configuration small enough to
// check in the test suite; see docs/mpcal.md ("Pando model").
//
// journal/, wor/, chain/, ec/ and wormtx/ model Strata's own protocols
// (the journal's write-ahead log, the paxos, chain and ec WOR engines,
// WormTX E3), each with mutant configurations TLC must reject; README.md
// says what each abstracts and what it costs (own_test.go runs them).
//
// The package has no Go code of its own: the tests assume java and the
// TLA+ tools jar that `make setup` installs, and fail without them.
package models
