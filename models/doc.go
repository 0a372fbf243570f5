// Package models holds TLA+, PlusCal and Modular PlusCal models of the
// protocols Strata builds on, one directory per model, and the tests that
// check them with TLC (through strata/mpcal/tlc) under small bounds.
//
// pando/ is the TLA+ specification of Pando's reads and writes, transcribed
// from appendix B of the Pando paper, with a configuration small enough to
// check in the test suite; see docs/mpcal.md ("Pando model").
//
// The package has no Go code of its own: the tests assume java and the
// TLA+ tools jar that `make setup` installs, and fail without them.
package models
