//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/stack"
)

func init() {
	procAttr = func(c *exec.Cmd) {
		// SIGKILL when the test process ends, however it ends. (It is
		// sent when the thread that started the child exits: Go's
		// threads live as long as the process unless a goroutine
		// locked to one returns, which these tests do not do.)
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
}

// netHosts are network namespaces standing for hosts: each has a veth
// pair whose other end is a port of a bridge in the test's namespace, and
// an address of its own on the bridge's subnet; the bridge has one too,
// so clients in the test reach every host. Cutting a host off is setting
// its bridge-side veth down.
type netHosts struct {
	ns     []string // namespace names
	veths  []string // each host's bridge-side veth
	ips    []string // each host's address
	bridge string
}

// ip runs ip(8) with args and returns its combined output.
func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// newNetHosts creates n hosts on a fresh /24 of 10.77.0.0/16 (the first
// one no address of this namespace is on), with names unique to this run,
// and removes them when the test ends, whether it passed or not (a test
// binary killed by -timeout leaves them: scripts/netns.sh down removes
// them). It skips the test where namespaces cannot be created: no ip
// command, or no permission (not root, or a container without
// CAP_SYS_ADMIN). (Not Linux: this file is not built.)
func newNetHosts(t *testing.T, n int) *netHosts {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2) to create network namespaces")
	}
	tag := fmt.Sprintf("%04x", (uint32(os.Getpid())^uint32(time.Now().UnixNano()>>12))&0xffff)
	h := &netHosts{bridge: "skv" + tag + "br"}
	// The namespaces first: where that is not permitted, skip.
	for i := range n {
		name := fmt.Sprintf("strata-kv-%s-%d", tag, i+1)
		if _, err := ip("netns", "add", name); err != nil {
			if i == 0 && (strings.Contains(err.Error(), "Operation not permitted") || strings.Contains(err.Error(), "Permission denied")) {
				t.Skipf("cannot create network namespaces here (root with CAP_SYS_ADMIN and CAP_NET_ADMIN is needed): %v", err)
			}
			t.Fatal(err)
		}
		h.ns = append(h.ns, name)
		t.Cleanup(func() {
			if _, err := ip("netns", "del", name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
	}
	subnet := freeSubnet(t)
	if _, err := ip("link", "add", h.bridge, "type", "bridge"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := ip("link", "del", h.bridge); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, args := range [][]string{
		{"addr", "add", subnet + ".254/24", "dev", h.bridge},
		{"link", "set", h.bridge, "up"},
	} {
		if _, err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	for i, ns := range h.ns {
		veth, peer, addr := fmt.Sprintf("skv%sh%d", tag, i+1), fmt.Sprintf("skv%sn%d", tag, i+1), fmt.Sprintf("%s.%d", subnet, i+1)
		if _, err := ip("link", "add", veth, "type", "veth", "peer", "name", peer, "netns", ns); err != nil {
			t.Fatal(err)
		}
		h.veths, h.ips = append(h.veths, veth), append(h.ips, addr)
		t.Cleanup(func() {
			// Deleting the namespace deletes the pair too, unless
			// processes still hold it: delete it here in any case.
			ip("link", "del", veth)
		})
		for _, args := range [][]string{
			{"link", "set", veth, "master", h.bridge},
			{"link", "set", veth, "up"},
			{"-n", ns, "addr", "add", addr + "/24", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"}, // a server reaches its own address through lo
		} {
			if _, err := ip(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// freeSubnet returns "10.77.X" for the first X such that no address of
// this namespace is in 10.77.X.0/24 (another run's bridge, say).
func freeSubnet(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for x := 0; x < 256; x++ {
		_, sub, _ := net.ParseCIDR(fmt.Sprintf("10.77.%d.0/24", x))
		used := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && sub.Contains(ipn.IP) {
				used = true
			}
		}
		if !used {
			return fmt.Sprintf("10.77.%d", x)
		}
	}
	t.Fatal("every 10.77.X.0/24 has an address here")
	return ""
}

// cut takes host i off the bridge, or puts it back.
func (h *netHosts) cut(t *testing.T, i int, off bool) {
	t.Helper()
	state := "up"
	if off {
		state = "down"
	}
	if _, err := ip("link", "set", h.veths[i], state); err != nil {
		t.Fatal(err)
	}
}

// cli runs strata with args on host i (the test binary as the CLI, in
// the host's namespace) and returns its combined output and exit code.
func (h *netHosts) cli(t *testing.T, i int, args ...string) (string, int) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns[i], bin}, args...)...)
	p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := p.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("strata %s on %s: still running after 30 s:\n%s", strings.Join(args, " "), h.ns[i], out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return string(out), p.ProcessState.ExitCode()
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// TestKVNetns runs the key-value service on three hosts: network
// namespaces joined by a bridge, each with its own address (10.77.X.1-3)
// and a wormserver and a kv server listening on it; the cluster file
// names the wormservers by those addresses, and the clients run in the
// test's namespace. While three clients write, the kv leader's host is
// cut off (its veth set down): writes resume through the two connected
// hosts within failoverWait (the time is logged), and the cut-off server
// cannot be reached from the bridge; on the cut-off host, a client of
// its server alone gets no stale linearizable read (its sequential read
// may be stale) and no acknowledged write; then the host is put back and
// its server catches up (STRATA_KV_ROUNDS=N: N times). Then a follower's
// host is cut off and put back. Every acknowledged write is readable at
// the end.
func TestKVNetns(t *testing.T) {
	h := newNetHosts(t, 3)
	cl := newKVCluster(t, h.ips, h.ns, []int{7101, 7101, 7101}, []int{7201, 7201, 7201})
	// The servers listen, and tell each other, their hosts' addresses.
	for i, p := range cl.wor {
		if want := fmt.Sprintf("udp:%s:7101", h.ips[i]); p.addr != want {
			t.Fatalf("%s in %s listens on %s, want %s", p.name, h.ns[i], p.addr, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := dialKV(t, cl.kvAddrs...)
	for i, a := range cl.kvAddrs {
		sctx, cancel := context.WithTimeout(ctx, failoverWait)
		st, err := c.Status(sctx, stack.Addr(a))
		cancel()
		if err != nil {
			t.Fatalf("status of kv server %d at %s from the root namespace: %v", i+1, a, err)
		}
		if st.Leader != "" && !strings.Contains(st.Leader, ":7201") {
			t.Fatalf("kv server %d names the leader %q: not a kv server's address", i+1, st.Leader)
		}
	}
	load := startLoad(t, ctx, 3, cl.kvAddrs)
	defer load.stop()
	load.waitAfter(t, time.Now().Add(-time.Second), 30, failoverWait, "start")

	// The leader's host is cut off and put back, STRATA_KV_ROUNDS times
	// (default once).
	for round := range kvRounds(t) {
		li := cl.leader(ctx, c, failoverWait)
		if want := fmt.Sprintf("%s:7201", h.ips[li]); !strings.Contains(cl.kvAddrs[li], want) {
			t.Fatalf("leader kv server %d at %s, want %s", li+1, cl.kvAddrs[li], want)
		}
		fence := func(v string) {
			t.Helper()
			fctx, cancel := context.WithTimeout(ctx, failoverWait)
			defer cancel()
			if _, err := c.Put(fctx, "fence", []byte(v)); err != nil {
				t.Fatalf("round %d: put fence %s: %v", round+1, v, err)
			}
		}
		fence(fmt.Sprintf("before cut %d", round+1))
		h.cut(t, li, true)
		tCut := time.Now() // after ip(8) returned: a write issued while it ran may still reach the old leader
		failover := load.waitAfter(t, tCut, 20, failoverWait, fmt.Sprintf("round %d: after cutting off the leader's host %s (kv server %d)", round+1, h.ns[li], li+1))
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := c.Status(sctx, stack.Addr(cl.kvAddrs[li]))
		scancel()
		if err == nil {
			t.Fatalf("round %d: kv server %d answers from its cut-off host: %+v", round+1, li+1, st)
		}
		newLeader := cl.leader(ctx, c, failoverWait)
		if newLeader == li {
			t.Fatalf("round %d: kv server %d, cut off, still leads", round+1, li+1)
		}
		t.Logf("round %d: leader's host %s (kv server %d at %s) cut off -> first write acknowledged %v later (longest pause between acknowledgements %v); new leader kv server %d",
			round+1, h.ns[li], li+1, cl.kvAddrs[li], failover.Round(time.Millisecond), load.maxGap(tCut).Round(time.Millisecond), newLeader+1)
		load.waitAfter(t, tCut, 60, failoverWait, fmt.Sprintf("round %d: with the old leader's host cut off", round+1))
		// A client on the cut-off host, of its server only: a
		// linearizable read must not return the value the majority has
		// overwritten (it may fail: the server cannot reach the
		// majority); a write must not be acknowledged.
		fence(fmt.Sprintf("after cut %d", round+1))
		out, code := h.cli(t, li, "kv", "get", "fence", "--servers", cl.kvAddrs[li], "--timeout", "3s")
		if code == 0 {
			t.Errorf("round %d: a linearizable get on the cut-off host succeeded: %s", round+1, out)
		}
		if strings.Contains(out, "before cut") {
			t.Errorf("round %d: stale linearizable read on the cut-off host: %s", round+1, out)
		}
		if out, code := h.cli(t, li, "kv", "put", "cut-off", "x", "--servers", cl.kvAddrs[li], "--timeout", "3s"); code == 0 {
			t.Errorf("round %d: a put on the cut-off host was acknowledged: %s", round+1, out)
		}
		seq, _ := h.cli(t, li, "kv", "get", "fence", "--sequential", "--servers", cl.kvAddrs[li], "--timeout", "3s")
		t.Logf("round %d: on the cut-off host: linearizable get exit %d (%s); sequential get: %s", round+1, code, firstLineOf(out), firstLineOf(seq))
		h.cut(t, li, false)
		took := cl.checkCaughtUp(ctx, c, li, fmt.Sprintf("round %d: reconnected old leader", round+1))
		t.Logf("round %d: host %s back: kv server %d saw the latest write %v later", round+1, h.ns[li], li+1, took.Round(time.Millisecond))
	}

	// A follower's host is cut off and put back.
	li := cl.leader(ctx, c, failoverWait)
	fi := (li + 1) % 3
	h.cut(t, fi, true)
	tCut := time.Now()
	load.waitAfter(t, tCut, 40, failoverWait, fmt.Sprintf("after cutting off a follower's host %s (kv server %d)", h.ns[fi], fi+1))
	t.Logf("follower's host %s (kv server %d) cut off: longest pause between acknowledgements %v", h.ns[fi], fi+1, load.maxGap(tCut).Round(time.Millisecond))
	h.cut(t, fi, false)
	cl.checkCaughtUp(ctx, c, fi, "reconnected follower")
	load.stop()
	load.verify(t, ctx, c)
}
