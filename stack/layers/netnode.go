package layers

import (
	"time"

	"strata/stack"
	"strata/stack/transport"
)

// Listen opens a real transport ("udp:HOST:PORT" or "tcp:HOST:PORT") and
// runs the stack chosen for props ("Reliable,Fragment,RPC") on it, with a
// fresh incarnation number and the transport's datagram size.
func Listen(listen, props string) (*stack.Node, error) {
	return ListenOpts(listen, props, transport.Options{})
}

// ListenOpts is Listen with transport options.
func ListenOpts(listen, props string, o transport.Options) (*stack.Node, error) {
	ps, err := ParseProps(props)
	if err != nil {
		return nil, err
	}
	ch, err := Configure(ps)
	if err != nil {
		return nil, err
	}
	tr, err := transport.ListenOpts(listen, o)
	if err != nil {
		return nil, err
	}
	cfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: min(tr.MTU(), 64000)}
	// A caller polls for its reply as long as the transport polls for it.
	return stack.NewNode(tr, stack.NewRealClock(), Build(ch.Specs, cfg), stack.NodeOptions{SpinWait: o.BusyPoll}), nil
}
