package stackbench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"strata/bench/kit"
)

// Print writes the report as tables: the code latency, the round trips
// (medians over rounds), Strata's overhead over the raw sockets, then the
// settings, ratios, failures and notes.
func Print(w io.Writer, rep *kit.Report) error {
	res, ok := rep.Results.(*Results)
	if !ok {
		return errNoResults
	}
	printCode(w, res.Code)
	if len(res.cfg.Transports) > 0 && !res.cfg.CodeOnly {
		printRoundTrips(w, res)
	}
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	fmt.Fprintln(w)
	rep.PrintRatios(w)
	return nil
}

func printCode(w io.Writer, code []CodeResult) {
	fmt.Fprintf(w, "code latency, no network, ns per message (pt2pt: bottom, pt2pt, top; mcast4: top, mnak, pt2pt,\n")
	fmt.Fprintf(w, "bottom, a cast to one member; vsync: the Total,Membership stack, 3 members, a cast from a\n")
	fmt.Fprintf(w, "member that is not the sequencer; rest: sequencing, order entries and acks at every member;\n")
	fmt.Fprintf(w, "clock: what reading the clock adds to a timed step, measured in place every round and subtracted;\n")
	fmt.Fprintf(w, "allocs down/up/rest: by the stacks in each step; allocs/msg: all, the harness's frame buffers included; modes: imperative and functional compositions, bypass:\nthe imperative stack with stack.Optimize's bypass and its generated code, generic: the bypass's generic loops;\nmedian over rounds; the code-latency ratios below are bypass/imperative = imperative ns / bypass ns and\nbypass/generic = generic ns / bypass ns, of those medians)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stack\tbytes\tmode\tdown ns\tup ns\tack/rest ns\tclock ns\tallocs down/up/rest\tallocs/msg\tbypass hits\twire bytes\t")
	for _, r := range code {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f/%.2f/%.2f\t%.3f\t%.2f\t%d\t\n", r.Stack, r.Size, r.Mode, r.DownNs, r.UpNs, r.AckNs, r.ClockNs, r.DownAllocs, r.UpAllocs, r.RestAllocs, r.AllocsOp, r.Hits, r.WireBytes)
	}
	tw.Flush()
}

func printRoundTrips(w io.Writer, res *Results) {
	cfg := res.cfg
	fmt.Fprintf(w, "\nround trips on loopback, %d-byte requests, %d-byte replies, %d calls per cell, median of %d round(s)\n", cfg.Size, cfg.Reply, cfg.N, cfg.Rounds)
	fmt.Fprintf(w, "placement: %s; busy polling %v (Strata and raw)\n", placement(cfg), cfg.BusyPoll)
	fmt.Fprintf(w, "mean µs = callers / req/s (every system); timer µs = mean of per-call timers (JGroups: RoundTrip's sampled average);\nCPU µs/call = CPU time of the client and server processes during the cell, per call\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\ttransport\tcallers\tmean µs\ttimer µs\tp50 µs\tp99 µs\treq/s\tCPU µs/call\trounds\t")
	for _, sys := range []string{sysStrata, sysStrataEvent, sysStrataSeal, sysRaw, sysJGroups} {
		for _, k := range cfg.Transports {
			for _, c := range cfg.Callers {
				n := 0
				for _, r := range res.RoundTrips {
					if r.System == sys && r.Transport == k && r.Callers == c {
						n++
					}
				}
				if n == 0 {
					continue
				}
				pct := func(f func(RTTResult) float64) string {
					if sys == sysJGroups {
						return "-" // RoundTrip 5.5.6 prints no percentiles
					}
					return strconv.FormatFloat(medianOf(res.RoundTrips, sys, k, c, f), 'f', 1, 64)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%s\t%s\t%.0f\t%.1f\t%d\t\n", sys, k, c,
					medianOf(res.RoundTrips, sys, k, c, meanOf), medianOf(res.RoundTrips, sys, k, c, timerOf),
					pct(p50Of), pct(p99Of), medianOf(res.RoundTrips, sys, k, c, rpsOf), medianOf(res.RoundTrips, sys, k, c, cpuOf), n)
			}
		}
	}
	tw.Flush()
	for _, ex := range []struct {
		title string
		m     map[string]float64
	}{{"Strata's mean round trip minus the raw socket's (µs)", res.Overhead}, {"Strata's median (p50) round trip minus the raw socket's (µs)", res.OverheadP50}} {
		if len(ex.m) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", ex.title)
		keys := make([]string, 0, len(ex.m))
		for k := range ex.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %-40s %+.1f\n", k, ex.m[k])
		}
	}
	fmt.Fprintf(w, "\napi=blocking: callers wait in Node.Call (a lone caller with busy polling receives its reply itself);\napi=event (system strata-event): the next call is issued from the reply callback with Node.CallAsync,\non the goroutine that received the reply.\n")
}
