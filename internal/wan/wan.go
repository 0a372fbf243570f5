// Package wan configures an emulated wide-area network for Strata
// processes running on one machine: it maps transport addresses to data
// center sites (regions of a geo latency matrix) and makes each process's
// transport hold every datagram for the one-way delay between its own site
// and the destination's (transport.Delayed).
//
// The one-way delay from site i to site j is half the matrix's round trip
// of a request issued at i and served at j (geo.Matrix: RTT[i][j]/2), so a
// request from i to j and its reply take RTT[i][j]/2 + RTT[j][i]/2, the
// matrix's round trip when it is symmetric. Two addresses in one site have
// no delay between them.
//
// It lives above both geo and stack, which do not know each other.
//
// Guarantees: a configuration that loads names only known sites, only
// well-formed addresses and only site pairs the matrix has a latency for;
// bad input is an error that says what is wrong, never a panic. A
// destination whose address is in no site is sent to without delay (only
// the jitter, if any, applies to every datagram).
package wan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/geo"
	"strata/stack"
	"strata/stack/transport"
)

// RegionsHint says how a user lists the valid site names.
const RegionsHint = "`strata wan regions` lists the valid names"

// File is the JSON a user writes:
//
//	{"sites": {"udp:127.0.0.1:7001": "az_eastus", "127.0.0.2": "az_westeurope"},
//	 "jitter_ms": 2, "matrix": "DIR", "seed": 1}
//
// A key of sites is either a transport address (udp:HOST:PORT or
// tcp:HOST:PORT), which matches exactly that address, or a bare host (an
// IP address or host name, IPv6 without brackets), which matches every
// address on that host that is not listed itself. Matrix is a folder
// holding loc-index-map.txt and net-only-latency.txt, as `strata geo
// --matrix` reads (relative to the file's folder; default: the embedded
// matrix, geo.Default). JitterMs adds a uniformly random extra delay in
// [0, jitter_ms) to every datagram; Seed seeds it.
type File struct {
	Sites    map[string]string `json:"sites"`
	JitterMs float64           `json:"jitter_ms,omitempty"`
	Matrix   string            `json:"matrix,omitempty"`
	Seed     uint64            `json:"seed,omitempty"`
}

// maxJitter bounds jitter_ms: beyond a minute it is surely a mistake.
const maxJitter = time.Minute

// Config is a checked WAN configuration.
type Config struct {
	Matrix *geo.Matrix
	Jitter time.Duration
	Seed   uint64
	addrs  map[stack.Addr]int // exact transport address -> site (matrix index)
	hosts  map[string]int     // bare host -> site
}

// Load reads and checks a WAN file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wan: %w", err)
	}
	c, err := Parse(data, func(dir string) (*geo.Matrix, error) {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(path), dir)
		}
		return geo.LoadMatrixDir(dir)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse checks a WAN file's content. loadMatrix reads the file's "matrix"
// folder if it names one (nil: a file that names one is refused).
func Parse(data []byte, loadMatrix func(dir string) (*geo.Matrix, error)) (*Config, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // a misspelt field would be silently ignored
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("wan: bad JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("wan: bad JSON: more after the object")
	}
	return f.Check(loadMatrix)
}

// Check turns a File into a Config (see Parse).
func (f *File) Check(loadMatrix func(dir string) (*geo.Matrix, error)) (*Config, error) {
	c := &Config{Matrix: geo.Default(), Seed: f.Seed, addrs: map[stack.Addr]int{}, hosts: map[string]int{}}
	if f.Matrix != "" {
		if loadMatrix == nil {
			return nil, fmt.Errorf("wan: matrix %q: no matrix folder can be read here", f.Matrix)
		}
		m, err := loadMatrix(f.Matrix)
		if err != nil {
			return nil, fmt.Errorf("wan: matrix: %w", err)
		}
		c.Matrix = m
	}
	if math.IsNaN(f.JitterMs) || f.JitterMs < 0 || f.JitterMs > float64(maxJitter/time.Millisecond) {
		return nil, fmt.Errorf("wan: jitter_ms must be between 0 and %d, got %v", maxJitter/time.Millisecond, f.JitterMs)
	}
	c.Jitter = time.Duration(f.JitterMs * float64(time.Millisecond))
	if len(f.Sites) == 0 {
		return nil, fmt.Errorf("wan: \"sites\" maps no address to a site")
	}
	keys := make([]string, 0, len(f.Sites))
	for k := range f.Sites {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad entry reported is always the same
	var used []int
	for _, k := range keys {
		site, err := c.site(f.Sites[k])
		if err != nil {
			return nil, fmt.Errorf("wan: sites: %q: %w", k, err)
		}
		if strings.Contains(k, ":") && !strings.HasPrefix(k, "[") && net.ParseIP(k) == nil {
			if _, _, err := transport.Parse(stack.Addr(k)); err != nil {
				return nil, fmt.Errorf("wan: sites: %w", err)
			}
			c.addrs[stack.Addr(k)] = site
		} else {
			host, err := bareHost(k)
			if err != nil {
				return nil, fmt.Errorf("wan: sites: %w", err)
			}
			c.hosts[host] = site
		}
		if !slices.Contains(used, site) {
			used = append(used, site)
		}
	}
	slices.Sort(used)
	for _, i := range used {
		for _, j := range used {
			if math.IsInf(c.Matrix.RTT[i][j], 0) {
				return nil, fmt.Errorf("wan: the matrix has no latency from %s to %s", c.Matrix.Names[i], c.Matrix.Names[j])
			}
		}
	}
	return c, nil
}

// bareHost checks a site key that is a host alone and returns it in the
// form transport addresses carry it (IPv6 in brackets).
func bareHost(k string) (string, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(k, "["), "]")
	if ip := net.ParseIP(h); ip != nil && strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	// The transport's own check, on a made-up port.
	if _, _, err := transport.Parse(stack.Addr("udp:" + h + ":1")); err != nil {
		return "", fmt.Errorf("%q is neither udp:HOST:PORT, tcp:HOST:PORT nor a host", k)
	}
	return h, nil
}

// site returns a site name's matrix index, or an error that says how to
// list the valid names (and which one was probably meant).
func (c *Config) site(name string) (int, error) {
	if i := c.Matrix.Index(name); i >= 0 {
		return i, nil
	}
	var near []string
	for _, n := range c.Matrix.Names {
		if _, rest, ok := strings.Cut(n, "_"); ok && strings.EqualFold(rest, name) || strings.EqualFold(n, name) {
			near = append(near, n)
		}
	}
	if len(near) > 0 {
		return -1, fmt.Errorf("unknown site %q (did you mean %s?); %s", name, strings.Join(near, " or "), RegionsHint)
	}
	return -1, fmt.Errorf("unknown site %q; %s", name, RegionsHint)
}

// Site returns the index of a site name in the matrix, or an error (as for
// the file's sites).
func (c *Config) Site(name string) (int, error) { return c.site(name) }

// SiteOf returns the site an address is in: its own entry, else its
// host's; ok is false if it has neither.
func (c *Config) SiteOf(a stack.Addr) (site int, ok bool) {
	if i, ok := c.addrs[a]; ok {
		return i, true
	}
	if len(c.hosts) == 0 {
		return 0, false
	}
	_, hostport, err := transport.Parse(a)
	if err != nil {
		return 0, false
	}
	host := hostport[:strings.LastIndexByte(hostport, ':')]
	i, ok := c.hosts[host]
	return i, ok
}

// OneWay is the emulated delay of a datagram from site i to site j.
func (c *Config) OneWay(i, j int) time.Duration {
	if i == j {
		return 0
	}
	return time.Duration(c.Matrix.RTT[i][j] / 2 * float64(time.Millisecond))
}

// Sites returns the sites the configuration uses, in matrix order.
func (c *Config) Sites() []int {
	var out []int
	for _, i := range c.addrs {
		out = append(out, i)
	}
	for _, i := range c.hosts {
		out = append(out, i)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Members returns the addresses and hosts assigned to a site, sorted.
func (c *Config) Members(site int) []string {
	var out []string
	for a, i := range c.addrs {
		if i == site {
			out = append(out, string(a))
		}
	}
	for h, i := range c.hosts {
		if i == site {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// Wrap returns a transport.Options.Wrap that delays what a process sends
// from site (a name; "" means the site of the transport's own address)
// to each destination by the one-way delay between the two sites.
func (c *Config) Wrap(site string) func(stack.Transport) (stack.Transport, error) {
	return func(tr stack.Transport) (stack.Transport, error) {
		from, ok := 0, false
		if site != "" {
			i, err := c.site(site)
			if err != nil {
				return nil, fmt.Errorf("wan: this process's site: %w", err)
			}
			from, ok = i, true
		} else {
			from, ok = c.SiteOf(tr.Local())
		}
		if !ok {
			return nil, fmt.Errorf("wan: this process's address %s is in no site of the WAN file: list it (or its host) there, or name its site (--wan-site, STRATA_WAN_SITE)", tr.Local())
		}
		return transport.Delayed(tr, c.delayFrom(from), c.Jitter, c.Seed), nil
	}
}

// cacheMax bounds a delay function's cache of destinations.
const cacheMax = 4096

// delayFrom returns the delay function of a process in site from. Its
// answers are cached per destination: the nodes' sends call it for every
// datagram.
func (c *Config) delayFrom(from int) func(stack.Addr) time.Duration {
	var cache sync.Map // stack.Addr -> time.Duration
	var n atomic.Int64 // entries stored since the last Clear
	return func(to stack.Addr) time.Duration {
		if d, ok := cache.Load(to); ok {
			return d.(time.Duration)
		}
		var d time.Duration
		if j, ok := c.SiteOf(to); ok {
			d = c.OneWay(from, j)
		}
		// Clients dial from fresh ports: the cache is emptied now and
		// then rather than grow with every one a server ever answered.
		if n.Add(1) > cacheMax {
			cache.Clear()
			n.Store(0)
		}
		cache.Store(to, d)
		return d
	}
}
