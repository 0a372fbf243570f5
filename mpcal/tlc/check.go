package tlc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options says what to check and how.
type Options struct {
	// Spec is the .tla file whose module TLC checks (the module is named
	// after the file). TLC runs in its directory.
	Spec string
	// Config is the model's .cfg file; "" means Spec with .cfg for .tla.
	Config string
	// Workers is TLC's number of worker threads; 0 means 1.
	Workers int
	// NoDeadlock turns deadlock checking off (TLC's -deadlock), as
	// CHECK_DEADLOCK FALSE in the config does.
	NoDeadlock bool
	// Progress, if set, is called (on the caller's goroutine) with each
	// progress report as TLC prints it: once the initial states are
	// computed, then about every minute.
	Progress func(Progress)
	// Output, if set, receives a copy of everything TLC prints on its
	// standard output (the -tool report format).
	Output io.Writer
	// JVMArgs are extra JVM options, such as "-Xmx2g".
	JVMArgs []string

	// started, if set, is called with the JVM's process id (for tests).
	started func(pid int)
}

// Check runs TLC on opt.Spec with opt.Config and returns its verdict. TLC's
// reports are decoded as they come, so that opt.Progress sees them live.
// The error is non-nil when TLC could not be started, when the context
// ended (the JVM is then killed and reaped first), or when TLC stopped
// without a verdict; a violation or a TLC error about the spec is a
// Result.
func Check(ctx context.Context, opt Options) (*Result, error) {
	t, err := findTools()
	if err != nil {
		return nil, err
	}
	spec, err := filepath.Abs(opt.Spec)
	if err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	if !strings.HasSuffix(spec, ".tla") {
		return nil, fmt.Errorf("tlc: %s: the spec must be a .tla file", opt.Spec)
	}
	if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	cfg := opt.Config
	if cfg == "" {
		cfg = strings.TrimSuffix(spec, ".tla") + ".cfg"
	}
	if cfg, err = filepath.Abs(cfg); err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	if _, err := os.Stat(cfg); err != nil {
		return nil, fmt.Errorf("tlc: the model's configuration: %w", err)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = 1
	}

	run, err := os.MkdirTemp("", "strata-tlc-*")
	if err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	defer os.RemoveAll(run)
	tmp := filepath.Join(run, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	args := []string{"-tool", "-workers", strconv.Itoa(workers), "-metadir", filepath.Join(run, "states"), "-config", cfg}
	if opt.NoDeadlock {
		args = append(args, "-deadlock")
	}
	args = append(args, filepath.Base(spec))
	jvm := append([]string{"-XX:+UseParallelGC"}, opt.JVMArgs...)
	cmd := t.command(ctx, filepath.Dir(spec), tmp, jvm, "tlc2.TLC", args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("tlc: %w", err)
	}
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("tlc: starting java: %w", err)
	}
	if opt.started != nil {
		opt.started(cmd.Process.Pid)
	}
	d := &decoder{progress: opt.Progress}
	var src io.Reader = stdout
	if opt.Output != nil {
		src = io.TeeReader(stdout, opt.Output)
	}
	br := bufio.NewReader(src)
	var readErr error
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			d.line(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	if readErr != nil {
		// Stop TLC rather than leave it blocked on a full pipe.
		_ = cmd.Cancel()
	}
	waitErr := cmd.Wait()
	res := d.result()
	res.Wall = time.Since(start)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("tlc: %s: %w", opt.Spec, ctx.Err())
	}
	if readErr != nil {
		return nil, fmt.Errorf("tlc: reading TLC's output: %w", readErr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		res.ExitCode = ee.ExitCode()
	case waitErr != nil:
		return nil, fmt.Errorf("tlc: %w", waitErr)
	}
	if res.Outcome == Unknown {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			msg = ":\n" + msg
		}
		return nil, fmt.Errorf("tlc: %s: TLC ended (exit status %d) without a verdict%s", opt.Spec, res.ExitCode, msg)
	}
	return res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
