//go:build unix

package procgroup

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelKillsTheGroup: a shell that starts a child is cancelled; the
// child (same process group) is gone too.
func TestCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 60 & echo $!; wait")
	Own(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid: %q %v", buf[:n], err)
	}
	cancel()
	_ = cmd.Wait()
	// The child may take a moment to be reaped by init; it must not stay.
	for i := 0; ; i++ {
		if err := syscall.Kill(child, 0); err == syscall.ESRCH {
			return
		}
		if i == 100 {
			t.Fatalf("child %d still alive after the group was killed", child)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKillUnstarted(t *testing.T) {
	if err := Kill(exec.Command("true")); err != nil {
		t.Fatal(err)
	}
}
