package mpcal

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"strata/mpcal/tla"
)

// The markers around the generated PlusCal inside the module's comment,
// as PGo writes them, and around pcal.trans's TLA+ translation.
const (
	BeginPlusCal = `\* BEGIN PLUSCAL TRANSLATION`
	EndPlusCal   = `\* END PLUSCAL TRANSLATION`
)

// File is a TLA+ module holding an MPCal or PlusCal algorithm.
type File struct {
	Name   string
	Src    []byte
	Module *tla.Module
	Alg    *Algorithm

	// For an MPCal file: the byte range [PlusCalStart, PlusCalEnd) between
	// the markers (the text after BEGIN's line up to END's line), or -1
	// when the markers are absent.
	PlusCalStart, PlusCalEnd int
}

var (
	mpcalRe = regexp.MustCompile(`--mpcal\b`)
	algRe   = regexp.MustCompile(`--(fair\s+)?algorithm\b`)
)

// ParseFile parses a TLA+ module and the algorithm in its comments: an
// --mpcal block if there is one (a --algorithm between the PlusCal
// translation markers is then the compiler's earlier output and is not
// parsed), else a --algorithm block.
func ParseFile(name string, src []byte) (*File, error) {
	f := &File{Name: name, Src: src, PlusCalStart: -1, PlusCalEnd: -1}
	start := -1
	if loc := mpcalRe.FindIndex(src); loc != nil {
		start = loc[0]
		b := bytes.Index(src, []byte(BeginPlusCal))
		e := bytes.Index(src, []byte(EndPlusCal))
		switch {
		case b >= 0 && e > b:
			f.PlusCalStart = lineEnd(src, b)
			f.PlusCalEnd = lineStart(src, e)
		case b >= 0 || e >= 0:
			return nil, fmt.Errorf("%s: only one of %q and %q is present", name, BeginPlusCal, EndPlusCal)
		}
	} else if loc := algRe.FindIndex(src); loc != nil {
		start = loc[0]
	} else {
		return nil, fmt.Errorf("%s: no --mpcal or --algorithm block in a comment: %w", name, ErrNoAlgorithm)
	}
	// The algorithm first: in a file cut short inside it, the error the
	// user needs is where the algorithm breaks off, not that the comment
	// around it is unterminated.
	a, err := ParseAlgorithm(name, src, start)
	if err != nil {
		return nil, err
	}
	f.Alg = a
	m, err := tla.ParseModule(name, src)
	if err != nil {
		return nil, err
	}
	f.Module = m
	if f.PlusCalStart >= 0 && f.PlusCalStart < a.End {
		return nil, fmt.Errorf("%s: %q lies inside the --mpcal block", name, BeginPlusCal)
	}
	return f, nil
}

// ErrNoAlgorithm: the module has no algorithm to compile.
var ErrNoAlgorithm = fmt.Errorf("no algorithm")

func lineEnd(src []byte, i int) int {
	for i < len(src) && src[i] != '\n' {
		i++
	}
	if i < len(src) {
		i++
	}
	return i
}

func lineStart(src []byte, i int) int {
	for i > 0 && src[i-1] != '\n' {
		i--
	}
	return i
}

// WithPlusCal returns the file's text with the PlusCal algorithm pcal
// written between the translation markers, which are added after the
// --mpcal block if missing. The rest of the file is unchanged.
func (f *File) WithPlusCal(pcal string) []byte {
	var out bytes.Buffer
	if f.PlusCalStart >= 0 {
		out.Write(f.Src[:f.PlusCalStart])
		out.WriteString(pcal)
		out.Write(f.Src[f.PlusCalEnd:])
		return out.Bytes()
	}
	out.Write(f.Src[:f.Alg.End])
	out.WriteString("\n\n" + BeginPlusCal + "\n")
	out.WriteString(pcal)
	out.WriteString(EndPlusCal + "\n")
	out.Write(f.Src[f.Alg.End:])
	return out.Bytes()
}

// WithAlgorithm returns the file's text with the algorithm block replaced
// by text (for the formatter).
func (f *File) WithAlgorithm(text string) []byte {
	var out bytes.Buffer
	out.Write(f.Src[:f.Alg.Start])
	out.WriteString(strings.TrimRight(text, "\n"))
	out.Write(f.Src[f.Alg.End:])
	return out.Bytes()
}
