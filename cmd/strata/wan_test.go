package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/geo"
)

// freeUDPAddr returns a loopback UDP address that was free a moment ago.
func freeUDPAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return "udp:" + c.LocalAddr().String()
}

func writeWAN(t *testing.T, sites map[string]string) string {
	t.Helper()
	var parts []string
	for a, s := range sites {
		parts = append(parts, fmt.Sprintf("%q: %q", a, s))
	}
	path := filepath.Join(t.TempDir(), "wan.json")
	if err := os.WriteFile(path, []byte(`{"sites": {`+strings.Join(parts, ", ")+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Two strata processes in emulated data centers: every RPC round trip
// from the westeurope client to the eastus server takes at least the
// matrix's one-way delays there and back. The server takes the WAN from
// STRATA_WAN (as the servers `strata up` starts do), the client from
// --wan.
func TestWANRoundTripProcesses(t *testing.T) {
	m := geo.Default()
	e, w := m.Index("az_eastus"), m.Index("az_westeurope")
	rtt := time.Duration((m.RTT[w][e]/2 + m.RTT[e][w]/2) * float64(time.Millisecond))
	server, client := freeUDPAddr(t), freeUDPAddr(t)
	file := writeWAN(t, map[string]string{server: "az_eastus", client: "az_westeurope"})

	srv := exec.Command(os.Args[0], "stack", "serve", "--listen", server)
	srv.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1", "STRATA_WAN="+file)
	var srvOut syncBuf
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	t.Cleanup(func() { srv.Process.Kill(); <-exited })
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(srvOut.String(), "listening on"); time.Sleep(5 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("server exited: %s", srvOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %s", srvOut.String())
		}
	}

	call := exec.Command(os.Args[0], "stack", "call", "--to", server, "--listen", client, "--wan", file, "--n", "3", "hi")
	call.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := call.CombinedOutput()
	if err != nil {
		t.Fatalf("call: %v\n%s", err, out)
	}
	replies := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		_, took, ok := strings.Cut(line, `"re:hi" in `)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(took)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if d < rtt {
			t.Errorf("a round trip took %v, less than the emulated %v (%s)", d, rtt, line)
		}
		replies++
	}
	if replies != 3 {
		t.Fatalf("%d replies, want 3:\n%s", replies, out)
	}
}

// strata wan show prints the file's sites and the matrix's one-way delays.
func TestWANShow(t *testing.T) {
	file := writeWAN(t, map[string]string{"udp:127.0.0.1:7001": "az_eastus", "127.0.0.2": "az_westeurope"})
	out, err := run(t, "wan", "show", "--wan", file)
	if err != nil {
		t.Fatal(err)
	}
	m := geo.Default()
	e, w := m.Index("az_eastus"), m.Index("az_westeurope")
	for _, want := range []string{"az_eastus: udp:127.0.0.1:7001", "az_westeurope: 127.0.0.2",
		fmt.Sprintf("%.1f", m.RTT[e][w]/2), fmt.Sprintf("%.1f", m.RTT[w][e]/2)} {
		if !strings.Contains(out, want) {
			t.Errorf("wan show lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "wan", "regions")
	if err != nil || !strings.Contains(out, "az_eastus\n") {
		t.Errorf("wan regions: %v\n%s", err, out)
	}
}

// Bad WAN settings are clear errors, before anything listens.
func TestWANErrors(t *testing.T) {
	bad := writeWAN(t, map[string]string{"udp:127.0.0.1:7001": "eastus"})
	good := writeWAN(t, map[string]string{"udp:127.0.0.1:7001": "az_eastus"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"wan", "show"}, "--wan FILE"},
		{[]string{"wan", "show", "--wan", filepath.Join(t.TempDir(), "missing.json")}, "no such file"},
		{[]string{"wan", "show", "--wan", bad}, "did you mean az_eastus"},
		{[]string{"stack", "call", "--to", "udp:127.0.0.1:7001", "--wan", bad, "x"}, "strata wan regions"},
		{[]string{"stack", "call", "--to", "udp:127.0.0.1:7001", "--wan", good, "x"}, "--wan-site"},
		{[]string{"stack", "call", "--to", "udp:127.0.0.1:7001", "--wan", good, "--wan-site", "mars", "x"}, `unknown site "mars"`},
		{[]string{"stack", "call", "--to", "udp:127.0.0.1:7001", "--wan-site", "az_eastus", "x"}, "needs --wan"},
		{[]string{"kv", "get", "k", "--wan", bad}, "did you mean az_eastus"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("strata %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// up passes the WAN file to its servers by absolute path, and clears a
// site its own environment names (each server's is its address's).
func TestWANChildEnv(t *testing.T) {
	t.Setenv(wanFileEnv, "")
	t.Setenv(wanSiteEnv, "az_eastus")
	wanFile = ""
	if env := wanChildEnv(); env != nil {
		t.Errorf("no WAN: child env %q", env)
	}
	wanFile = "wan.json"
	defer func() { wanFile = "" }()
	abs, _ := filepath.Abs("wan.json")
	env := wanChildEnv()
	if len(env) != 2 || env[0] != wanFileEnv+"="+abs || env[1] != wanSiteEnv+"=" {
		t.Errorf("child env %q", env)
	}
}
