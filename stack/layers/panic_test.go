package layers

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/transport"
)

// panicky is a layer with a bug: it panics on a message saying "boom".
type panicky struct{}

var boom = []byte("boom")

func (panicky) Down(ev stack.Event, out stack.Emitter) {
	if ev.Msg != nil && bytes.Equal(ev.Msg.Body(), boom) {
		panic("panicky: boom")
	}
	out.Down(ev)
}

func (panicky) Up(ev stack.Event, out stack.Emitter) { out.Up(ev) }

// A layer's panic surfaces as a panic, not a hang: the node closes itself
// and releases its lock, so the deferred Close on the panicking caller's
// way out (as in a test, or a server's cleanup) returns, and the node then
// refuses work with ErrClosed.
func TestNodeLayerPanicSurfaces(t *testing.T) {
	tr, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := stack.Config{Local: tr.Local(), Epoch: 1, MTU: 1400}
	ls := Build(specsFor(t, "Reliable", ""), cfg)
	ls = append(ls[:len(ls)-1], panicky{}, ls[len(ls)-1]) // under the top
	n := stack.NewNode(tr, stack.NewRealClock(), ls, stack.NodeOptions{})
	if err := n.Send(tr.Local(), []byte("fine")); err != nil {
		t.Fatalf("send before the bug: %v", err)
	}
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		defer n.Close()
		_ = n.Send(tr.Local(), boom)
	}()
	select {
	case r := <-got:
		if r == nil {
			t.Fatal("the layer's panic did not reach the caller")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a layer's panic left the node hung (the deferred Close never returned)")
	}
	if err := n.Send(tr.Local(), []byte("after")); !errors.Is(err, stack.ErrClosed) {
		t.Fatalf("send after the panic: %v, want ErrClosed", err)
	}
}
