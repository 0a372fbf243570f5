package geokv

import (
	"os"
	"path/filepath"
	"strings"

	"strata/bench/kit"
	"strata/internal/plot"
)

// Fig12Series returns, per protocol, the median over rounds of the
// slowest front end's read (or write) p95 per access set, x = the set's
// position in sets (1-based); a set without cells is left out.
func Fig12Series(cells []Cell, sets []AccessSet, write bool) []plot.Series {
	var out []plot.Series
	for i, p := range Protocols {
		s := plot.Series{Name: string(p) + " (slowest front end's p95)", Color: plot.Palette[i%len(plot.Palette)]}
		for x, set := range sets {
			var ys []float64
			for _, c := range cells {
				if c.Set == set.Name && c.Protocol == string(p) {
					ys = append(ys, map[bool]float64{false: c.ReadP95Max, true: c.WriteP95Max}[write])
				}
			}
			if len(ys) > 0 {
				s.X = append(s.X, float64(x+1))
				s.Y = append(s.Y, kit.Median(ys))
			}
		}
		out = append(out, s)
	}
	return out
}

// plotFig12 draws Figure 12's two panels into path.
func plotFig12(path string, cells []Cell, sets []AccessSet) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	names := make([]string, len(sets))
	for i, s := range sets {
		names[i] = s.Name
	}
	x := "access set: " + strings.Join(names, ", ")
	return plot.Render(path, []plot.Panel{
		{Title: "geo-kv Figure 12(a): read p95, emulated WAN, one engine (wor.EC)", XLabel: x, YLabel: "ms", Series: Fig12Series(cells, sets, false)},
		{Title: "geo-kv Figure 12(b): write p95 (Pando with partial delegation)", XLabel: x, YLabel: "ms", Series: Fig12Series(cells, sets, true)},
	}, 2)
}
