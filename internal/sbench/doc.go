// Package sbench is the peer side of Strata's round-trip benchmark: it
// measures the request/response round-trip time and closed-loop request rate
// of a published group communication toolkit, JGroups, and of bare sockets,
// on this machine's loopback interface, so that Strata's own numbers can be
// set against them.
//
// JGroups. [EnsureJGroups] fetches org.jgroups:jgroups:5.5.6.Final through
// Maven into ~/.m2 (the jar is never vendored). [JGroupsRoundTrip] starts two
// JVMs on 127.0.0.1 running JGroups' own test program
// org.jgroups.tests.RoundTrip with the jar's low-latency TCP stack
// (tcp-low-latency.xml, whose <include> of tcp-default.xml is inlined and
// whose MPING discovery is replaced by TCPPING listing both members, since IP
// multicast may not work here). RoundTrip is driven through its stdin menu:
// member A sends Messages requests of Size payload bytes (plus RoundTrip's
// 3-byte header) to member B from Senders threads, each thread with one
// request outstanding; B answers each with a 3-byte response. RoundTrip times
// each request itself (System.nanoTime around send and the wait for the
// response) and prints min/avg/max round-trip and requests per second
// (Messages over the wall time of the run). Its average is the mean of a
// random sample of at most 2048 round trips per sender, so the result also
// carries the exact mean that the request rate implies (Senders / rate, by
// Little's law). A warm-up run in the same JVMs precedes the measured run,
// so JIT compilation and connection setup are not measured. RoundTrip 5.5.6
// prints no percentiles.
//
// Raw sockets. [RawEchoServer] echoes UDP datagrams or TCP frames (4-byte
// big-endian length, then payload) and can run in any process;
// [RawRoundTrip] drives it with a number of concurrent callers, each with its
// own socket and one outstanding request, and reports average, median and
// 99th-percentile round-trip time and requests per second. This is the
// no-middleware baseline: the cost of two kernel socket traversals per
// direction and the scheduler wake-ups, nothing else. Note the asymmetry:
// the raw echo returns the whole request, RoundTrip's response is 3 bytes.
package sbench
