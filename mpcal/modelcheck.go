package mpcal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"strata/mpcal/tlc"
)

// ModelCheck compiles the file's algorithm (MPCal to PlusCal; a plain
// PlusCal algorithm is checked and kept), and in dir (a scratch directory
// the caller owns) writes the module, the configuration cfg and the user
// modules beside the file that it extends, runs the PlusCal translator on
// it and then TLC with opt (opt.Spec is set here). It returns TLC's
// result and, for MPCal, the compiler's output (for mapping a trace back
// to the source). The file on disk is not modified.
func ModelCheck(ctx context.Context, f *File, cfg []byte, dir string, opt tlc.Options) (*tlc.Result, *Output, error) {
	spec, out, err := Translate(ctx, f, dir)
	if err != nil {
		return nil, out, err
	}
	if err := os.WriteFile(strings.TrimSuffix(spec, ".tla")+".cfg", cfg, 0o644); err != nil {
		return nil, nil, err
	}
	opt.Spec, opt.Config = spec, ""
	res, err := tlc.Check(ctx, opt)
	return res, out, err
}

// Translate is the first half of ModelCheck: it compiles the file's
// algorithm (MPCal to PlusCal; a plain PlusCal algorithm is checked and
// kept), writes the module and the user modules beside the file that it
// extends into dir, and runs the PlusCal translator there. It returns the
// path of the translated module in dir (a complete TLA+ module TLC can
// check) and, for MPCal, the compiler's output.
func Translate(ctx context.Context, f *File, dir string) (spec string, out *Output, err error) {
	text := f.Src
	if f.Alg.MPCal {
		if out, err = Compile(f); err != nil { // Compile checks first
			return "", nil, err
		}
		text = f.WithPlusCal(out.PlusCal())
	} else if err := Check(f); err != nil {
		return "", nil, err
	}
	spec = filepath.Join(dir, filepath.Base(f.Name))
	if err := os.WriteFile(spec, text, 0o644); err != nil {
		return "", nil, err
	}
	for _, m := range f.Module.Extends {
		if src, err := os.ReadFile(filepath.Join(filepath.Dir(f.Name), m+".tla")); err == nil {
			if err := os.WriteFile(filepath.Join(dir, m+".tla"), src, 0o644); err != nil {
				return "", nil, err
			}
		}
	}
	if err := tlc.Translate(ctx, spec); err != nil {
		if f.Alg.MPCal {
			return "", out, fmt.Errorf("the PlusCal translator rejected the generated PlusCal (a compiler bug): %w", err)
		}
		return "", nil, err
	}
	return spec, out, nil
}
