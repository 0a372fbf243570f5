// Package tracecheck validates a trace of a program's run against a TLA+
// (or MPCal) model with TLC, the way TLA+'s trace validation does
// (Cirstea, Kuppe, Merz et al., "Validating traces of distributed
// programs against TLA+ specifications").
//
// A trace is a file of events, one JSON object a line (see Event and
// docs/mpcal.md): the event's name, optionally the action of the model
// that took the step, and the values some state expressions of the model
// have after it (what the program could observe). Check writes a trace
// spec that EXTENDS the model: a counter over the events, an initial
// state of the model's Init, and a next-state relation that allows a
// step only if it is a step of the model's Next (or of the event's
// action) whose post-state agrees with the event on every expression the
// event observes, and moves the counter on. TLC explores every way the
// unobserved variables can go; the trace is accepted iff TLC reaches a
// state past the last event (the invariant "not past the end" is
// violated). Otherwise the longest prefix TLC could follow says which
// event no step allows: the first one after it.
//
// What is guaranteed: an accepted trace is, on the observed expressions,
// a behaviour of the model's Init and Next (or of the actions the events
// name: an action given in a trace or mapping is trusted to be part of
// Next, as a disjunct with its parameters fixed by the event); a trace
// rejected at event k has a prefix of k-1 events that is such a
// behaviour and no extension by event k. Assumed: the model's variables
// that the events do not observe are those TLC may choose freely, each
// event is exactly one step of the model (no stuttering, no merging of
// several steps), and the model's constants are those of its TLC
// configuration (only its CONSTANTS sections are used). Values in a trace
// are TLA+ constant expressions; they are parsed and printed back by
// Strata's TLA+ front end before they reach TLC, so a trace line cannot
// inject TLA+ text into the trace spec.
package tracecheck
