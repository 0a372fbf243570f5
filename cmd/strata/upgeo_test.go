package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/geo"
	"strata/kv"
	"strata/wor"
)

// strata up --geo: the planner's sites get a wormserver each (the ec
// engine with the plan's quorums), the front-end regions a kv server
// each, all behind the emulated WAN. Puts and gets work through a front
// end; a write takes at least the matrix's round trip from the nearest
// front end to its Phase 2 quorum (the WAN is really in the path); with
// one data site's process killed (the plan tolerates one failure) puts
// and gets still work.
func TestUpGeo(t *testing.T) {
	dir := t.TempDir()
	access := []string{"az_eastus", "az_westeurope", "az_southeastasia"}
	up := startUp(t, dir, "--geo", "az_eastus,az_westeurope,az_southeastasia")
	t.Logf("strata up --geo:\n%s", up.banner)
	var cfg wor.ClusterConfig
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil || cfg.Engine != "ec" || cfg.Plan == nil || len(cfg.Partitions) != 1 {
		t.Fatalf("cluster file: %v %+v", err, cfg)
	}
	plan := *cfg.Plan
	n := len(cfg.Partitions[0])
	if plan.Validate(n) != nil || plan.K < 2 {
		t.Fatalf("plan %+v over %d sites: want an erasure-coded one (k >= 2) that validates", plan, n)
	}
	servers, err := kv.LoadServers(filepath.Join(dir, "kv.json"))
	if err != nil || len(servers) != len(access) {
		t.Fatalf("kv.json: %v %v", servers, err)
	}
	// The lower bound on a write: from whichever front end leads, a
	// Phase 2 round to the Q2-th nearest data site and back (half the
	// matrix's round trip each way, as the WAN applies it).
	m := geo.Default()
	sites := siteList(t, dir)
	bound := time.Hour
	for _, a := range access {
		var rtts []float64
		for _, s := range sites {
			i, j := m.Index(a), m.Index(s)
			rtts = append(rtts, (m.RTT[i][j]+m.RTT[j][i])/2)
		}
		slices.Sort(rtts)
		bound = min(bound, time.Duration(rtts[plan.Q2-1]*float64(time.Millisecond)))
	}
	c := dialKV(t, servers[0])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(k, v string) time.Duration {
		t.Helper()
		t0 := time.Now()
		if _, err := c.Put(ctx, k, []byte(v)); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		return time.Since(t0)
	}
	get := func(k, want string) {
		t.Helper()
		r, err := c.Get(ctx, k)
		if err != nil || string(r.Value) != want {
			t.Fatalf("get %s: %q, %v; want %q", k, r.Value, err, want)
		}
	}
	put("warm", "up")
	if d := put("hello", "world"); d < bound {
		t.Fatalf("a put took %v, less than the %v round trip from the nearest front end to a Phase 2 quorum: the emulated WAN is not in the path", d, bound)
	} else {
		t.Logf("a put took %v (lower bound %v)", d, bound)
	}
	get("hello", "world")
	// One data site's process dies: the plan tolerates it.
	victim := up.child("wor", "")
	if victim == 0 {
		t.Fatal("no wormserver among strata up's children")
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	put("hello", "again")
	get("hello", "again")
	out, code := runCLI(t, "kv", "get", "hello", "--servers", servers[1])
	if code != 0 || !strings.Contains(out, `"hello" = "again"`) {
		t.Fatalf("kv get through the second front end: exit %d, %q", code, out)
	}
	// Keyed mode (the default): every front end writes on its own, and
	// what one wrote the others read; a scan is refused, saying why.
	if !strings.Contains(up.banner, "keyed mode") {
		t.Fatalf("the banner does not say keyed mode:\n%s", up.banner)
	}
	if out, code := runCLI(t, "kv", "put", "k3", "from-asia", "--servers", servers[2]); code != 0 {
		t.Fatalf("kv put through the third front end: exit %d, %q", code, out)
	}
	get("k3", "from-asia")
	if out, code := runCLI(t, "kv", "scan", "a", "z", "--servers", servers[1]); code == 0 || !strings.Contains(out, "keyed mode") {
		t.Fatalf("kv scan in keyed mode: exit %d, %q; want a refusal naming keyed mode", code, out)
	}
}

// siteList is the data sites of strata up --geo's wormservers, in split
// order, from its WAN file and cluster file.
func siteList(t *testing.T, dir string) []string {
	t.Helper()
	var f struct{ Sites map[string]string }
	var cfg wor.ClusterConfig
	b1, err1 := os.ReadFile(filepath.Join(dir, "wan.json"))
	b2, err2 := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err1 != nil || err2 != nil || json.Unmarshal(b1, &f) != nil || json.Unmarshal(b2, &cfg) != nil {
		t.Fatalf("wan.json / cluster.json: %v %v", err1, err2)
	}
	var out []string
	for _, a := range cfg.Partitions[0] {
		host, _, err := net.SplitHostPort(strings.TrimPrefix(a, "udp:"))
		if s, ok := f.Sites[host]; err == nil && ok {
			out = append(out, s)
		}
	}
	if len(out) != len(cfg.Partitions[0]) {
		t.Fatalf("sites %v of servers %v", out, cfg.Partitions[0])
	}
	return out
}
