package nfs

import (
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestParseExports: what each valid line means, and that every invalid
// one is refused with the file name, the line number and the reason.
func TestParseExports(t *testing.T) {
	type rule struct {
		pattern string
		ro      bool
		squash  Squash
		uid     uint32
		gid     uint32
		sec     int
	}
	def := func(p string) rule { return rule{p, false, RootSquash, 65534, 65534, SecSys} }
	for _, tc := range []struct {
		name, text string
		want       map[string][]rule // export path -> rules
	}{
		{"bare patterns take the defaults", "/strata 10.0.0.1 * 10.1.0.0/16 ::1",
			map[string][]rule{"/strata": {def("10.0.0.1"), def("*"), def("10.1.0.0/16"), def("::1")}}},
		{"options", "/strata 10.0.0.1(ro) 10.0.0.2(rw,no_root_squash) 10.0.0.3(all_squash,anonuid=1000,anongid=100)",
			map[string][]rule{"/strata": {
				{"10.0.0.1", true, RootSquash, 65534, 65534, SecSys},
				{"10.0.0.2", false, NoRootSquash, 65534, 65534, SecSys},
				{"10.0.0.3", false, AllSquash, 1000, 100, SecSys},
			}}},
		{"sec flavors", "/strata *(sec=sys) 10.0.0.1(sec=none) 10.0.0.2(sec=sys:none)",
			map[string][]rule{"/strata": {
				def("*"),
				{"10.0.0.1", false, RootSquash, 65534, 65534, SecNone},
				{"10.0.0.2", false, RootSquash, 65534, 65534, SecSys | SecNone},
			}}},
		{"accepted no-ops, explicit defaults", "/strata *(rw,sync,no_subtree_check,root_squash,no_all_squash)",
			map[string][]rule{"/strata": {def("*")}}},
		{"comments, blank lines, tabs, subdirectories", "# exports\n\n/strata\t127.0.0.1(rw) # loopback\n  /strata/a/b   10.0.0.0/8(ro)\n",
			map[string][]rule{"/strata": {def("127.0.0.1")}, "/strata/a/b": {{"10.0.0.0/8", true, RootSquash, 65534, 65534, SecSys}}}},
		{"unmasked CIDR", "/strata 10.1.2.3/8", map[string][]rule{"/strata": {def("10.1.2.3/8")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := ParseExports("exports", []byte(tc.text), "/strata")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]rule{}
			for _, e := range ex.List() {
				for _, r := range e.Rules {
					got[e.Path] = append(got[e.Path], rule{r.Pattern, r.ReadOnly, r.Squash, r.AnonUID, r.AnonGID, r.Sec})
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("exports %v, want %v", got, tc.want)
			}
			for p, rs := range tc.want {
				if len(got[p]) != len(rs) {
					t.Fatalf("%s: rules %v, want %v", p, got[p], rs)
				}
				for i := range rs {
					if got[p][i] != rs[i] {
						t.Errorf("%s rule %d: %+v, want %+v", p, i, got[p][i], rs[i])
					}
				}
			}
		})
	}

	for _, tc := range []struct {
		text string
		line int
		why  string
	}{
		{"", 0, "no exports"},
		{"# only a comment\n", 0, "no exports"},
		{"/strata", 1, "lists no clients"},
		{"strata *", 1, "not a clean absolute path"},
		{"/strata/ *", 1, "not a clean absolute path"},
		{"/strata/../etc *", 1, "not a clean absolute path"},
		{"/other *", 1, "not /strata or below it"},
		{"/stratafoo *", 1, "not /strata or below it"},
		{"/strata *\n/strata 10.0.0.1", 2, "listed twice"},
		{"/strata *\n\n/strata/x host.example.com", 3, "host names and netgroups are not supported"},
		{"/strata @netgroup", 1, "not an address"},
		{"/strata 10.0.0.0/33", 1, "not an address, CIDR"},
		{"/strata 10.0.0.0/255.0.0.0", 1, "not an address, CIDR"},
		{"/strata ::ffff:0.0.0.0/80", 1, "at least /96"},
		{"/strata fe80::1%eth0", 1, "zones are not supported"},
		{"/strata (rw)", 1, "options without a client pattern"},
		{"/strata * (rw)", 1, "options without a client pattern"},
		{"/strata *(rw", 1, "must end with ')'"},
		{"/strata *rw)", 1, "')' without '('"},
		{"/strata *()", 1, "empty options"},
		{"/strata *(rw,ro)", 1, "contradict"},
		{"/strata *(root_squash,no_root_squash)", 1, "contradict"},
		{"/strata *(no_root_squash,all_squash)", 1, "contradict"},
		{"/strata *(all_squash,no_root_squash)", 1, "contradict"},
		{"/strata *(rw,rw)", 1, "given twice"},
		{"/strata *(anonuid)", 1, "needs a value"},
		{"/strata *(anonuid=-1)", 1, "not a number"},
		{"/strata *(anongid=4294967296)", 1, "not a number"},
		{"/strata *(anonuid=1,anonuid=2)", 1, "given twice"},
		{"/strata *(sec=krb5)", 1, "not supported"},
		{"/strata *(sec=)", 1, "not supported"},
		{"/strata *(rw=1)", 1, "takes no value"},
		{"/strata *(insecure)", 1, "unknown option"},
		{"/strata *(async)", 1, "strata nfs serve --async"},
		{"/strata *(rw,,ro)", 1, "unknown option"},
	} {
		_, err := ParseExports("exports", []byte(tc.text), "/strata")
		if err == nil {
			t.Errorf("%q: accepted", tc.text)
			continue
		}
		prefix := "exports: "
		if tc.line > 0 {
			prefix = "exports:" + strconv.Itoa(tc.line) + ": "
		}
		if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: error %q, want %q...%q", tc.text, err, prefix, tc.why)
		}
	}
	if _, err := ParseExports("exports", []byte("/ *"), "/"); err != nil {
		t.Errorf("exporting / as /: %v", err)
	}
	if _, err := ParseExports("exports", []byte("/x *"), "x"); err == nil {
		t.Error("a relative export root accepted")
	}
}

// TestExportMatch: as exports(5) says, a single address beats a network,
// a network beats *, and among networks the first written wins;
// IPv4-mapped addresses match IPv4 rules; MNT picks the deepest export
// that admits the client.
func TestExportMatch(t *testing.T) {
	ex, err := ParseExports("exports", []byte(
		"/strata *(ro) 10.0.0.0/8(rw,all_squash) 10.1.0.0/16(rw) 10.1.2.3(rw,no_root_squash) ::ffff:192.168.0.0/112(rw)\n"+
			"/strata/sub 10.1.2.3(ro)\n"), "/strata")
	if err != nil {
		t.Fatal(err)
	}
	e := ex.List()[0]
	for addr, want := range map[string]string{
		"10.1.2.3":              "10.1.2.3(rw,no_root_squash,sec=sys)",
		"::ffff:10.1.2.3":       "10.1.2.3(rw,no_root_squash,sec=sys)",
		"10.1.2.4":              "10.0.0.0/8(rw,all_squash,sec=sys)",
		"10.2.0.1":              "10.0.0.0/8(rw,all_squash,sec=sys)",
		"192.168.7.7":           "::ffff:192.168.0.0/112(rw,root_squash,sec=sys)",
		"172.16.0.1":            "*(ro,root_squash,sec=sys)",
		"2001:db8::1":           "*(ro,root_squash,sec=sys)",
		"::ffff:172.16.0.1":     "*(ro,root_squash,sec=sys)",
		"127.0.0.1":             "*(ro,root_squash,sec=sys)",
		"::1":                   "*(ro,root_squash,sec=sys)",
		"::ffff:192.168.255.10": "::ffff:192.168.0.0/112(rw,root_squash,sec=sys)",
	} {
		a := netip.MustParseAddr(addr).Unmap()
		r := e.match(a)
		if r == nil || r.String() != want {
			t.Errorf("%s matched %v, want %s", addr, r, want)
		}
	}
	if e.match(netip.Addr{}) != nil {
		t.Error("an invalid address matched")
	}
	for _, tc := range []struct {
		path, addr, export string
		rest               []string
		found              bool
	}{
		{"/strata/sub/x", "10.1.2.3", "/strata/sub", []string{"x"}, true},
		{"/strata/sub", "10.1.2.3", "/strata/sub", nil, true},
		{"/strata/sub", "10.9.9.9", "/strata", []string{"sub"}, true},
		{"/strata//sub/", "10.1.2.3", "/strata/sub", nil, true},
		{"/strata/subx", "10.1.2.3", "/strata", []string{"subx"}, true},
		{"/other", "10.1.2.3", "", nil, false},
		{"strata", "10.1.2.3", "", nil, false},
	} {
		e, _, rest, found := ex.forMount(tc.path, netip.MustParseAddr(tc.addr))
		got := ""
		if e != nil {
			got = e.Path
		}
		if got != tc.export || strings.Join(rest, "/") != strings.Join(tc.rest, "/") || found != tc.found {
			t.Errorf("MNT %s from %s: %q %q %v, want %q %q %v", tc.path, tc.addr, got, rest, found, tc.export, tc.rest, tc.found)
		}
	}
	only, _ := ParseExports("exports", []byte("/strata 10.0.0.1"), "/strata")
	if e, _, _, found := only.forMount("/strata", netip.MustParseAddr("10.0.0.2")); e != nil || !found {
		t.Errorf("MNT of an export that does not admit the client: %v %v, want nil, found", e, found)
	}
	def := DefaultExports("/strata")
	for addr, ok := range map[string]bool{"127.0.0.1": true, "127.9.9.9": true, "::1": true, "10.0.0.1": false, "::2": false} {
		r := def.List()[0].match(netip.MustParseAddr(addr))
		if (r != nil) != ok || (r != nil && (r.ReadOnly || r.Squash != RootSquash || r.Sec != SecSys)) {
			t.Errorf("default exports for %s: %v", addr, r)
		}
	}
}

var lineRef = regexp.MustCompile(`^fuzz(:[0-9]+)?: `)

// FuzzParseExports: no input panics; an error names the file and, unless
// the file has no exports at all, a line that exists; a table that parses
// has only clean paths at or below the root, and rules whose String is
// itself a valid rule meaning the same.
func FuzzParseExports(f *testing.F) {
	for _, s := range []string{
		"/strata 127.0.0.1(rw)", "/strata *(ro,all_squash,anonuid=1,anongid=2,sec=sys:none)",
		"# c\n/strata/x 10.0.0.0/8(no_root_squash) ::1\n", "/strata (rw)", "/strata *(rw", "/strata ::ffff:1.2.3.4/120",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ex, err := ParseExports("fuzz", []byte(text), "/strata")
		if err != nil {
			m := lineRef.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error without the file name: %q", err)
			}
			if m[1] != "" {
				n, _ := strconv.Atoi(m[1][1:])
				if n < 1 || n > strings.Count(text, "\n")+1 {
					t.Fatalf("error names line %d of %d: %q", n, strings.Count(text, "\n")+1, err)
				}
			}
			return
		}
		for _, e := range ex.List() {
			if e.Path != "/strata" && !strings.HasPrefix(e.Path, "/strata/") {
				t.Fatalf("export %q outside the root", e.Path)
			}
			if len(e.Rules) == 0 {
				t.Fatalf("export %q without rules", e.Path)
			}
			for _, r := range e.Rules {
				again, err := ParseExports("again", []byte(e.Path+" "+r.String()), "/strata")
				if err != nil {
					t.Fatalf("rule %q does not parse back: %v", r.String(), err)
				}
				if r2 := again.List()[0].Rules[0]; r2.String() != r.String() {
					t.Fatalf("rule %q parses back as %q", r.String(), r2.String())
				}
			}
		}
	})
}

// TestPeerAddr: the address rules see, over TCP and UDP: IPv4-mapped
// addresses unmapped, zones dropped, nothing for an unknown peer.
func TestPeerAddr(t *testing.T) {
	for _, tc := range []struct {
		peer net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, "127.0.0.1"},
		{&net.UDPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 2}, "10.1.2.3"},
		{&net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 2, Zone: "eth0"}, "fe80::1"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 3}, "::1"},
	} {
		if got := peerAddr(tc.peer); got.String() != tc.want {
			t.Errorf("%v: %v, want %s", tc.peer, got, tc.want)
		}
	}
	if got := peerAddr(nil); got.IsValid() {
		t.Errorf("nil peer: %v", got)
	}
	if got := peerAddr(&net.UnixAddr{Name: "/x", Net: "unix"}); got.IsValid() {
		t.Errorf("unix peer: %v", got)
	}
}
