//go:build unix

package tlc

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestCheckCancel: cancelling the context kills TLC, which is reaped
// before Check returns.
func TestCheckCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := 0
	opt := Options{Spec: "testdata/Forever.tla", Workers: 1, Progress: func(Progress) { cancel() }}
	opt.started = func(p int) { pid = p }
	r, err := Check(ctx, opt)
	if !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("got %v, %v; want context.Canceled", r, err)
	}
	if pid == 0 {
		t.Fatal("TLC was not started")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Check returned (kill 0: %v)", pid, err)
	}
}
