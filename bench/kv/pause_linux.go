package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// pauseSupported: a run with two systems pauses one while the other
// runs, which needs process groups (syscall.Kill) and /proc.
const pauseSupported = true

// signalGroups sends sig to the process groups led by pids (each server
// runs in a group of its own, kit.Start), one right after another. A
// group that is gone is skipped: a dead server uses nothing.
func signalGroups(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("%v to process group %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}

// stopGroups stops the process groups of pids (SIGSTOP) and waits until
// every group leader is seen stopped, so that "paused" is a fact checked
// in /proc, not a signal hoped delivered.
func stopGroups(ctx context.Context, pids []int) error {
	if err := signalGroups(pids, syscall.SIGSTOP); err != nil {
		return err
	}
	return waitState(ctx, pids, true)
}

// contGroups resumes the process groups of pids (SIGCONT) and waits
// until no group leader is seen stopped.
func contGroups(ctx context.Context, pids []int) error {
	if err := signalGroups(pids, syscall.SIGCONT); err != nil {
		return err
	}
	return waitState(ctx, pids, false)
}

// waitState waits up to 5 s until every process of pids that still
// exists is stopped (stopped true) or not.
func waitState(ctx context.Context, pids []int, stopped bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var pending []int
		for _, pid := range pids {
			st, err := procState(pid)
			if err != nil {
				continue // gone
			}
			if (st == 'T') != stopped {
				pending = append(pending, pid)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v not %s within 5 s of the signal", pending, map[bool]string{true: "stopped", false: "running"}[stopped])
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// procState is the state letter of process pid in /proc/pid/stat ('T':
// stopped by a signal; 'Z' counts as gone).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	st, _, err := parseStat(b)
	if err == nil && st == 'Z' {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return st, err
}

// parseStat returns the state and parent pid of a /proc/pid/stat line:
// "pid (comm) state ppid ...", where comm may hold spaces and
// parentheses.
func parseStat(b []byte) (state byte, ppid int, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed stat %q", b)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("malformed stat %q", b)
	}
	ppid, err = strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, fmt.Errorf("malformed stat %q: %w", b, err)
	}
	return f[0][0], ppid, nil
}

// childProcesses returns the pids of this process's children whose
// command line satisfies match.
func childProcesses(match func(argv []string) bool) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		_, ppid, err := parseStat(b)
		if err != nil || ppid != self {
			continue
		}
		dir := filepath.Dir(p)
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		var argv []string
		for _, a := range bytes.Split(bytes.TrimSuffix(cl, []byte{0}), []byte{0}) {
			argv = append(argv, string(a))
		}
		if match(argv) {
			out = append(out, pid)
		}
	}
	return out, nil
}
