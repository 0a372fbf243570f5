package jgroups

import (
	"archive/zip"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The stack files of the jar the benchmarks start from.
const (
	// LowLatencyTCP is tcp-low-latency.xml: TCP, no bundler, every message
	// processed on the thread that read it, tcp_nodelay. Its own comment:
	// "best used with few threads (e.g. RoundTrip, with 1 sender thread).
	// For high-throughput requirements, use tcp.xml".
	LowLatencyTCP = "tcp-low-latency.xml"
	// DefaultTCP is tcp.xml: TCP with the transport's default bundler
	// (per-destination, "pd") and thread pool, flow control (MFC, UFC).
	DefaultTCP = "tcp.xml"
	// DefaultUDP is udp.xml, JGroups' default stack (and RoundTrip's
	// default -props): UDP with the same bundler and thread pool.
	DefaultUDP = "udp.xml"
)

// BindPortProperty is the Java system property that sets a member's
// transport bind port in the stacks BuildStack writes.
const BindPortProperty = "strata.jgroups.bind_port"

// StackSpec says which of the jar's stack files a run uses and which
// protocol attributes it changes.
type StackSpec struct {
	Base string // a stack file in the jar: LowLatencyTCP, DefaultTCP, DefaultUDP
	// Set overrides attributes, by protocol element name without a
	// "pbcast." prefix ("MFC": {"max_credits": "4M"}; the transport is
	// "TCP" or "UDP").
	Set map[string]map[string]string
}

var (
	reInclude   = regexp.MustCompile(`(?s)<include\s+(.*?)/>`)
	reTransport = regexp.MustCompile(`(?s)<(TCP|UDP)\s+(.*?)/>`)
	reDiscovery = regexp.MustCompile(`(?s)<(TCPPING|MPING|PING)\b(.*?)/>`)
	reAttr      = regexp.MustCompile(`([A-Za-z_][\w.:-]*)\s*=\s*"([^"]*)"`)
	reDefault   = regexp.MustCompile(`^\$\{[^:}]+:([^}]*)\}$`)
)

// readJarFile returns the contents of the named entry of a jar.
func readJarFile(jar, name string) ([]byte, error) {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, jar, err)
	}
	defer f.Close()
	return io.ReadAll(f)
}

type attr struct{ name, value string }

func parseAttrs(s string) []attr {
	var out []attr
	for _, m := range reAttr.FindAllStringSubmatch(s, -1) {
		out = append(out, attr{m[1], m[2]})
	}
	return out
}

// setAttr overrides name's value in place, or appends it.
func setAttr(as []attr, name, value string) []attr {
	for i := range as {
		if as[i].name == name {
			as[i].value = value
			return as
		}
	}
	return append(as, attr{name, value})
}

func element(name string, as []attr) string {
	var b strings.Builder
	b.WriteString("<" + name)
	for _, a := range as {
		fmt.Fprintf(&b, "\n        %s=%q", a.name, a.value)
	}
	b.WriteString("/>")
	return b.String()
}

// BuildStack returns the stack a run's members use: the jar's spec.Base
// with these changes, so that the file states the whole stack and works
// on loopback without IP multicast, which may not work here:
//
//   - its <include> of the transport file (tcp-default.xml or
//     udp-default.xml) is replaced by that file's <TCP> or <UDP> element,
//     the include's attributes overriding the included ones (JGroups' own
//     include semantics), plus bind_port="${strata.jgroups.bind_port}"
//     and port_range="0" so that each member binds exactly its port, and
//     for UDP ip_mcast="false" (group messages go as one unicast per
//     member);
//   - discovery (TCPPING, or MPING / PING, which use IP multicast, replaced
//     by TCPPING) lists 127.0.0.1[port] for each of ports, port_range="0";
//   - spec.Set's attributes are set;
//   - a leading comment says so.
//
// Everything else (protocols, order, attributes) is the jar's text verbatim.
func BuildStack(jar string, spec StackSpec, ports []int) (string, error) {
	raw, err := readJarFile(jar, spec.Base)
	if err != nil {
		return "", err
	}
	text := string(raw)

	inc := reInclude.FindAllStringSubmatchIndex(text, -1)
	if len(inc) != 1 {
		return "", fmt.Errorf("%s: want exactly one <include>, found %d", spec.Base, len(inc))
	}
	file := ""
	var overrides []attr
	for _, a := range parseAttrs(text[inc[0][2]:inc[0][3]]) {
		if a.name == "file" {
			file = a.value
			continue
		}
		overrides = append(overrides, a)
	}
	if m := reDefault.FindStringSubmatch(file); m != nil {
		file = m[1]
	}
	if file == "" {
		return "", fmt.Errorf("%s: <include> names no file", spec.Base)
	}
	tdef, err := readJarFile(jar, file)
	if err != nil {
		return "", err
	}
	tp := reTransport.FindStringSubmatch(string(tdef))
	if tp == nil {
		return "", fmt.Errorf("%s: no <TCP> or <UDP> element", file)
	}
	tpName := tp[1]
	as := parseAttrs(tp[2])
	for _, a := range overrides {
		as = setAttr(as, a.name, a.value)
	}
	as = setAttr(as, "bind_port", "${"+BindPortProperty+"}")
	as = setAttr(as, "port_range", "0")
	if tpName == "UDP" {
		as = setAttr(as, "ip_mcast", "false")
	}
	text = text[:inc[0][0]] + element(tpName, as) + text[inc[0][1]:]

	disc := reDiscovery.FindAllStringSubmatchIndex(text, -1)
	if len(disc) != 1 {
		return "", fmt.Errorf("%s: want exactly one discovery protocol (TCPPING, MPING or PING), found %d", spec.Base, len(disc))
	}
	hosts := make([]string, len(ports))
	for i, p := range ports {
		hosts[i] = "127.0.0.1[" + strconv.Itoa(p) + "]"
	}
	was := text[disc[0][2]:disc[0][3]]
	var das []attr
	if was == "TCPPING" {
		das = parseAttrs(text[disc[0][4]:disc[0][5]]) // keep its other attributes
	}
	das = setAttr(das, "initial_hosts", strings.Join(hosts, ","))
	das = setAttr(das, "port_range", "0")
	text = text[:disc[0][0]] + element("TCPPING", das) + text[disc[0][1]:]

	names := make([]string, 0, len(spec.Set))
	for n := range spec.Set {
		names = append(names, n)
	}
	slices.Sort(names)
	var set []string
	for _, n := range names {
		re := regexp.MustCompile(`(?s)<((?:pbcast\.)?` + regexp.QuoteMeta(n) + `)\b(.*?)/>`)
		ms := re.FindAllStringSubmatchIndex(text, -1)
		if len(ms) != 1 {
			return "", fmt.Errorf("%s: want exactly one <%s> to set attributes of, found %d", spec.Base, n, len(ms))
		}
		as := parseAttrs(text[ms[0][4]:ms[0][5]])
		keys := make([]string, 0, len(spec.Set[n]))
		for k := range spec.Set[n] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			as = setAttr(as, k, spec.Set[n][k])
			set = append(set, fmt.Sprintf("%s.%s=%s", n, k, spec.Set[n][k]))
		}
		text = text[:ms[0][0]] + element(text[ms[0][2]:ms[0][3]], as) + text[ms[0][1]:]
	}

	changed := ""
	if tpName == "UDP" {
		changed = ", ip_mcast=false"
	}
	header := fmt.Sprintf("<!-- Generated by strata/bench/jgroups from %s in %s:\n"+
		"     the include of %s replaced by its %s element (include attributes override;\n"+
		"     bind_port from -D%s and port_range=0%s); %s replaced by TCPPING listing the members.",
		spec.Base, jarBase(jar), file, tpName, BindPortProperty, changed, was)
	if len(set) > 0 {
		header += "\n     Set: " + strings.Join(set, ", ") + "."
	}
	return header + " -->\n" + strings.TrimLeft(text, "\n"), nil
}

// Effective returns the value protocol element name (without "pbcast.")
// has for attribute key in stack xml: its literal value, or for
// "${property:default}" the default (the benchmarks set no such property),
// or "" if the element or attribute is not there (the protocol's built-in
// default applies).
func Effective(xml, name, key string) string {
	re := regexp.MustCompile(`(?s)<(?:pbcast\.)?` + regexp.QuoteMeta(name) + `\b(.*?)/>`)
	m := re.FindStringSubmatch(xml)
	if m == nil {
		return ""
	}
	for _, a := range parseAttrs(m[1]) {
		if a.name == key {
			if d := reDefault.FindStringSubmatch(a.value); d != nil {
				return d[1]
			}
			return a.value
		}
	}
	return ""
}

func jarBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
