//go:build !unix

// Package procgroup runs a command in a process group of its own, so that
// cancelling its context (or Kill) ends the command and everything it
// started. Without Unix process groups only the process itself is killed.
package procgroup

import "os/exec"

// Own leaves cmd to exec.CommandContext's default: cancellation kills the
// process itself.
func Own(cmd *exec.Cmd) {}

// Kill kills cmd's process (if cmd was started).
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
