package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"strata/bench/kit"
)

// Flag helpers every benchmark command shares.

// quickDefaults gives the flags a --quick run changes their reduced
// values, unless the user set them.
func quickDefaults(cmd *cobra.Command, values map[string]string) error {
	for name, v := range values {
		if cmd.Flags().Changed(name) {
			continue
		}
		if err := cmd.Flags().Set(name, v); err != nil {
			return fmt.Errorf("--quick: --%s: %w", name, err)
		}
	}
	return nil
}

func parseInts(flag, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("%s: %q is not a number in [%d,%d]", flag, f, lo, hi)
		}
		out = append(out, v)
	}
	return out, nil
}

// stdinContext ends when stdin closes: a server started by the harness
// stops when the harness goes away.
func stdinContext(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx
}

// failedCells is the error a benchmark command exits with once it has
// printed its report: err if the run returned one, else an error when any
// cell (either system's) failed mid-run, so that a report missing figures
// never exits 0 looking complete.
func failedCells(rep *kit.Report, err error) error {
	if err == nil && rep != nil && len(rep.Failures) > 0 {
		err = fmt.Errorf("%d cell(s) failed (listed under FAILED cells)", len(rep.Failures))
	}
	return err
}

// printReport prints a benchmark's report (as JSON with asJSON, else with
// print) and returns failedCells' error for it.
func printReport(cmd *cobra.Command, rep *kit.Report, asJSON bool, print func(io.Writer, *kit.Report)) error {
	if asJSON {
		if err := rep.WriteJSON(cmd.OutOrStdout()); err != nil {
			return err
		}
	} else {
		print(cmd.OutOrStdout(), rep)
	}
	return failedCells(rep, nil)
}
