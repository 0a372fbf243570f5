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
// A Msg carries headers in a pooled buffer with headroom, pushed and popped
// in place, and the payload as a scatter-gather list that no layer copies.
package stack
