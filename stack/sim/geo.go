package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"strata/stack"
)

// Geo file names inside the directory LoadGeo reads.
const (
	GeoSitesFile   = "loc-index-map.txt"
	GeoLatencyFile = "net-only-latency.txt"
)

// DefaultSameSite is the one-way delay LoadGeo sets for endpoints placed
// at the same site: a data-center round trip of half a millisecond.
const DefaultSameSite = 250 * time.Microsecond

// Geo holds measured round-trip times between sites (cloud regions).
type Geo struct {
	// SameSite is the one-way delay ApplyGeo uses between two endpoints
	// placed at the same site (the files measure 0 there).
	SameSite time.Duration

	sites []string       // ordered by index
	index map[string]int // site name → file index
	rtt   map[[2]int]time.Duration
}

// LoadGeo reads dir/loc-index-map.txt (lines "<provider>_<region>
// <index>") and dir/net-only-latency.txt (lines "<from-index> <to-index>
// <GET|PUT> <percentile> <milliseconds>", round-trip times). It keeps the
// GET medians (percentile 50); PUT lines and other percentiles are checked
// for syntax and otherwise ignored. Blank lines and lines starting with
// '#' are skipped. Errors name the file and line.
func LoadGeo(dir string) (*Geo, error) {
	sf, err := os.Open(filepath.Join(dir, GeoSitesFile))
	if err != nil {
		return nil, fmt.Errorf("sim: geo: %w", err)
	}
	defer sf.Close()
	lf, err := os.Open(filepath.Join(dir, GeoLatencyFile))
	if err != nil {
		return nil, fmt.Errorf("sim: geo: %w", err)
	}
	defer lf.Close()
	return parseGeo(sf, sf.Name(), lf, lf.Name())
}

// ParseGeo is LoadGeo on readers holding the two files' contents.
func ParseGeo(sites, latency io.Reader) (*Geo, error) {
	return parseGeo(sites, GeoSitesFile, latency, GeoLatencyFile)
}

func parseGeo(sites io.Reader, sitesName string, latency io.Reader, latencyName string) (*Geo, error) {
	g := &Geo{SameSite: DefaultSameSite, index: map[string]int{}, rtt: map[[2]int]time.Duration{}}
	byIndex := map[int]string{}
	err := eachLine(sites, sitesName, func(f []string) error {
		if len(f) != 2 {
			return fmt.Errorf("want \"<provider>_<region> <index>\", got %d fields", len(f))
		}
		i, err := strconv.Atoi(f[1])
		if err != nil || i < 0 {
			return fmt.Errorf("bad index %q", f[1])
		}
		if _, dup := g.index[f[0]]; dup {
			return fmt.Errorf("site %q listed twice", f[0])
		}
		if other, dup := byIndex[i]; dup {
			return fmt.Errorf("index %d already used by %q", i, other)
		}
		g.index[f[0]], byIndex[i] = i, f[0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(g.index) == 0 {
		return nil, fmt.Errorf("sim: geo: %s: no sites", sitesName)
	}
	idx := make([]int, 0, len(byIndex))
	for i := range byIndex {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		g.sites = append(g.sites, byIndex[i])
	}

	err = eachLine(latency, latencyName, func(f []string) error {
		if len(f) != 5 {
			return fmt.Errorf("want \"<from> <to> <GET|PUT> <percentile> <milliseconds>\", got %d fields", len(f))
		}
		var ends [2]int
		for k := range ends {
			i, err := strconv.Atoi(f[k])
			if err != nil {
				return fmt.Errorf("bad site index %q", f[k])
			}
			if _, ok := byIndex[i]; !ok {
				return fmt.Errorf("site index %d not in %s", i, sitesName)
			}
			ends[k] = i
		}
		if f[2] != "GET" && f[2] != "PUT" {
			return fmt.Errorf("want GET or PUT, got %q", f[2])
		}
		pct, err := strconv.ParseFloat(f[3], 64)
		if err != nil || !(pct >= 0 && pct <= 100) {
			return fmt.Errorf("bad percentile %q", f[3])
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) || ms > 1e9 {
			return fmt.Errorf("bad latency %q (milliseconds, non-negative)", f[4])
		}
		if f[2] != "GET" || pct != 50 {
			return nil
		}
		if _, dup := g.rtt[ends]; dup {
			return fmt.Errorf("GET median from %d to %d listed twice", ends[0], ends[1])
		}
		g.rtt[ends] = time.Duration(math.Round(ms * float64(time.Millisecond)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// eachLine calls f with the fields of every non-blank, non-comment line,
// and prefixes its error with the file name and line number.
func eachLine(r io.Reader, name string, f func([]string) error) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if err := f(strings.Fields(s)); err != nil {
			return fmt.Errorf("sim: geo: %s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sim: geo: %s: %w", name, err)
	}
	return nil
}

// Sites returns the site names in the order of their file indices.
func (g *Geo) Sites() []string { return slices.Clone(g.sites) }

// RTT returns the median round-trip time of a request issued at site a
// and served at site b. The data set is not symmetric and misses a few
// pairs: when a→b is missing, b→a stands in; when both are missing (or a
// site is unknown), ok is false. A site's RTT to itself is 0 when not
// listed.
func (g *Geo) RTT(a, b string) (rtt time.Duration, ok bool) {
	ia, oka := g.index[a]
	ib, okb := g.index[b]
	if !oka || !okb {
		return 0, false
	}
	if d, ok := g.rtt[[2]int{ia, ib}]; ok {
		return d, true
	}
	if d, ok := g.rtt[[2]int{ib, ia}]; ok {
		return d, true
	}
	if ia == ib {
		return 0, true
	}
	return 0, false
}

// ApplyGeo sets the delay of every directed link between two distinct
// placed endpoints: RTT(site(from), site(to))/2, or g.SameSite when both
// are at the same site. Because the measurements are asymmetric, the two
// directions of a pair may differ; a round trip then costs the mean of the
// two measured RTTs. Each link keeps its other parameters (its own setting
// or the default at the time of the call). Nothing changes if a placed
// site is unknown or a pair has no measurement in either direction; the
// error lists them.
func (n *Net) ApplyGeo(g *Geo, placement map[stack.Addr]string) error {
	if g.SameSite < 0 {
		return fmt.Errorf("sim: ApplyGeo: negative SameSite %v", g.SameSite)
	}
	addrs := make([]stack.Addr, 0, len(placement))
	for a := range placement {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs) // deterministic error messages and link order
	var errs []error
	for _, a := range addrs {
		if _, ok := g.index[placement[a]]; !ok {
			errs = append(errs, fmt.Errorf("%s: unknown site %q", a, placement[a]))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sim: ApplyGeo: %w", errors.Join(errs...))
	}
	type set struct {
		p pair
		d time.Duration
	}
	var sets []set
	for _, a := range addrs {
		for _, b := range addrs {
			if a == b {
				continue
			}
			sa, sb := placement[a], placement[b]
			if sa == sb {
				sets = append(sets, set{pair{a, b}, g.SameSite})
				continue
			}
			rtt, ok := g.RTT(sa, sb)
			if !ok {
				errs = append(errs, fmt.Errorf("%s (%s) → %s (%s): no measurement", a, sa, b, sb))
				continue
			}
			sets = append(sets, set{pair{a, b}, rtt / 2})
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sim: ApplyGeo: %w", errors.Join(errs...))
	}
	for _, s := range sets {
		l := n.LinkOf(s.p.from, s.p.to)
		l.Delay = s.d
		n.SetLink(s.p.from, s.p.to, l)
	}
	return nil
}
