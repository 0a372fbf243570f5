package transport

import (
	"testing"
	"time"

	"strata/stack"
)

func TestParse(t *testing.T) {
	good := []struct {
		a                 stack.Addr
		network, hostport string
	}{
		{"udp:127.0.0.1:7000", "udp", "127.0.0.1:7000"},
		{"tcp:[::1]:7000", "tcp", "[::1]:7000"},
		{"udp:[fe80::1%eth0]:1", "udp", "[fe80::1%eth0]:1"},
		{"tcp:localhost:65535", "tcp", "localhost:65535"},
		{"tcp:node-1.example_x.org:80", "tcp", "node-1.example_x.org:80"},
		{"udp:[::ffff:127.0.0.1]:80", "udp", "[::ffff:127.0.0.1]:80"},
	}
	for _, c := range good {
		n, hp, err := Parse(c.a)
		if err != nil || n != c.network || hp != c.hostport {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", c.a, n, hp, err, c.network, c.hostport)
		}
	}
	for _, a := range badAddrs {
		if n, hp, err := Parse(a); err == nil {
			t.Errorf("Parse(%q) = %q, %q; want an error", a, n, hp)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts splits back into the
// same address.
func FuzzParse(f *testing.F) {
	for _, a := range badAddrs {
		f.Add(string(a))
	}
	f.Add("udp:127.0.0.1:7000")
	f.Add("tcp:[::1]:7000")
	f.Fuzz(func(t *testing.T, s string) {
		n, hp, err := Parse(stack.Addr(s))
		if err == nil && n+":"+hp != s {
			t.Fatalf("Parse(%q) = %q, %q", s, n, hp)
		}
	})
}

func TestListenByAddress(t *testing.T) {
	for _, a := range []string{"udp:127.0.0.1:0", "tcp:127.0.0.1:0"} {
		tr, err := Listen(a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if got := string(tr.Local())[:4]; got != a[:4] {
			t.Errorf("%s: local address %s", a, tr.Local())
		}
		tr.Close()
	}
	for _, a := range []string{"sctp:127.0.0.1:0", "127.0.0.1:0", "udp:nonsense", ""} {
		if tr, err := Listen(a); err == nil {
			tr.Close()
			t.Errorf("Listen(%q) succeeded", a)
		}
	}
}

// A negative busy-poll time is a configuration error, not "off".
func TestBusyPollNegative(t *testing.T) {
	if _, err := ListenTCPOpts("127.0.0.1:0", TCPOptions{BusyPoll: -1}); err == nil {
		t.Error("TCP accepted a negative busy-poll time")
	}
	if _, err := ListenUDPOpts("127.0.0.1:0", UDPOptions{BusyPoll: -1}); err == nil {
		t.Error("UDP accepted a negative busy-poll time")
	}
	if _, err := ListenOpts("tcp:127.0.0.1:0", Options{BusyPoll: -time.Microsecond}); err == nil {
		t.Error("ListenOpts accepted a negative busy-poll time")
	}
}
