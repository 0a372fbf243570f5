package plot

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// Render writes a decodable PNG of the grid's size with each series'
// colour on it, and refuses an empty chart.
func TestRender(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.png")
	ps := []Panel{{Title: "t", XLabel: "x", YLabel: "y", LogX: true, Series: []Series{
		{Name: "a", X: []float64{1, 2, 4, 8}, Y: []float64{10, 20, 40, 80}, Color: Palette[0]},
		{Name: "b", X: []float64{1, 2, 4, 8}, Y: []float64{5, 5, 6, 7}, Color: Palette[1]},
	}}, {Title: "u", Series: []Series{{Name: "c", X: []float64{0}, Y: []float64{0}, Color: Palette[2]}}}}
	if err := Render(path, ps, 2); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 2*panelW || b.Dy() != panelH {
		t.Fatalf("image is %v, want %dx%d", b, 2*panelW, panelH)
	}
	found := map[int]bool{}
	for y := 0; y < panelH; y++ {
		for x := 0; x < 2*panelW; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			for i, c := range Palette[:3] {
				if r>>8 == uint32(c.R) && g>>8 == uint32(c.G) && b>>8 == uint32(c.B) {
					found[i] = true
				}
			}
		}
	}
	for i := 0; i < 3; i++ {
		if !found[i] {
			t.Errorf("series colour %d not drawn", i)
		}
	}
	if err := Render(path, nil, 2); err == nil {
		t.Error("empty chart rendered")
	}
}
