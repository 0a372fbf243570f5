package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"strata/mpcal"
	"strata/mpcal/tla"
	"strata/mpcal/tlc"
	"strata/mpcal/tracecheck"
)

// mpcalCmd groups the Modular PlusCal tools.
func mpcalCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mpcal",
		Short: "Modular PlusCal: check, compile to PlusCal and to Go (gogen), model-check with TLC, format",
		Long: `Modular PlusCal (MPCal) models are TLA+ modules with an MPCal algorithm
(--mpcal Name { ... }) in a comment. Strata parses and checks them, compiles
them to PlusCal (written back into the file between the
"\* BEGIN PLUSCAL TRANSLATION" and "\* END PLUSCAL TRANSLATION" markers), and
model-checks them with TLC from the TLA+ tools jar (installed by make setup).
Errors are printed as file:line:col: kind: message. Plain PlusCal algorithms
(--algorithm, C- or P-syntax) are checked and model-checked too.`,
	}
	c.AddCommand(mpcalFmtCmd(), mpcalPcalgenCmd(), mpcalCheckCmd(), mpcalGogenCmd())
	return c
}

func readAlgorithm(path string) (*mpcal.File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return mpcal.ParseFile(path, src)
}

func mpcalFmtCmd() *cobra.Command {
	var write bool
	c := &cobra.Command{
		Use:   "fmt FILE.tla",
		Short: "Print a module's algorithm (or, without one, the module) formatted",
		Long: `If FILE.tla holds an MPCal or PlusCal algorithm, prints the file with the
algorithm block reformatted (C-syntax, two-space indentation; the comments
inside the block are not kept) and the rest of the file unchanged. Without
an algorithm, prints the whole TLA+ module as Strata's printer writes it
(comments are not kept). Either way the output parses back to the same
syntax tree.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			var out string
			f, err := mpcal.ParseFile(args[0], src)
			switch {
			case errors.Is(err, mpcal.ErrNoAlgorithm):
				m, err := tla.ParseModule(args[0], src)
				if err != nil {
					return err
				}
				out = tla.Format(m)
			case err != nil:
				return err
			default:
				out = string(f.WithAlgorithm(mpcal.FormatAlgorithm(f.Alg)))
			}
			if write {
				return os.WriteFile(args[0], []byte(out), 0o644)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result back to FILE.tla")
	return c
}

func mpcalPcalgenCmd() *cobra.Command {
	var stdout bool
	c := &cobra.Command{
		Use:   "pcalgen FILE.tla",
		Short: "Check an MPCal model and write its PlusCal translation into the file",
		Long: `Parses and checks the --mpcal algorithm in FILE.tla and compiles it to
PlusCal: each archetype instance becomes a process with the archetype's
body inlined, mapping macros inlined at each resource read and write,
MPCal procedures specialised per ref binding. The PlusCal is written
between the "\* BEGIN PLUSCAL TRANSLATION" and "\* END PLUSCAL TRANSLATION"
markers (added after the MPCal block if missing); the MPCal block and the
rest of the file are left untouched, so the TLA+ Toolbox or pcal.trans
can translate it further. With --stdout the PlusCal is printed instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := readAlgorithm(args[0])
			if err != nil {
				return err
			}
			out, err := mpcal.Compile(f)
			if err != nil {
				return err
			}
			if stdout {
				_, err = fmt.Fprint(cmd.OutOrStdout(), out.PlusCal())
				return err
			}
			return os.WriteFile(args[0], f.WithPlusCal(out.PlusCal()), 0o644)
		},
	}
	c.Flags().BoolVar(&stdout, "stdout", false, "print the PlusCal instead of writing it into FILE.tla")
	return c
}

func mpcalCheckCmd() *cobra.Command {
	var cfg string
	var workers int
	var keep bool
	var trace, traceMap string
	c := &cobra.Command{
		Use:   "check FILE.tla",
		Short: "Compile an MPCal (or PlusCal) model and model-check it with TLC",
		Long: `Checks and compiles the algorithm in FILE.tla (MPCal to PlusCal), then, in a
scratch directory (FILE.tla itself is not modified), runs the PlusCal
translator and TLC from the TLA+ tools jar with FILE.cfg (or --config).
TLC's progress is shown on stderr; the summary gives the states found,
the distinct states, the depth and the time, and a counterexample is
printed step by step with the MPCal source line of each step's label.
Exit status 1 when TLC finds a violation or an error.

With --trace FILE, TLC checks a trace of a run against the model instead
(trace validation): FILE holds one JSON object a line,
{"event":"name","action":"Lbl(2)","state":{"pc[2]":"\"cs\""}}, each event
one step of the model (of the named action if given, else of Next) after
which each observed expression has the value given (TLA+ values). FILE.tla
may also be a plain TLA+ module (Init and Next). --trace-map gives a JSON
mapping {"name":{"action":"...","observes":["var",...]}}. Prints "trace
accepted (N events)", or the first event no step allows (exit status 1).
See docs/mpcal.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if trace != "" {
				return runMpcalTrace(cmd, args[0], cfg, trace, traceMap, workers, keep)
			}
			if traceMap != "" {
				return errors.New("--trace-map needs --trace")
			}
			return runMpcalCheck(cmd, args[0], cfg, workers, keep)
		},
	}
	c.Flags().StringVar(&cfg, "config", "", "TLC model configuration (default: FILE.cfg)")
	c.Flags().IntVar(&workers, "workers", 1, "TLC worker threads")
	c.Flags().BoolVar(&keep, "keep", false, "keep the scratch directory (its path is printed)")
	c.Flags().StringVar(&trace, "trace", "", "validate this trace (JSON lines) against the model instead of model-checking it")
	c.Flags().StringVar(&traceMap, "trace-map", "", "with --trace: a JSON mapping of event names to actions and observed variables")
	return c
}

// runMpcalTrace validates a trace file against the model (trace
// validation, mpcal/tracecheck).
func runMpcalTrace(cmd *cobra.Command, path, cfg, trace, traceMap string, workers int, keep bool) error {
	if cfg == "" {
		cfg = strings.TrimSuffix(path, ".tla") + ".cfg"
	}
	cfgText, err := os.ReadFile(cfg)
	if err != nil {
		return fmt.Errorf("no model configuration: %w (give one with --config)", err)
	}
	events, err := tracecheck.ReadTraceFile(trace)
	if err != nil {
		return err
	}
	opt := tracecheck.Options{Config: cfgText, Workers: workers}
	if traceMap != "" {
		if opt.Mapping, err = tracecheck.ReadMapping(traceMap); err != nil {
			return err
		}
	}
	if keep {
		dir, err := os.MkdirTemp("", "strata-trace-")
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "scratch directory: %s\n", dir)
		opt.Dir = dir
	}
	res, err := tracecheck.Check(cmd.Context(), path, events, opt)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), res)
	if !res.Accepted {
		return fmt.Errorf("trace %s: rejected at event %d", trace, res.Index)
	}
	return nil
}

func runMpcalCheck(cmd *cobra.Command, path, cfg string, workers int, keep bool) error {
	f, err := readAlgorithm(path)
	if err != nil {
		return err
	}
	if cfg == "" {
		cfg = strings.TrimSuffix(path, ".tla") + ".cfg"
	}
	cfgText, err := os.ReadFile(cfg)
	if err != nil {
		return fmt.Errorf("no model configuration: %w (give one with --config)", err)
	}
	dir, err := os.MkdirTemp("", "strata-mpcal-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(cmd.ErrOrStderr(), "scratch directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	stderr := cmd.ErrOrStderr()
	res, out, err := mpcal.ModelCheck(cmd.Context(), f, cfgText, dir, tlc.Options{Workers: workers, Progress: func(p tlc.Progress) {
		fmt.Fprintf(stderr, "tlc: %d states generated, %d distinct, %d on the queue, depth %d\n", p.Generated, p.Distinct, p.Queue, p.Depth)
	}})
	if err != nil {
		return err
	}
	mapper := tlc.LabelMapper(f.Src)
	if out != nil {
		mapper = sourceMapper(f, out)
	}
	if err := tlc.Render(cmd.OutOrStdout(), res, mapper); err != nil {
		return err
	}
	if res.Outcome != tlc.OK {
		return fmt.Errorf("model check of %s: %s", path, res.Outcome)
	}
	return nil
}

// sourceMapper shows, for a step of a trace, the MPCal source line of the
// label the step executed.
func sourceMapper(f *mpcal.File, out *mpcal.Output) tlc.Mapper {
	lines := strings.Split(string(f.Src), "\n")
	return func(s tlc.Step) string {
		pos, ok := out.Labels[s.Action]
		if !ok || pos.Line < 1 || pos.Line > len(lines) {
			return ""
		}
		text := strings.TrimSpace(lines[pos.Line-1])
		// A label alone on its line: show the statement under it too.
		if sp := out.Stmts[s.Action]; sp.Line > pos.Line && sp.Line <= len(lines) {
			text += " " + strings.TrimSpace(lines[sp.Line-1])
		}
		return fmt.Sprintf("%s:%d: %s  (%s)", f.Name, pos.Line, text, out.Origin[s.Action])
	}
}
