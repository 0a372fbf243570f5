//go:build !unix

package tlc

import "os/exec"

// ownGroup leaves cmd to exec.CommandContext's default: cancelling the
// context kills the JVM process itself.
func ownGroup(cmd *exec.Cmd) {}
