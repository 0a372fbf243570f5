// Package distsys is the runtime of Go code generated from Modular PlusCal
// by `strata mpcal gogen` (package strata/mpcal, gogen*.go): it runs an
// archetype as a loop of critical sections over archetype resources, the
// way §4 of the PGo paper (../shared/papers/pgo-mpcal.txt) describes.
//
// # Model
//
// An Archetype is what the generator emits for one MPCal archetype: its
// parameters, its local variables with their initial values, and one
// Section per label. A Section's Run function executes the statements of
// one PlusCal step and returns the label to go to next (Done at the end).
// A Context is one running instance of an archetype: its self value, the
// resources bound to its parameters, its local variables, a random
// source. Context.Run is the critical-section loop. A Procedure is an
// MPCal procedure in the same form; Context.Call and Return push and pop
// its frames (frame.go), and a running procedure's names and labels are
// looked up in its frame.
//
// # Guarantees
//
//   - Atomic sections. Every read and write a section makes goes through
//     a Resource, which buffers it. When Run returns without error the
//     loop pre-commits every resource the section touched (in the order
//     first touched) and, if all agree, commits them in the same order;
//     otherwise, and whenever the section aborts (an await that is false,
//     an empty mailbox, a `with` over an empty set), every touched
//     resource is aborted, discarding the buffered effects, and the
//     section is retried after a randomized, growing backoff. An aborted
//     attempt leaves no trace: prints are buffered too, and values are
//     immutable (distsys/tla), so the values it built are simply dropped.
//     The frame stack is part of the section: Run restores the top frame
//     of before an aborted section, so its calls and returns are undone.
//   - Errors are values. A TLA+ operator applied outside its domain, a
//     false assert, a read of a write-only resource stop Run with an error
//     that names the MPCal source position ("file:line:col: ..."); nothing
//     panics on bad values or bad bindings. A missing or unknown binding is
//     an error of NewContext naming the parameter's position.
//   - Fair choice. `either` branches and `with (x \in S)` bindings are
//     chosen uniformly at random each attempt, so a branch that can
//     proceed is eventually taken (with probability 1) if it stays
//     enabled.
//
// # Assumptions
//
//   - One goroutine runs a Context (Run is not reentrant), and a Resource
//     is bound to one Context: resources keep their section buffers
//     without locks. Resources that receive from other goroutines (the
//     mailboxes' network callback, an input channel) guard what they share
//     with a lock, documented on each field.
//   - No crashes in the middle of a commit: a commit that fails half-way
//     (a node closed between two sends) is reported, not rolled back. The
//     failure detector (fd.go) reads suspicions, which may be wrong about
//     a slow node; persistent resources (persistent.go) and CRDT state
//     with a Path survive a process crash, other archetype state does not.
package distsys
