package stackbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// RTTResult is a request/response measurement of one system in one cell.
type RTTResult struct {
	System    string `json:"system"` // strata, strata-event, raw, jgroups
	Transport string `json:"transport"`
	Callers   int    `json:"callers"`
	Size      int    `json:"size"`  // request payload bytes
	Reply     int    `json:"reply"` // reply payload bytes
	N         int    `json:"n"`
	Round     int    `json:"round"` // counted from 1
	// MeanUs is callers / ReqPerSec: each caller has one request
	// outstanding, so by Little's law this is the mean round trip over
	// every call. It is the figure compared across systems, because every
	// system reports a request rate measured the same way.
	MeanUs float64 `json:"mean_us"`
	// TimerMeanUs is the mean of per-call timers (a clock read before the
	// send and after the reply): over every call for Strata and the raw
	// sockets; for JGroups, RoundTrip's printed average, the mean of a
	// sample of at most 2048 calls per sender.
	TimerMeanUs float64 `json:"timer_mean_us"`
	P50Us       float64 `json:"p50_us"` // per-call timers (0: not reported)
	P99Us       float64 `json:"p99_us"`
	ReqPerSec   float64 `json:"req_per_sec"` // calls / wall time from the first send to the last reply
	// CPUPerCallUs is the CPU time the client and server processes used
	// during the cell, per call (Strata, raw: this process and the server
	// process, node setup and warm-up calls included; JGroups: both JVMs
	// during the measured run).
	CPUPerCallUs float64 `json:"cpu_per_call_us"`
	// WarmupReqPerSec (JGroups) are the request rates of the warm-up
	// passes before the measured run.
	WarmupReqPerSec []float64 `json:"warmup_req_per_sec,omitempty"`
}

// Props is the stack both ends of the Strata round trip run.
const Props = "Reliable,Fragment,RPC"

// Serve runs an RPC server node until ctx ends that answers every call with
// reply bytes (the request's first reply bytes, zeros past its end, as the
// raw echo does); ready gets its address. Its transport busy polls for
// busyPoll (transport.Options).
func Serve(ctx context.Context, listen string, reply int, busyPoll time.Duration, ready func(stack.Addr)) error {
	return ServeOpts(ctx, listen, reply, transport.Options{BusyPoll: busyPoll}, ready)
}

// ServeOpts is Serve with the node's transport options (e.g. a seal).
func ServeOpts(ctx context.Context, listen string, reply int, o transport.Options, ready func(stack.Addr)) error {
	if reply < 0 {
		return fmt.Errorf("stackbench: reply size %d", reply)
	}
	n, err := layers.ListenOpts(listen, Props, o)
	if err != nil {
		return err
	}
	defer n.Close()
	zeros := make([]byte, reply) // only read: shared by concurrent handlers
	n.Handle(func(_ stack.Addr, req []byte) []byte {
		if len(req) >= reply {
			return req[:reply]
		}
		return zeros
	})
	ready(n.Local())
	<-ctx.Done()
	return nil
}

// API selects how the Strata round-trip client waits for replies.
type API string

const (
	// Blocking callers use Node.Call: each caller goroutine waits for its
	// reply, which the transport's reader hands it, or which, with busy
	// polling and one caller, it receives itself (stack.Assister).
	Blocking API = "blocking"
	// Event callers use Node.CallAsync and issue their next request from
	// the reply callback, which runs on the reader goroutine: the
	// application sits on top of the stack as in Ensemble, and no goroutine
	// hand-off is on the round trip's path.
	Event API = "event"
)

// StrataRoundTrip makes n calls of size bytes to server (started with the
// same reply size: replies of another size are errors) from callers
// concurrent callers (one outstanding call each) through one client node,
// whose transport busy polls for busyPoll.
func StrataRoundTrip(ctx context.Context, server stack.Addr, size, reply, n, callers int, api API, busyPoll time.Duration) (RTTResult, error) {
	return StrataRoundTripOpts(ctx, server, size, reply, n, callers, api, transport.Options{BusyPoll: busyPoll})
}

// StrataRoundTripOpts is StrataRoundTrip with the client node's
// transport options (e.g. a seal).
func StrataRoundTripOpts(ctx context.Context, server stack.Addr, size, reply, n, callers int, api API, o transport.Options) (RTTResult, error) {
	kind, _, _ := strings.Cut(string(server), ":")
	host := "127.0.0.1"
	if strings.Contains(string(server), "[") {
		host = "[::1]"
	}
	node, err := layers.ListenOpts(kind+":"+host+":0", Props, o)
	if err != nil {
		return RTTResult{}, err
	}
	defer node.Close()
	req := make([]byte, size)
	// Warm up: connections, pools, the peer's state.
	for i := 0; i < 200; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rsp, err := node.Call(cctx, server, req, 0)
		cancel()
		if err != nil {
			return RTTResult{}, fmt.Errorf("warm-up call: %w", err)
		}
		if len(rsp) != reply {
			return RTTResult{}, fmt.Errorf("stackbench: a reply of %d bytes, want %d (the server's --reply-size differs)", len(rsp), reply)
		}
	}
	var next atomic.Int64
	lats := make([][]time.Duration, callers)
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		if api == Event {
			go eventCaller(ctx, node, server, req, int64(n), &next, &lats[c], errs, wg.Done)
			continue
		}
		go func() {
			defer wg.Done()
			// Each call has a 10 s deadline, Call's own (its stack's
			// timer): the raw UDP caller sets a read deadline per request
			// the same way. A context per call would time the context
			// package (its timer, its channel, their garbage) too.
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				_, err := node.Call(ctx, server, req, 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return RTTResult{}, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	system := "strata"
	if api == Event {
		system = "strata-event"
	}
	rps := float64(len(all)) / elapsed.Seconds()
	return RTTResult{
		System: system, Transport: kind, Callers: callers, Size: size, Reply: reply, N: len(all),
		MeanUs:      float64(callers) * 1e6 / rps,
		TimerMeanUs: us(sum) / float64(len(all)),
		P50Us:       us(all[min(len(all)-1, len(all)/2)]),
		P99Us:       us(all[min(len(all)-1, len(all)*99/100)]),
		ReqPerSec:   rps,
	}, nil
}

// eventCaller keeps one call outstanding, issuing each next call from the
// previous one's reply callback, until the shared count is used up or the
// context ends; it calls done once.
func eventCaller(ctx context.Context, node *stack.Node, server stack.Addr, req []byte, n int64, next *atomic.Int64, lats *[]time.Duration, errs chan<- error, done func()) {
	var issue func()
	var t0 time.Time
	reply := func(_ []byte, err error) {
		if err == nil {
			*lats = append(*lats, time.Since(t0))
			err = ctx.Err()
		}
		if err != nil {
			errs <- err
			done()
			return
		}
		issue()
	}
	issue = func() {
		if next.Add(1) > n {
			done()
			return
		}
		t0 = time.Now()
		if _, err := node.CallAsync(server, req, 10*time.Second, reply); err != nil {
			errs <- err
			done()
		}
	}
	issue()
}
