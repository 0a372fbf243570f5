package wake

import (
	"context"
	"testing"
	"time"
)

func TestKickAndSleep(t *testing.T) {
	ch := make(chan struct{}, 1)
	Kick(ch)
	Kick(ch) // does not block: one wake-up pending
	select {
	case <-ch:
	default:
		t.Fatal("no wake-up pending after Kick")
	}
	select {
	case <-ch:
		t.Fatal("two wake-ups pending")
	default:
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live context reported it ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended context reported a full sleep")
	}
	if time.Since(start) > time.Second {
		t.Fatal("Sleep did not return when its context ended")
	}
}
