package wor

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// WriteWithToken: a capture one client made serves another client's
// write (WormLog's tokens), over both engines; a later capture preempts
// the token, and a token for a register already written completes nothing
// of its own.
func TestWriteWithToken(t *testing.T) {
	for _, engine := range []string{"paxos", "chain"} {
		t.Run(engine, func(t *testing.T) {
			servers, mk := realCluster(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := func(id uint64) *Client {
				var e Engine
				var err error
				if engine == "paxos" {
					e, err = NewPaxos(mk(), servers, id, 200*time.Millisecond)
				} else {
					e, err = NewChain(mk(), servers, id, 200*time.Millisecond)
				}
				if err != nil {
					t.Fatal(err)
				}
				return NewClient(e)
			}
			seq, writer, other := client(1), client(2), client(3)
			if err := seq.Alloc(ctx, 7, []byte("log")); err != nil {
				t.Fatal(err)
			}
			token, err := seq.SegCapture(ctx, 7, 0, 16)
			if err != nil {
				t.Fatal(err)
			}
			if err := writer.WriteWithToken(ctx, 7, 3, []byte("entry"), token); err != nil {
				t.Fatalf("write with a token: %v", err)
			}
			if v, err := other.Read(ctx, 7, 3); err != nil || !bytes.Equal(v, []byte("entry")) {
				t.Fatalf("read %q, %v", v, err)
			}
			// A newer capture (a reader filling a hole) preempts the token.
			if _, err := other.Capture(ctx, 7, 4); err != nil {
				t.Fatal(err)
			}
			if err := writer.WriteWithToken(ctx, 7, 4, []byte("late"), token); !errors.Is(err, ErrPreempted) {
				t.Fatalf("a token written after a newer capture: %v, want ErrPreempted", err)
			}
			if err := writer.WriteWithToken(ctx, 7, 5, []byte("x"), 0); err == nil {
				t.Fatal("a zero token accepted")
			}
		})
	}
}
