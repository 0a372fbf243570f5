package rpc

import "time"

// workerIdle is how long an idle worker waits for another call before it
// exits.
const workerIdle = 10 * time.Second

// workers runs calls on goroutines that outlive them. A call needs a deep
// stack (NFS, the file system, the journal); a goroutine started per call
// begins with a small stack and grows it by copying, which cost about 9 %
// of an NFS server's CPU under the smallfile load. A worker keeps its grown
// stack for the next call. Callers bound the calls in flight themselves.
type workers struct{ work chan func() }

func newWorkers() *workers { return &workers{work: make(chan func())} }

// run hands f to an idle worker, or starts one.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle) // Go 1.23 timers: Reset leaves no stale tick in t.C
		select {
		case f = <-w.work:
		case <-t.C:
			return
		}
	}
}
