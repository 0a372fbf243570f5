//go:build !unix

package transport

import (
	"io"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is a socket BusyPollReader can read.
type Conn interface {
	io.Reader
	syscall.Conn
}

// BusyPollReader: no busy polling on this system; c itself.
func BusyPollReader(c Conn, _ time.Duration) io.Reader { return c }

func newSpinReader(c Conn, _ time.Duration) io.Reader { return c }

// spinReader: no busy polling on this system, so no stepping aside.
type spinReader struct{}

func (*spinReader) allowStep(bool) {}

func (*spinReader) setStepAside(*atomic.Int32) {}

func (*spinReader) pause() {}

// Read is never called: newSpinReader returns the connection itself here.
func (*spinReader) Read([]byte) (int, error) { return 0, io.EOF }
