package kit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"strata/internal/procgroup"
)

// Cmd describes a child process of a benchmark: a server that prints a
// ready line and runs until stopped (Start), or a worker that runs to
// completion and prints its result (Output).
type Cmd struct {
	Name string   // in errors and progress lines
	Argv []string // program and arguments
	Dir  string
	Env  []string // added to this process's environment
	// Pin runs the process on CPU only (util-linux taskset), so that a Go
	// program sizes GOMAXPROCS to 1 and a JVM its pools to one CPU.
	Pin bool
	CPU int
	// Stdin keeps a pipe to the child's stdin open until Stop closes it
	// (servers started by a harness stop when it goes away).
	Stdin bool
	// Ready, if not nil, is the ready line: Start returns once a line of
	// the child's stdout satisfies it (the line is Proc.Ready), or fails
	// when the child exits or ReadyTimeout (default two minutes) passes.
	Ready        func(line string) bool
	ReadyTimeout time.Duration
	// Stdout and Stderr also receive the child's output (after the ready
	// line for stdout); the last lines are always kept for errors (Tail).
	Stdout, Stderr io.Writer
	// StopSignal asks the child to exit cleanly (default SIGTERM); after
	// Grace (default 15 s) its process group is killed.
	StopSignal os.Signal
	Grace      time.Duration
}

// Proc is a running child process in a process group of its own:
// cancelling the context Start was given, or Stop, ends it and everything
// it started.
type Proc struct {
	// Ready is the ready line the child printed.
	Ready string
	c     Cmd
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tail  *tailBuffer
	// exited is closed once cmd.Wait returned; waitErr is its result.
	exited  chan struct{}
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// Pinned returns argv prefixed to run on CPU cpu only (taskset), or argv
// itself for cpu < 0.
func Pinned(cpu int, argv []string) ([]string, error) {
	if cpu < 0 {
		return argv, nil
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("pinning to a CPU needs taskset (Debian util-linux): %w", err)
	}
	return append([]string{ts, "-c", fmt.Sprint(cpu)}, argv...), nil
}

func (c *Cmd) command(ctx context.Context) (*exec.Cmd, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("kit: empty command")
	}
	argv := c.Argv
	if c.Pin {
		var err error
		if argv, err = Pinned(c.CPU, argv); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	procgroup.Own(cmd)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	return cmd, nil
}

func (c *Cmd) name() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Argv[0]
}

// Start starts the child and waits for its ready line (if c.Ready is set).
func Start(ctx context.Context, c Cmd) (*Proc, error) {
	cmd, err := c.command(ctx)
	if err != nil {
		return nil, err
	}
	p := &Proc{c: c, cmd: cmd, tail: &tailBuffer{}, exited: make(chan struct{})}
	if c.Stdin {
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	cmd.Stderr = writers(p.tail, c.Stderr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.name(), err)
	}
	ready := make(chan string, 1)
	go func() {
		// The pipe is read to its end before Wait, as os/exec requires.
		r := bufio.NewReader(out)
		waiting := c.Ready != nil
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				if waiting && c.Ready(strings.TrimRight(line, "\r\n")) {
					waiting = false
					ready <- strings.TrimRight(line, "\r\n")
				} else {
					p.tail.Write([]byte(line))
					if c.Stdout != nil && !waiting {
						c.Stdout.Write([]byte(line))
					}
				}
			}
			if err != nil {
				break
			}
		}
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if c.Ready == nil {
		return p, nil
	}
	timeout := c.ReadyTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case p.Ready = <-ready:
		return p, nil
	case <-p.exited:
		select {
		case p.Ready = <-ready: // printed its line and exited at once
			return p, nil
		default:
		}
		return nil, fmt.Errorf("%s exited before it was ready (%v):\n%s", c.name(), p.waitErr, p.Tail(30))
	case <-t.C:
		p.Stop()
		return nil, fmt.Errorf("%s not ready after %v:\n%s", c.name(), timeout, p.Tail(30))
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
}

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdin is the pipe to the child's stdin (nil unless Cmd.Stdin).
func (p *Proc) Stdin() io.Writer { return p.stdin }

// Exited is closed when the child has exited; Err then says how.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is the child's exit status once Exited is closed.
func (p *Proc) Err() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
		return nil
	}
}

// Tail returns the last n lines the child printed (both streams).
func (p *Proc) Tail(n int) string { return Tail(p.tail.String(), n) }

// Signal sends sig to the child itself.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop closes the child's stdin, sends its stop signal, waits up to its
// grace period, then kills its process group. It is safe to call more than
// once and returns nil for a child that exited by a signal Stop sent.
func (p *Proc) Stop() error {
	p.stopOnce.Do(func() {
		if p.stdin != nil {
			p.stdin.Close()
		}
		sig, grace := p.c.StopSignal, p.c.Grace
		if sig == nil {
			sig = syscall.SIGTERM
		}
		if grace <= 0 {
			grace = 15 * time.Second
		}
		select {
		case <-p.exited:
			p.stopErr = p.waitErr
		default:
			p.cmd.Process.Signal(sig)
			t := time.NewTimer(grace)
			select {
			case <-p.exited:
			case <-t.C:
				procgroup.Kill(p.cmd)
				<-p.exited
				p.stopErr = fmt.Errorf("%s did not exit within %v of %v; killed", p.c.name(), grace, sig)
			}
			t.Stop()
		}
		// Whatever the child started goes too.
		procgroup.Kill(p.cmd)
	})
	return p.stopErr
}

// Output runs the child to completion and returns its stdout; a failure's
// error carries the last lines it printed on stderr.
func Output(ctx context.Context, c Cmd) ([]byte, error) {
	cmd, err := c.command(ctx)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	tail := &tailBuffer{}
	cmd.Stdout = writers(&out, c.Stdout)
	cmd.Stderr = writers(tail, c.Stderr)
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s: %w\n%s", c.name(), err, Tail(tail.String(), 30))
	}
	return out.Bytes(), nil
}

// LastLine returns the last non-empty line of out (a worker's result).
func LastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return lines[len(lines)-1]
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func writers(w io.Writer, extra io.Writer) io.Writer {
	if extra == nil {
		return w
	}
	return io.MultiWriter(w, extra)
}

// tailBuffer keeps the last 64 KiB written to it; safe for concurrent use.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 64 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
