package wormtx

import (
	"errors"
	"sync"
)

// ErrClosed is what a Sync pending when its store closes reports.
var ErrClosed = errors.New("wormtx: store closed")

// groupSync runs flush for the Syncs waiting, in batches, on one
// goroutine: the Syncs that arrive while a flush runs share the next one
// (group commit), and no caller blocks.
type groupSync struct {
	flush   func() error
	mu      sync.Mutex
	waiting []func(error) // Syncs not yet started (guarded by mu)
	closed  bool          // guarded by mu
	kick    chan struct{} // wakes the flusher (capacity 1; closed by close, under mu)
	stopped chan struct{} // closed when the flusher has returned
}

func newGroupSync(flush func() error) *groupSync {
	g := &groupSync{flush: flush, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	go g.run()
	return g
}

// run flushes for the waiting Syncs until close, and answers those left
// then with ErrClosed.
func (g *groupSync) run() {
	defer close(g.stopped)
	for {
		_, open := <-g.kick
		g.mu.Lock()
		batch, closed := g.waiting, g.closed
		g.waiting = nil
		g.mu.Unlock()
		if len(batch) > 0 {
			err := ErrClosed
			if !closed {
				err = g.flush()
			}
			for _, done := range batch {
				done(err)
			}
		}
		if !open {
			return
		}
	}
}

// sync calls done (on the flusher goroutine, or at once if closed) once a
// flush that started after this call returns.
func (g *groupSync) sync(done func(error)) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		done(ErrClosed)
		return
	}
	g.waiting = append(g.waiting, done)
	select { // under mu: close cannot close kick meanwhile
	case g.kick <- struct{}{}:
	default: // a wake-up is pending: it will see this one
	}
	g.mu.Unlock()
}

// close stops the flusher after answering the Syncs waiting.
func (g *groupSync) close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	close(g.kick)
	g.mu.Unlock()
	<-g.stopped
}
