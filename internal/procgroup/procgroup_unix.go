//go:build unix

// Package procgroup runs a command in a process group of its own, so that
// cancelling its context (or Kill) ends the command and everything it
// started — a JVM and its helpers, say — and no terminal signal meant for
// the caller reaches it. Without Unix process groups only the process
// itself is killed.
package procgroup

import (
	"os/exec"
	"syscall"
)

// Own makes cmd, before it starts, the leader of a new process group and
// makes context cancellation kill that whole group.
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return Kill(cmd) }
}

// Kill sends SIGKILL to cmd's process group (if cmd was started).
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
