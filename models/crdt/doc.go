// Package crdt holds the MPCal models of the two CRDT systems Strata
// compiles and runs (`strata crdt`): AWORSet.tla, a replicated add-wins
// observed-remove set, and GCounter.tla, a grow-only counter, each with its
// TLC configuration and mutant configurations X_BugY.cfg. The archetypes
// are compiled to Go by `strata mpcal gogen` into gen/aworset and
// gen/gcounter (checked in; TestGeneratedGoUpToDate keeps them in step
// with the models).
//
// The models are checked with their X.cfg by models.TestMPCalModelsMatchPlusCal
// (every MPCal model under models/); the tests here check that every
// mutant violates the invariant it is meant to. They assume java and the
// TLA+ tools jar that `make setup` installs.
package crdt
