package kv

import (
	"testing"
	"time"

	"strata/stack"
)

// TestTryTimeout: the try timeout starts at 1 s, then follows the
// measured round trips within its bounds, doubling per failed try.
func TestTryTimeout(t *testing.T) {
	c, err := NewClient(ClientConfig{Node: loopbackNode(t), Servers: []stack.Addr{"udp:127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.tryTimeout(0); got != initialAttemptTimeout {
		t.Fatalf("before any reply: %v, want %v", got, initialAttemptTimeout)
	}
	for range 50 {
		c.observe(time.Millisecond)
	}
	if got := c.tryTimeout(0); got != DefaultMinAttemptTimeout {
		t.Fatalf("after fast replies: %v, want the minimum %v", got, DefaultMinAttemptTimeout)
	}
	if got := c.tryTimeout(2); got != 4*DefaultMinAttemptTimeout {
		t.Fatalf("third try: %v, want %v", got, 4*DefaultMinAttemptTimeout)
	}
	if got := c.tryTimeout(20); got != DefaultAttemptTimeout {
		t.Fatalf("many tries: %v, want the maximum %v", got, DefaultAttemptTimeout)
	}
	for range 50 {
		c.observe(300 * time.Millisecond)
	}
	if got := c.tryTimeout(0); got < 300*time.Millisecond || got > DefaultAttemptTimeout {
		t.Fatalf("after 300 ms replies: %v", got)
	}
	if _, err := NewClient(ClientConfig{Node: loopbackNode(t)}); err != ErrNoServers {
		t.Fatalf("no servers: %v", err)
	}
}
