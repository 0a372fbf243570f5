package freeport

import (
	"fmt"
	"net"
	"testing"
)

// The ports are distinct and can be listened on.
func TestTCP(t *testing.T) {
	ports, err := TCP(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] || p <= 0 {
			t.Fatalf("ports %v: duplicate or invalid", ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
	}
}
