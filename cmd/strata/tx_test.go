package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/kv"
)

// strata tx end to end with real processes: three wormservers, a TM and
// three RMs; deposits and transfers between accounts on different
// partitions; an RM killed with SIGKILL while transfers go on (those not
// touching it commit; those touching it end, aborted, without it); the
// RM restarted from its log; then every balance is consistent and the
// total is what was deposited.
func TestTxRealProcesses(t *testing.T) {
	dir := t.TempDir()
	ports := freeUDPPorts(t, 7)
	addr := func(i int) string { return fmt.Sprintf("udp:127.0.0.1:%d", ports[i]) }
	servers := strings.Join([]string{addr(0), addr(1), addr(2)}, ",")
	rms := strings.Join([]string{addr(4), addr(5), addr(6)}, ",")
	var procs []*strataProc
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
	})
	start := func(name string, args ...string) *strataProc {
		p := &strataProc{name: name, args: args, logPath: filepath.Join(dir, name+".log")}
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		return p
	}
	for i := range 3 {
		start(fmt.Sprintf("wor-%d", i), "wor", "serve", "--listen", addr(i), "--dir", filepath.Join(dir, fmt.Sprintf("wor-%d", i)))
	}
	common := []string{"--rms", rms, "--tm", addr(3), "--servers", servers}
	start("tm", append([]string{"tx", "serve", "--id", "-1", "--dir", filepath.Join(dir, "tm")}, common...)...)
	rmArgs := func(i int) []string {
		return append([]string{"tx", "serve", "--id", fmt.Sprint(i), "--dir", filepath.Join(dir, fmt.Sprintf("rm-%d", i))}, common...)
	}
	var rm []*strataProc
	for i := range 3 {
		rm = append(rm, start(fmt.Sprintf("rm-%d", i), rmArgs(i)...))
	}
	// Accounts on each partition (wormtx.Partition of 3).
	acct := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	// via runs a tx command through the given RMs (a transfer that gets no
	// answer is not sent again: its outcome would be unknown).
	via := func(rmList string, args ...string) (string, error) {
		return run(t, append(append([]string{"tx"}, args...), "--rms", rmList, "--timeout", "20s")...)
	}
	tx := func(args ...string) (string, error) { return via(rms, args...) }
	for _, a := range acct {
		if out, err := tx("deposit", a, "100"); err != nil {
			t.Fatalf("deposit %s: %v\n%s", a, err, out)
		}
	}
	for _, v := range []string{"A8", "B6", "C5", "D4", "E3"} {
		if out, err := tx("transfer", "alice", "bob", "1", "--variant", v); err != nil || !strings.Contains(out, "committed") {
			t.Fatalf("transfer with %s: %v\n%s", v, err, out)
		}
	}
	// Kill RM 1: transfers go on; some end aborted (the ones whose
	// accounts it holds), none hangs.
	rm[1].kill()
	t0 := time.Now()
	committed := 0
	for i := range 6 {
		from, to := acct[i%6], acct[(i+1)%6]
		out, err := via(strings.Join([]string{addr(4), addr(6)}, ","), "transfer", from, to, "5")
		if err == nil {
			committed++
		} else if !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("transfer %s -> %s with RM 1 down: %v\n%s", from, to, err, out)
		}
	}
	t.Logf("with RM 1 killed: %d of 6 transfers committed, all ended within %v", committed, time.Since(t0))
	if committed == 0 {
		t.Fatal("no transfer committed with one RM of three down")
	}
	rm[1] = start("rm-1b", rmArgs(1)...)
	out, err := tx(append([]string{"balance"}, acct...)...)
	if err != nil {
		t.Fatalf("balance: %v\n%s", err, out)
	}
	if !strings.Contains(out, "total 600\n") {
		t.Fatalf("balances after the kill and restart:\n%s", out)
	}
	t.Logf("balances:\n%s", out)
	if _, err := tx("transfer", "alice", "bob", "1000000"); err == nil || !strings.Contains(err.Error(), "insufficient") {
		t.Fatalf("an overdraft: %v", err)
	}
}

// strata up starts WormTX too: the tx commands work against the RMs it
// lists in tx.json, and a transfer's money is conserved.
func TestTxUp(t *testing.T) {
	dir := t.TempDir()
	up := startUp(t, dir)
	rms, err := kv.LoadServers(filepath.Join(dir, "tx.json"))
	if err != nil {
		t.Fatalf("strata up's tx.json: %v", err)
	}
	if len(rms) != 3 || up.child("tx", "-1") == 0 || up.child("tx", "2") == 0 {
		t.Fatalf("strata up lists RMs %v; want three, and a TM and RMs among its children:\n%s", rms, up.banner)
	}
	cli := func(want string, args ...string) {
		t.Helper()
		args = append(args, "--rms", strings.Join(rms, ","), "--timeout", "20s")
		out, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("strata %s: exit %d, output %q; want %q in it", strings.Join(args, " "), code, out, want)
		}
	}
	cli("committed: alice 100", "tx", "deposit", "alice", "100")
	cli("committed: bob 50", "tx", "deposit", "bob", "50")
	cli("committed: alice 70, bob 80", "tx", "transfer", "alice", "bob", "30")
	cli("total 150", "tx", "balance", "alice", "bob")
}
