// Package stack is Strata's layered protocol framework (Ensemble, SOSP '99):
// every node talks to the network through a stack of micro-protocol layers.
//
// Events travel down (Send, Cast, Leave, TimerReq, Call, Cancel) and up
// (Deliver, Timer, Reply, Suspect, View, Block, Stable, Exit). A Layer is a
// state machine with a handler for each direction; it pushes and pops its
// own header on a Msg, never blocks, does no I/O, owns no goroutine and
// reads time only from events. Each layer's Spec declares the properties it
// requires from the layers below and those it provides above, so that a
// stack can be validated before it runs (Validate) or chosen from required
// properties (in package stack/layers).
//
// Two compositions run the same layers: Scheduler, an imperative event
// queue, and Compose, which folds the layers into one handler by function
// composition (depth first). For the same inputs both emit the same events
// at the stack's top and bottom, in the same order per boundary.
//
// Optimize composes the layers' declared fast paths into a bypass (Ensemble
// §3): one path per case guarded by the conjunction of the layers' common-
// case predicates, with compressed headers; an event whose predicates do
// not all hold takes the full stack. For the stacks Strata runs, generated
// code (Chain, stack/layers/fused_gen.go) calls the layers' fast-path
// methods directly. Guaranteed (by testing, not proof): the bypass and the
// full stack emit the same events and datagrams and reach the same layer
// states. Assumed: a layer's CCP changes nothing, and its Apply makes
// exactly the change its full handler makes when the CCP holds.
//
// A Msg carries headers in a pooled buffer with headroom, pushed and popped
// in place, and the payload as a scatter-gather list that no layer copies.
package stack
