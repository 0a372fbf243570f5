package geo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Peer runs highs_plan.py with a Python interpreter that has highspy.
type Peer struct {
	Python string // the venv's python
	Script string // bench/geo/highs_plan.py
}

// FindPeerDir returns the folder holding highs_plan.py and requirements.txt:
// dir if given, else bench/geo under the working directory or one of its
// parents.
func FindPeerDir(dir string) (string, error) {
	ok := func(d string) bool {
		for _, f := range []string{"highs_plan.py", "requirements.txt"} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				return false
			}
		}
		return true
	}
	if dir != "" {
		if !ok(dir) {
			return "", fmt.Errorf("bench geo: %s lacks highs_plan.py or requirements.txt", dir)
		}
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("bench geo: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "bench", "geo"); ok(c) {
			return c, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("bench geo: no bench/geo/highs_plan.py under %s or its parents (use --peer-dir)", wd)
		}
	}
}

// SetupVenv makes sure venvDir is a Python virtual environment with the
// packages of peerDir/requirements.txt and returns the peer. It creates the
// venv with python3 -m venv (installing Debian's python3-venv with apt-get
// if the module is missing) and runs pip install -r; a stamp file holding
// the requirements skips both when nothing changed. Progress goes to log.
func SetupVenv(ctx context.Context, venvDir, peerDir string, log io.Writer) (Peer, error) {
	req := filepath.Join(peerDir, "requirements.txt")
	want, err := os.ReadFile(req)
	if err != nil {
		return Peer{}, fmt.Errorf("bench geo: %w", err)
	}
	abs, err := filepath.Abs(venvDir)
	if err != nil {
		return Peer{}, fmt.Errorf("bench geo: %w", err)
	}
	peer := Peer{Python: filepath.Join(abs, "bin", "python"), Script: filepath.Join(peerDir, "highs_plan.py")}
	stamp := filepath.Join(abs, "strata-requirements.txt")
	if got, err := os.ReadFile(stamp); err == nil && bytes.Equal(got, want) {
		if err := run(ctx, io.Discard, peer.Python, "-c", "import highspy"); err == nil {
			return peer, nil
		}
	}
	if _, err := os.Stat(peer.Python); err != nil {
		fmt.Fprintf(log, "creating the Python venv %s\n", abs)
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return Peer{}, fmt.Errorf("bench geo: %w", err)
		}
		if err := run(ctx, log, "python3", "-m", "venv", abs); err != nil {
			// Debian splits venv/ensurepip into python3-venv.
			fmt.Fprintf(log, "python3 -m venv failed (%v); installing python3-venv with apt-get\n", err)
			os.RemoveAll(abs)
			if err := run(ctx, log, "apt-get", "update", "-q"); err != nil {
				return Peer{}, fmt.Errorf("bench geo: apt-get update: %w", err)
			}
			if err := run(ctx, log, "apt-get", "install", "-y", "-q", "python3-venv"); err != nil {
				return Peer{}, fmt.Errorf("bench geo: apt-get install python3-venv: %w", err)
			}
			if err := run(ctx, log, "python3", "-m", "venv", abs); err != nil {
				return Peer{}, fmt.Errorf("bench geo: python3 -m venv %s: %w", abs, err)
			}
		}
	}
	fmt.Fprintf(log, "pip install -r %s\n", req)
	if err := run(ctx, log, peer.Python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", req); err != nil {
		return Peer{}, fmt.Errorf("bench geo: pip install -r %s: %w", req, err)
	}
	if err := run(ctx, log, peer.Python, "-c", "import highspy"); err != nil {
		return Peer{}, fmt.Errorf("bench geo: highspy does not import after pip install: %w", err)
	}
	if err := os.WriteFile(stamp, want, 0o644); err != nil {
		return Peer{}, fmt.Errorf("bench geo: %w", err)
	}
	return peer, nil
}

func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	c := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if err != nil {
		fmt.Fprint(log, tail(out.String(), 2000))
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// PeerVersions are the peer's versions, for the report's config.
type PeerVersions struct{ Highspy, Python string }

// Versions asks the venv's Python for its version and highspy's.
func (p Peer) Versions(ctx context.Context) (PeerVersions, error) {
	out, err := exec.CommandContext(ctx, p.Python, "-c",
		"import sys, importlib.metadata as m; print(m.version('highspy')); print(sys.version.split()[0])").Output()
	if err != nil {
		return PeerVersions{}, fmt.Errorf("bench geo: highspy's version from %s: %w", p.Python, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return PeerVersions{}, fmt.Errorf("bench geo: highspy's version from %s: %q", p.Python, out)
	}
	return PeerVersions{Highspy: lines[0], Python: lines[1]}, nil
}

// Solve runs the script on one instance and returns its answer and the
// process's wall time (Python start, model building and the solve).
func (p Peer) Solve(ctx context.Context, in Instance) (Answer, time.Duration, error) {
	var stdin, stdout, stderr bytes.Buffer
	if err := in.Encode(&stdin); err != nil {
		return Answer{}, 0, err
	}
	c := exec.CommandContext(ctx, p.Python, p.Script)
	c.Stdin, c.Stdout, c.Stderr = &stdin, &stdout, &stderr
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, wall, ctx.Err()
		}
		return Answer{}, wall, fmt.Errorf("bench geo: highs_plan.py on %s: %w\n%s", in.Name, err, tail(stderr.String(), 4000))
	}
	a, err := DecodeAnswer(&stdout)
	if err != nil {
		return Answer{}, wall, fmt.Errorf("%w (instance %s; stderr: %s)", err, in.Name, tail(stderr.String(), 2000))
	}
	return a, wall, nil
}
