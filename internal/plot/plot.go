// Package plot renders small line charts to PNG for benchmark reports: a
// grid of panels, each with a few named series, tick labels and a legend.
// It is deliberately minimal (no anti-aliasing, one built-in font).
package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line.
type Series struct {
	Name  string
	X, Y  []float64
	Color color.RGBA
}

// Panel is one chart.
type Panel struct {
	Title  string
	XLabel string
	YLabel string
	LogX   bool // base-2 logarithmic x axis
	Series []Series
}

// Palette has distinguishable colours for series.
var Palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
}

const (
	panelW, panelH = 520, 340
	left, right    = 70, 20
	top, bottom    = 30, 50
)

// Render draws panels in a grid with cols columns and writes a PNG.
func Render(path string, panels []Panel, cols int) error {
	if len(panels) == 0 || cols < 1 {
		return fmt.Errorf("plot: nothing to draw")
	}
	rows := (len(panels) + cols - 1) / cols
	img := image.NewRGBA(image.Rect(0, 0, cols*panelW, rows*panelH))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for i, p := range panels {
		drawPanel(img, image.Pt((i%cols)*panelW, (i/cols)*panelH), p)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("plot: %w", err)
	}
	return f.Close()
}

func drawPanel(img *image.RGBA, o image.Point, p Panel) {
	x0, y0 := o.X+left, o.Y+top
	w, h := panelW-left-right, panelH-top-bottom
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	tx := func(x float64) float64 {
		if p.LogX {
			return math.Log2(x)
		}
		return x
	}
	for _, s := range p.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, tx(s.X[i])), math.Max(xmax, tx(s.X[i]))
			ymax = math.Max(ymax, s.Y[i])
		}
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax = niceCeil(ymax * 1.05)
	px := func(x float64) int { return x0 + int((tx(x)-xmin)/(xmax-xmin)*float64(w)) }
	py := func(y float64) int { return y0 + h - int(y/ymax*float64(h)) }
	grey := color.RGBA{200, 200, 200, 255}
	black := color.RGBA{0, 0, 0, 255}
	// Grid and y ticks.
	for k := 0; k <= 4; k++ {
		y := ymax * float64(k) / 4
		line(img, x0, py(y), x0+w, py(y), grey, 1)
		label(img, o.X+4, py(y)+4, short(y), black)
	}
	// x ticks at the data points of the first series.
	if len(p.Series) > 0 {
		for _, x := range p.Series[0].X {
			line(img, px(x), y0, px(x), y0+h, grey, 1)
			label(img, px(x)-6, y0+h+16, short(x), black)
		}
	}
	line(img, x0, y0+h, x0+w, y0+h, black, 1)
	line(img, x0, y0, x0, y0+h, black, 1)
	label(img, o.X+left, o.Y+18, p.Title, black)
	label(img, x0+w/2-3*len(p.XLabel), y0+h+36, p.XLabel, black)
	label(img, o.X+4, o.Y+14, p.YLabel, black)
	for si, s := range p.Series {
		for i := range s.X {
			if i > 0 {
				line(img, px(s.X[i-1]), py(s.Y[i-1]), px(s.X[i]), py(s.Y[i]), s.Color, 2)
			}
			square(img, px(s.X[i]), py(s.Y[i]), 3, s.Color)
		}
		ly := y0 + 12 + 16*si
		square(img, x0+12, ly-4, 4, s.Color)
		label(img, x0+22, ly, s.Name, black)
	}
}

func niceCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func square(img *image.RGBA, x, y, r int, c color.RGBA) {
	for dx := -r; dx <= r; dx++ {
		for dy := -r; dy <= r; dy++ {
			img.SetRGBA(x+dx, y+dy, c)
		}
	}
}

// line draws with Bresenham's algorithm, thick pixels wide.
func line(img *image.RGBA, x1, y1, x2, y2 int, c color.RGBA, thick int) {
	dx, dy := abs(x2-x1), -abs(y2-y1)
	sx, sy := sign(x2-x1), sign(y2-y1)
	e := dx + dy
	for {
		for t := 0; t < thick; t++ {
			img.SetRGBA(x1+t, y1, c)
			img.SetRGBA(x1, y1+t, c)
		}
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x1 += sx
		}
		if e2 <= dx {
			e += dx
			y1 += sy
		}
	}
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

func sign(a int) int {
	switch {
	case a < 0:
		return -1
	case a > 0:
		return 1
	}
	return 0
}
