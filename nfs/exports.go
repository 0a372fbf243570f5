package nfs

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strconv"
	"strings"
)

// Exports says which clients may use which exported directories, and how
// (an exports(5)-like file, see docs/nfs.md). AUTH_SYS credentials are
// whatever the client claims, so the client's address is the only thing
// that really restricts access; the options limit what an admitted
// client's calls may do.
type Exports struct {
	list []*Export
}

// Export is one exported directory and the rules for its clients.
type Export struct {
	// Path is what clients mount (e.g. "/strata" or "/strata/pub").
	Path string
	// Dir is the directory in the file system, as names from its root
	// (empty for the root).
	Dir []string
	// Rules in the order they were written.
	Rules []Rule
	// id names the export in file handles (from Path).
	id uint32
}

// Squash says whose identity replaces the caller's.
type Squash int

// Squash modes.
const (
	RootSquash   Squash = iota // uid 0 and gid 0 become the anonymous ids (the default)
	NoRootSquash               // credentials are used as sent
	AllSquash                  // everyone is the anonymous user
)

// Security flavors a rule accepts (sec=).
const (
	SecSys  = 1 << iota // AUTH_SYS
	SecNone             // AUTH_NONE, as the anonymous user
)

// Rule admits the clients matching a pattern with options.
type Rule struct {
	Pattern  string       // as written: "*", an address or a CIDR
	any      bool         // "*"
	prefix   netip.Prefix // an address (full-length prefix) or a CIDR
	host     bool         // a single address (matched before CIDRs)
	ReadOnly bool
	Squash   Squash
	AnonUID  uint32
	AnonGID  uint32
	Sec      int // SecSys, SecNone or both
}

// Anonymous ids used by squashing unless anonuid/anongid say otherwise
// (nobody/nogroup on Debian, as Linux's knfsd).
const (
	DefaultAnonUID = 65534
	DefaultAnonGID = 65534
)

// DefaultExports is strata nfs serve's export table without an exports
// file: the file system's root exported as root, read-write to loopback
// clients only, with root squashed. It panics if root is not a clean
// absolute path (see CheckRoot).
func DefaultExports(root string) *Exports {
	return mustExports(root + " 127.0.0.0/8(rw,root_squash) ::1(rw,root_squash)")
}

// LoopbackExports is NewServer's table: loopback clients only, read-write,
// credentials as sent.
func LoopbackExports(root string) *Exports {
	return mustExports(root + " 127.0.0.0/8(rw,no_root_squash) ::1(rw,no_root_squash)")
}

func mustExports(line string) *Exports {
	root, _, _ := strings.Cut(line, " ")
	e, err := ParseExports("default exports", []byte(line), root)
	if err != nil {
		panic(err)
	}
	return e
}

// CheckRoot reports whether root can be the path a file system is
// exported as: absolute and clean ("/strata", "/").
func CheckRoot(root string) error {
	if !path.IsAbs(root) || path.Clean(root) != root {
		return fmt.Errorf("export path %q is not a clean absolute path (e.g. /strata)", root)
	}
	return nil
}

// ParseExports parses an exports file (name is used in errors). root is
// the path under which the file system's root is exported (e.g.
// "/strata"): every export path must be root or a directory below it.
// Errors name the file and line ("exports:3: ...").
func ParseExports(name string, data []byte, root string) (*Exports, error) {
	root = strings.TrimSuffix(root, "/")
	if root == "" {
		root = "/"
	}
	if !path.IsAbs(root) || path.Clean(root) != root {
		return nil, fmt.Errorf("%s: export root %q is not a clean absolute path", name, root)
	}
	ex := &Exports{}
	ids := map[uint32]string{}
	for i, line := range strings.Split(string(data), "\n") {
		lineNo := i + 1
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, args...))
		}
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		p := fields[0]
		if !path.IsAbs(p) || path.Clean(p) != p {
			return nil, fail("export path %q is not a clean absolute path", p)
		}
		var dir []string
		switch {
		case p == root:
		case root == "/" || strings.HasPrefix(p, root+"/"):
			dir = strings.Split(strings.TrimPrefix(p[len(root):], "/"), "/")
		default:
			return nil, fail("export path %q is not %s or below it (the file system is exported as %s)", p, root, root)
		}
		if len(fields) == 1 {
			return nil, fail("export %s lists no clients (write e.g. %s 127.0.0.1(rw))", p, p)
		}
		e := &Export{Path: p, Dir: dir, id: exportID(p)}
		if other, ok := ids[e.id]; ok {
			if other == p {
				return nil, fail("export %s listed twice (put all its clients on one line)", p)
			}
			return nil, fail("exports %s and %s have the same handle id; rename one", other, p)
		}
		ids[e.id] = p
		for _, f := range fields[1:] {
			r, err := parseRule(f)
			if err != nil {
				return nil, fail("%s: %v", p, err)
			}
			e.Rules = append(e.Rules, r)
		}
		ex.list = append(ex.list, e)
	}
	if len(ex.list) == 0 {
		return nil, fmt.Errorf("%s: no exports", name)
	}
	return ex, nil
}

// exportID is the export's number in file handles: a hash of its path,
// so handles stay valid when the file is reordered or other exports are
// added.
func exportID(p string) uint32 {
	s := sha256.Sum256([]byte(p))
	return binary.BigEndian.Uint32(s[:4])
}

// parseRule parses "pattern(options)" or a bare pattern.
func parseRule(f string) (Rule, error) {
	pat, opts := f, ""
	if i := strings.IndexByte(f, '('); i >= 0 {
		if !strings.HasSuffix(f, ")") {
			return Rule{}, fmt.Errorf("%q: options must end with ')'", f)
		}
		pat, opts = f[:i], f[i+1:len(f)-1]
	} else if strings.ContainsRune(f, ')') {
		return Rule{}, fmt.Errorf("%q: ')' without '('", f)
	}
	r := Rule{Pattern: pat, Squash: RootSquash, AnonUID: DefaultAnonUID, AnonGID: DefaultAnonGID, Sec: SecSys}
	switch {
	case pat == "":
		// exports(5) reads "(opts)" after a space as options for every
		// host, which is a classic way to export to the world by mistake.
		return Rule{}, fmt.Errorf("%q: options without a client pattern (no space between pattern and '(', use * for every client)", f)
	case pat == "*":
		r.any = true
	case strings.Contains(pat, "/"):
		pfx, err := netip.ParsePrefix(pat)
		if err != nil {
			return Rule{}, fmt.Errorf("client %q: not an address, CIDR or *", pat)
		}
		if pfx.Addr().Zone() != "" {
			return Rule{}, fmt.Errorf("client %q: zones are not supported", pat)
		}
		r.prefix = pfx.Masked()
		if pfx.Addr().Is4In6() {
			if pfx.Bits() < 96 {
				return Rule{}, fmt.Errorf("client %q: an IPv4-mapped network must be at least /96", pat)
			}
			r.prefix = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96).Masked()
		}
	default:
		a, err := netip.ParseAddr(pat)
		if err != nil {
			return Rule{}, fmt.Errorf("client %q: not an address, CIDR or * (host names and netgroups are not supported)", pat)
		}
		if a.Zone() != "" {
			return Rule{}, fmt.Errorf("client %q: zones are not supported", pat)
		}
		a = a.Unmap()
		r.prefix, r.host = netip.PrefixFrom(a, a.BitLen()), true
	}
	if opts == "" {
		if strings.HasSuffix(f, ")") {
			return Rule{}, fmt.Errorf("client %s: empty options", pat)
		}
		return r, nil
	}
	seen := map[string]string{} // option class -> option, to catch contradictions
	class := func(cls, opt string) error {
		if prev, ok := seen[cls]; ok {
			if prev == opt {
				return fmt.Errorf("client %s: option %s given twice", pat, opt)
			}
			return fmt.Errorf("client %s: options %s and %s contradict each other", pat, prev, opt)
		}
		seen[cls] = opt
		return nil
	}
	for _, o := range strings.Split(opts, ",") {
		k, v, hasV := strings.Cut(o, "=")
		var err error
		switch k {
		case "ro", "rw":
			if err = class("access", k); err == nil {
				r.ReadOnly = k == "ro"
			}
		case "root_squash", "no_root_squash":
			if err = class("root", k); err == nil && k == "no_root_squash" && r.Squash != AllSquash {
				r.Squash = NoRootSquash
			}
		case "all_squash", "no_all_squash":
			if err = class("all", k); err == nil && k == "all_squash" {
				r.Squash = AllSquash
			}
		case "anonuid", "anongid":
			var n uint64
			if !hasV {
				err = fmt.Errorf("client %s: %s needs a value (%s=N)", pat, k, k)
			} else if n, err = strconv.ParseUint(v, 10, 32); err != nil {
				err = fmt.Errorf("client %s: %s=%q is not a number from 0 to %d", pat, k, v, uint32(1<<32-1))
			} else if err = class(k, k); err == nil {
				if k == "anonuid" {
					r.AnonUID = uint32(n)
				} else {
					r.AnonGID = uint32(n)
				}
			}
		case "sec":
			if err = class("sec", k); err != nil {
				break
			}
			r.Sec = 0
			for fl := range strings.SplitSeq(v, ":") {
				switch fl {
				case "sys":
					r.Sec |= SecSys
				case "none":
					r.Sec |= SecNone
				default:
					err = fmt.Errorf("client %s: sec=%s: flavor %q is not supported (sys, none)", pat, v, fl)
				}
			}
		case "async":
			err = fmt.Errorf("client %s: async is not an export option here: it is the server's flag (strata nfs serve --async)", pat)
		case "sync", "no_subtree_check":
			// What Strata always does; accepted so that lines written for
			// Linux read the same here.
		default:
			err = fmt.Errorf("client %s: unknown option %q (ro, rw, root_squash, no_root_squash, all_squash, anonuid=N, anongid=N, sec=sys, sec=none, sync, no_subtree_check)", pat, o)
		}
		if err == nil && hasV && k != "anonuid" && k != "anongid" && k != "sec" {
			err = fmt.Errorf("client %s: option %s takes no value", pat, k)
		}
		if err != nil {
			return Rule{}, err
		}
	}
	if seen["all"] == "all_squash" && seen["root"] == "no_root_squash" {
		return Rule{}, fmt.Errorf("client %s: options no_root_squash and all_squash contradict each other", pat)
	}
	return r, nil
}

// match returns the rule of e that admits addr, or nil. As exports(5)
// says, a single address beats a network, which beats *; among rules of
// one kind the first written wins.
func (e *Export) match(addr netip.Addr) *Rule {
	if !addr.IsValid() {
		return nil
	}
	var netRule, anyRule *Rule
	for i := range e.Rules {
		r := &e.Rules[i]
		switch {
		case r.any:
			if anyRule == nil {
				anyRule = r
			}
		case r.prefix.Contains(addr):
			if r.host {
				return r
			}
			if netRule == nil {
				netRule = r
			}
		}
	}
	if netRule != nil {
		return netRule
	}
	return anyRule
}

// admits reports whether some export has a rule for addr.
func (ex *Exports) admits(addr netip.Addr) bool {
	for _, e := range ex.list {
		if e.match(addr) != nil {
			return true
		}
	}
	return false
}

// byID returns the export of a file handle's export id.
func (ex *Exports) byID(id uint32) *Export {
	for _, e := range ex.list {
		if e.id == id {
			return e
		}
	}
	return nil
}

// forMount returns the export a MNT of p from addr uses: the one with the
// longest path that is p or a directory above it and admits addr, and the
// components of p below it. found reports whether any export covers p at
// all (MNT3ERR_ACCES rather than NOENT when none admits addr).
func (ex *Exports) forMount(p string, addr netip.Addr) (e *Export, rule *Rule, rest []string, found bool) {
	if !path.IsAbs(p) {
		return nil, nil, nil, false
	}
	p = path.Clean(p)
	for _, c := range ex.list {
		var below string
		switch {
		case p == c.Path:
		case c.Path == "/":
			below = p[1:]
		case strings.HasPrefix(p, c.Path+"/"):
			below = p[len(c.Path)+1:]
		default:
			continue
		}
		found = true
		r := c.match(addr)
		if r == nil || (e != nil && len(c.Path) <= len(e.Path)) {
			continue
		}
		e, rule, rest = c, r, nil
		if below != "" {
			rest = strings.Split(below, "/")
		}
	}
	return e, rule, rest, found
}

// List returns the exports in file order.
func (ex *Exports) List() []*Export { return ex.list }

// String describes the rule's options the way they would be written.
func (r *Rule) String() string {
	o := []string{"rw"}
	if r.ReadOnly {
		o[0] = "ro"
	}
	switch r.Squash {
	case RootSquash:
		o = append(o, "root_squash")
	case NoRootSquash:
		o = append(o, "no_root_squash")
	case AllSquash:
		o = append(o, "all_squash")
	}
	if r.AnonUID != DefaultAnonUID || r.AnonGID != DefaultAnonGID {
		o = append(o, fmt.Sprintf("anonuid=%d,anongid=%d", r.AnonUID, r.AnonGID))
	}
	switch r.Sec {
	case SecSys:
		o = append(o, "sec=sys")
	case SecNone:
		o = append(o, "sec=none")
	default:
		o = append(o, "sec=sys:none")
	}
	return r.Pattern + "(" + strings.Join(o, ",") + ")"
}

// peerAddr is the IP address of an RPC peer (IPv4-mapped IPv6 addresses
// unmapped, so 127.0.0.1 rules match clients on dual-stack sockets).
func peerAddr(a net.Addr) netip.Addr {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		if a == nil {
			return netip.Addr{}
		}
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return netip.Addr{}
		}
	}
	return ap.Addr().Unmap().WithZone("")
}

// allows reports whether some rule for addr accepts the flavor (SecSys or
// SecNone).
func (ex *Exports) allows(addr netip.Addr, sec int) bool {
	for _, e := range ex.list {
		if r := e.match(addr); r != nil && r.Sec&sec != 0 {
			return true
		}
	}
	return false
}
