// Package jgroups runs the JGroups peer of Strata's stack and multicast
// benchmarks (bench/stack, bench/mcast): JGroups' own test programs, in
// JVMs on this machine's loopback interface, so that Strata's figures can
// be set against a published group communication toolkit.
//
// [EnsureJGroups] fetches org.jgroups:jgroups:5.5.6.Final through Maven
// into ~/.m2 (the jar is never vendored). [BuildStack] writes the stack a
// run uses from one of the jar's stack files (tcp-low-latency.xml, tcp.xml,
// udp.xml): the transport inlined with each member's port, discovery by
// TCPPING listing the members (IP multicast may not work here), UDP with
// ip_mcast=false, and any attributes a run sets; everything else verbatim.
//
// [RoundTrip] starts two JVMs running org.jgroups.tests.RoundTrip, driven
// through its stdin menu: member A sends Messages requests from Senders
// threads, each with one request outstanding, to member B, which answers
// each. A request is RoundTrip's 3-byte header (type, sender id) and Size
// payload bytes; a reply is the 3-byte header alone. RoundTrip times each
// request itself (System.nanoTime around the send and the wait for the
// reply) but prints the mean of a random sample of at most 2048 of them per
// sender, and the exact request rate (Messages over the wall time of the
// run); so the result carries the mean the rate implies (Senders / rate,
// by Little's law), which is measured the same way as Strata's. A warm-up
// run with the same settings in the same JVMs precedes the measured run,
// so JIT compilation and connection setup are not measured. RoundTrip
// 5.5.6 prints no percentiles.
//
// [MPerf] starts one JVM per member running org.jgroups.tests.perf.MPerf:
// every member sends for a time from its sender threads and reports the
// messages it received per second, its own included.
package jgroups
