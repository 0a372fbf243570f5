//go:build !unix

package sbench

import "os/exec"

// ownGroup is a no-op without Unix process groups; cancellation kills the
// process itself.
func ownGroup(cmd *exec.Cmd) {}

// killGroup kills cmd's process (if cmd was started).
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
