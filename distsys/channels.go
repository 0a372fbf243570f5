package distsys

import (
	"context"
	"errors"
	"time"

	"strata/distsys/tla"
)

// Output is a write-only resource that hands what an archetype writes to
// hand-written Go code through a channel: each committed section's writes
// are sent in order when it commits (an aborted section sends nothing).
// Commit blocks while the channel is full, until the Run's context ends.
type Output struct {
	ch  chan<- tla.Value
	buf []tla.Value // the current section's writes
}

// NewOutput returns an output resource over ch.
func NewOutput(ch chan<- tla.Value) *Output { return &Output{ch: ch} }

// ErrWriteOnly and ErrReadOnly are the errors of a read of an output and
// a write of an input.
var (
	ErrWriteOnly = errors.New("resource is write-only (an output channel)")
	ErrReadOnly  = errors.New("resource is read-only")
)

func (o *Output) Read(context.Context) (tla.Value, error) { return tla.Value{}, ErrWriteOnly }

func (o *Output) Write(_ context.Context, v tla.Value) error {
	o.buf = append(o.buf, v)
	return nil
}

func (o *Output) PreCommit(context.Context) error { return nil }

func (o *Output) Commit(ctx context.Context) error {
	for _, v := range o.buf {
		select {
		case o.ch <- v:
		case <-ctx.Done():
			// What was sent stays sent; the rest is dropped with the
			// archetype, which stops on this error.
			o.buf = o.buf[:0]
			return ctx.Err()
		}
	}
	o.buf = o.buf[:0]
	return nil
}

func (o *Output) Abort() { o.buf = o.buf[:0] }

// Input is a read-only resource fed by hand-written Go code through a
// channel. A value taken from the channel by a section that then aborts
// is kept and read again by the next attempt, so no input is lost or
// duplicated. A read with nothing to receive waits up to Wait (default
// 50 ms), then aborts the section so the loop retries it.
type Input struct {
	ch   <-chan tla.Value
	Wait time.Duration
	held []tla.Value // taken from ch, not yet consumed by a committed section
	used int         // how many of held the current section has read
}

// NewInput returns an input resource over ch.
func NewInput(ch <-chan tla.Value) *Input { return &Input{ch: ch, Wait: 50 * time.Millisecond} }

func (in *Input) Read(ctx context.Context) (tla.Value, error) {
	if in.used < len(in.held) {
		in.used++
		return in.held[in.used-1], nil
	}
	t := time.NewTimer(in.Wait)
	defer t.Stop()
	select {
	case v, ok := <-in.ch:
		if !ok {
			return tla.Value{}, &AbortError{Reason: "input channel closed"}
		}
		in.held = append(in.held, v)
		in.used++
		return v, nil
	case <-t.C:
		return tla.Value{}, &AbortError{Reason: "nothing to read from the input channel"}
	case <-ctx.Done():
		return tla.Value{}, ctx.Err()
	}
}

func (in *Input) Write(context.Context, tla.Value) error { return ErrReadOnly }

func (in *Input) PreCommit(context.Context) error { return nil }

func (in *Input) Commit(context.Context) error {
	in.held = in.held[in.used:]
	in.used = 0
	return nil
}

func (in *Input) Abort() { in.used = 0 }
