package jgroups

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// errStdinRace: after printing a number prompt, JGroups' tools (Util.
// readIntFromStdin) skip the bytes already available on stdin, and on a
// pipe that skip throws "IOException: Illegal seek"; so a value must arrive
// after the skip. The drivers wait promptSettle after each prompt, detect
// the exception if the JVM was slower still, and then start again with new
// JVMs (the leftover value would be read as menu keys).
var errStdinRace = errors.New("jgroups: the tool's stdin skip raced with the typed value")

const promptSettle = 100 * time.Millisecond

var reANSI = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripANSI(s string) string { return reANSI.ReplaceAllString(s, "") }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// shellJoin renders argv as a POSIX shell command line.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// console collects a process's output and lets callers wait for text in it.
type console struct {
	mu     sync.Mutex
	buf    []byte
	notify chan struct{} // closed and replaced on every write
	done   chan struct{} // closed when the process has exited
	once   sync.Once
}

func newConsole() *console {
	return &console{notify: make(chan struct{}), done: make(chan struct{})}
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.buf = append(c.buf, p...)
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
	return len(p), nil
}

func (c *console) closeWith() { c.once.Do(func() { close(c.done) }) }

func (c *console) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

func (c *console) slice(i, j int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[i:j])
}

// waitFor waits until one of subs appears at or after offset from and
// returns the offset just past the first such occurrence.
func (c *console) waitFor(ctx context.Context, from int, subs ...string) (int, error) {
	return c.wait(ctx, func(b []byte) int {
		best := -1
		for _, s := range subs {
			if i := strings.Index(string(b[from:]), s); i >= 0 && (best < 0 || from+i+len(s) < best) {
				best = from + i + len(s)
			}
		}
		return best
	}, fmt.Sprintf("%q", subs))
}

// answer waits (from offset off) for a tool's prompt, types v and a
// newline into in, and waits for the menu again (menuEnd); it returns
// where the prompt was. A JGroups tool that echoes an exception instead
// gets errStdinRace (see there).
func (c *console) answer(ctx context.Context, in io.Writer, off int, prompt string, v int, menuEnd string) (int, error) {
	p, err := c.waitFor(ctx, off, prompt)
	if err != nil {
		return 0, fmt.Errorf("jgroups: no %q prompt: %w", prompt, err)
	}
	// See errStdinRace: let the tool get past its skip first.
	select {
	case <-time.After(promptSettle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if _, err := in.Write([]byte(strconv.Itoa(v) + "\n")); err != nil {
		return 0, err
	}
	end, err := c.waitFor(ctx, p, menuEnd)
	if err != nil {
		return 0, err
	}
	if strings.Contains(c.slice(p, end), "Exception") {
		return 0, errStdinRace
	}
	return p, nil
}

// waitRE waits until re matches at or after from; it returns the offset
// just past the match.
func (c *console) waitRE(ctx context.Context, from int, re *regexp.Regexp) (int, error) {
	return c.wait(ctx, func(b []byte) int {
		if loc := re.FindIndex(b[from:]); loc != nil {
			return from + loc[1]
		}
		return -1
	}, re.String())
}

func (c *console) wait(ctx context.Context, find func([]byte) int, what string) (int, error) {
	for {
		c.mu.Lock()
		i := find(c.buf)
		ch := c.notify
		c.mu.Unlock()
		if i >= 0 {
			return i, nil
		}
		select {
		case <-ch:
		case <-c.done:
			// Output is complete once Wait returned; look one last time.
			c.mu.Lock()
			i := find(c.buf)
			c.mu.Unlock()
			if i >= 0 {
				return i, nil
			}
			return -1, fmt.Errorf("process exited before printing %s", what)
		case <-ctx.Done():
			return -1, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

func (c *console) waitClosed(ctx context.Context) {
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}
