//go:build unix

package tlc

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, so that cancelling
// its context kills the JVM and anything it started, and no terminal
// signal meant for the caller reaches it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if err == syscall.ESRCH {
			return nil
		}
		return err
	}
}
