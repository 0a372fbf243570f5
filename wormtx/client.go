package wormtx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"strata/stack"
)

// Serve makes an RM answer client requests on its node: each request
// runs one transaction with this RM as its initiator (Call is the
// client's side).
func (p *Peer) Serve() {
	p.cfg.Node.HandleAsync(func(_ stack.Addr, req []byte, respond func([]byte)) {
		m, err := decodeMsg(req)
		if err == nil && m.kind != mClient {
			err = fmt.Errorf("%w: not a client request", ErrMalformed)
		}
		if err != nil {
			respond(msg{kind: mResult, variant: E3, vote: []byte(err.Error())}.encode())
			return
		}
		p.Submit(m.variant, m.ops, func(r Result, err error) {
			out := msg{kind: mResult, variant: m.variant, tx: m.tx, outcome: r.Outcome}
			if err != nil {
				out.outcome, out.vote = 0, []byte(err.Error())
			}
			for k, v := range r.Reads {
				out.reads = append(out.reads, read{k, v})
			}
			respond(out.encode())
		})
	})
}

// ErrRemote: the RM could not run the transaction (its message says
// why; ErrInDoubt's among them).
var ErrRemote = errors.New("wormtx: the RM reported an error")

// Call runs a transaction through the RM at rm (which Serves), from
// node, and returns its outcome. The call's deadline is ctx's, or 10 s.
func Call(ctx context.Context, node *stack.Node, rm stack.Addr, v Variant, ops []Op) (Result, error) {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	b, err := node.Call(ctx, rm, msg{kind: mClient, variant: v, ops: ops}.encode(), timeout)
	if err != nil {
		return Result{}, fmt.Errorf("wormtx: call %s: %w", rm, err)
	}
	m, err := decodeMsg(b)
	if err != nil || m.kind != mResult {
		return Result{}, fmt.Errorf("wormtx: reply from %s: %w", rm, ErrMalformed)
	}
	if m.outcome == 0 {
		return Result{}, fmt.Errorf("%w: %s", ErrRemote, m.vote)
	}
	r := Result{Outcome: m.outcome}
	if len(m.reads) > 0 {
		r.Reads = map[string]int64{}
		for _, x := range m.reads {
			r.Reads[x.key] = x.val
		}
	}
	return r, nil
}
