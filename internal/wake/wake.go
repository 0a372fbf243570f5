// Package wake holds the two small waiting helpers the protocol drivers
// share (smr's replica, wormlog's server and client): a non-blocking
// wake-up on a one-slot channel, and a sleep that a context cuts short.
package wake

import (
	"context"
	"time"
)

// Kick wakes whoever waits on ch (capacity 1) without blocking: a wake-up
// already pending stands for this one too.
func Kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Sleep pauses for d or until ctx ends; false if ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
