package geo

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Matrix is a round-trip latency matrix between named regions.
// RTT[i][j] is the round trip, in milliseconds, of a request issued at
// region i and served at region j; it need not equal RTT[j][i]. A pair
// that was not measured is +Inf (unreachable). RTT[i][i] is 0.
type Matrix struct {
	Names []string
	RTT   [][]float64
	index map[string]int
}

// Index returns the position of a region name, or -1.
func (m *Matrix) Index(name string) int {
	if m.index == nil {
		m.index = make(map[string]int, len(m.Names))
		for i, n := range m.Names {
			m.index[n] = i
		}
	}
	if i, ok := m.index[name]; ok {
		return i
	}
	return -1
}

// NewMatrix builds a matrix from names and a square table of round trips in
// milliseconds (+Inf for unreachable pairs). It copies its inputs.
func NewMatrix(names []string, rtt [][]float64) (*Matrix, error) {
	n := len(names)
	if n == 0 {
		return nil, fmt.Errorf("geo: empty matrix")
	}
	if len(rtt) != n {
		return nil, fmt.Errorf("geo: %d names but %d rows", n, len(rtt))
	}
	m := &Matrix{Names: append([]string(nil), names...), RTT: make([][]float64, n)}
	for i := range rtt {
		if len(rtt[i]) != n {
			return nil, fmt.Errorf("geo: row %d has %d entries, want %d", i, len(rtt[i]), n)
		}
		m.RTT[i] = append([]float64(nil), rtt[i]...)
		for j, v := range m.RTT[i] {
			if math.IsNaN(v) || v < 0 {
				return nil, fmt.Errorf("geo: bad latency %v from %s to %s", v, names[i], names[j])
			}
		}
		m.RTT[i][i] = 0
	}
	for i, a := range m.Names {
		if a == "" || strings.ContainsAny(a, " \t,") {
			return nil, fmt.Errorf("geo: bad region name %q", a)
		}
		if j := m.Index(a); j != i {
			return nil, fmt.Errorf("geo: region %q listed twice", a)
		}
	}
	return m, nil
}

// LoadMatrix reads a matrix in the format of the Pando paper's data files:
// index lists "<region> <index>" per line, latencies lists
// "<from-index> <to-index> <GET|PUT> <percentile> <milliseconds>". The
// median (percentile 50) GET latency is used, PUT when GET is absent. Pairs
// absent from the file are unreachable. Lines starting with '#' are
// comments.
func LoadMatrix(index, latencies io.Reader) (*Matrix, error) {
	var names []string
	pos := map[int]int{}
	sc := bufio.NewScanner(index)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("geo: index map line %d: want \"<region> <index>\", got %q", ln, line)
		}
		id, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("geo: index map line %d: %w", ln, err)
		}
		if _, dup := pos[id]; dup {
			return nil, fmt.Errorf("geo: index map line %d: index %d used twice", ln, id)
		}
		pos[id] = len(names)
		names = append(names, f[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("geo: index map: %w", err)
	}
	n := len(names)
	if n == 0 {
		return nil, fmt.Errorf("geo: index map lists no region")
	}
	rtt := make([][]float64, n)
	put := make([][]float64, n)
	for i := range rtt {
		rtt[i] = make([]float64, n)
		put[i] = make([]float64, n)
		for j := range rtt[i] {
			rtt[i][j], put[i][j] = math.Inf(1), math.Inf(1)
		}
	}
	sc = bufio.NewScanner(latencies)
	seen := 0
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			return nil, fmt.Errorf("geo: latency line %d: want 5 fields, got %q", ln, line)
		}
		a, err1 := strconv.Atoi(f[0])
		b, err2 := strconv.Atoi(f[1])
		v, err3 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("geo: latency line %d: bad number in %q", ln, line)
		}
		i, ok1 := pos[a]
		j, ok2 := pos[b]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("geo: latency line %d: index not in the index map: %q", ln, line)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("geo: latency line %d: bad latency %q", ln, f[4])
		}
		if f[3] != "50" {
			continue
		}
		switch f[2] {
		case "GET":
			rtt[i][j] = v
		case "PUT":
			put[i][j] = v
		default:
			return nil, fmt.Errorf("geo: latency line %d: want GET or PUT, got %q", ln, f[2])
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("geo: latencies: %w", err)
	}
	if seen == 0 {
		return nil, fmt.Errorf("geo: no median (percentile 50) latency in the file")
	}
	for i := range rtt {
		for j := range rtt[i] {
			if math.IsInf(rtt[i][j], 1) {
				rtt[i][j] = put[i][j]
			}
		}
	}
	return NewMatrix(names, rtt)
}

// LoadMatrixDir loads loc-index-map.txt and net-only-latency.txt from dir.
func LoadMatrixDir(dir string) (*Matrix, error) {
	idx, err := os.Open(filepath.Join(dir, "loc-index-map.txt"))
	if err != nil {
		return nil, fmt.Errorf("geo: %w", err)
	}
	defer idx.Close()
	lat, err := os.Open(filepath.Join(dir, "net-only-latency.txt"))
	if err != nil {
		return nil, fmt.Errorf("geo: %w", err)
	}
	defer lat.Close()
	m, err := LoadMatrix(idx, lat)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return m, nil
}

//go:embed data/loc-index-map.txt data/net-only-latency.txt
var dataFS embed.FS

var (
	defaultOnce sync.Once
	defaultM    *Matrix
)

// Default returns the embedded matrix of 46 regions measured for the Pando
// paper (see geo/data/SOURCE.md). Callers must not modify it.
func Default() *Matrix {
	defaultOnce.Do(func() {
		idx, err1 := dataFS.Open("data/loc-index-map.txt")
		lat, err2 := dataFS.Open("data/net-only-latency.txt")
		if err1 != nil || err2 != nil {
			panic("geo: embedded data missing")
		}
		m, err := LoadMatrix(idx, lat)
		if err != nil {
			panic("geo: embedded data: " + err.Error())
		}
		m.Index("") // build the index now so that concurrent readers never write
		defaultM = m
	})
	return defaultM
}

// AzureRegions returns the names in m that start with "az_" (the paper's
// candidate data sites), in matrix order.
func AzureRegions(m *Matrix) []string {
	var out []string
	for _, n := range m.Names {
		if strings.HasPrefix(n, "az_") {
			out = append(out, n)
		}
	}
	return out
}
