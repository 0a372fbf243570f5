package kv

import (
	"errors"
	"fmt"
	"time"
)

// Limits of the service.
const (
	// MaxKey is the largest key, in bytes (keys are never empty).
	MaxKey = 4 << 10
	// MaxValue is the largest value, in bytes.
	MaxValue = 256 << 10
	// MaxScanLimit bounds the keys one Scan returns (a scan with limit 0
	// or above it returns at most this many, with More set).
	MaxScanLimit = 10000
	// maxReplyBytes bounds the keys and values (or events) one reply
	// carries; a scan or watch that would carry more stops early (with
	// More set, or Next where to continue), after at least one entry.
	maxReplyBytes = 4 << 20
	// MaxWatchWait bounds how long a watch poll waits for an event.
	MaxWatchWait = time.Minute
)

// Errors callers act on. A reply's status carries them from the server
// to the client, which returns them wrapped with the server's message, so
// errors.Is works on either side.
var (
	// ErrNotFound: Get found no such key.
	ErrNotFound = errors.New("kv: key not found")
	// ErrEmptyKey: a key is required and was empty.
	ErrEmptyKey = errors.New("kv: empty key")
	// ErrKeyTooLarge: a key longer than MaxKey.
	ErrKeyTooLarge = errors.New("kv: key too large")
	// ErrValueTooLarge: a value longer than MaxValue.
	ErrValueTooLarge = errors.New("kv: value too large")
	// ErrMalformed: a request (or log command, or snapshot) that does
	// not decode, or lacks a field its operation needs.
	ErrMalformed = errors.New("kv: malformed request")
	// ErrUnknownOp: a request with an operation code this server does
	// not know.
	ErrUnknownOp = errors.New("kv: unknown operation")
	// ErrCompacted: a watch from a revision older than the history the
	// server keeps; read the current state (Get/Scan) and watch from its
	// revision.
	ErrCompacted = errors.New("kv: watch revision compacted")
	// ErrStaleSequence: a write whose client session already applied a
	// later command (a late duplicate of an abandoned attempt). It was
	// not applied.
	ErrStaleSequence = errors.New("kv: stale sequence number")
	// ErrUnavailable: the server could not get the request served (no
	// leader known, the leader did not answer, the replica is closing).
	// A write that got it may or may not have been applied; the client
	// retries it with the same sequence number, so it is applied once.
	ErrUnavailable = errors.New("kv: service unavailable")
	// ErrInternal: the server failed in a way the other statuses do not
	// describe (its message says how).
	ErrInternal = errors.New("kv: internal error")
	// ErrUnsupported: an operation this server's mode does not offer
	// (scans and watches in keyed mode).
	ErrUnsupported = errors.New("kv: operation not supported by this server")
	// ErrBadReply: a reply that does not decode (a client-side error).
	ErrBadReply = errors.New("kv: malformed reply")
)

// Status is a reply's outcome on the wire.
type Status uint8

// Statuses. New ones are only ever appended: a client that meets a
// status it does not know reports it with the server's message.
const (
	StatusOK Status = iota
	StatusNotFound
	StatusMalformed
	StatusUnknownOp
	StatusEmptyKey
	StatusKeyTooLarge
	StatusValueTooLarge
	StatusCompacted
	StatusStaleSequence
	StatusUnavailable
	StatusInternal
	StatusUnsupported
)

var statusErrs = [...]error{
	StatusNotFound:      ErrNotFound,
	StatusMalformed:     ErrMalformed,
	StatusUnknownOp:     ErrUnknownOp,
	StatusEmptyKey:      ErrEmptyKey,
	StatusKeyTooLarge:   ErrKeyTooLarge,
	StatusValueTooLarge: ErrValueTooLarge,
	StatusCompacted:     ErrCompacted,
	StatusStaleSequence: ErrStaleSequence,
	StatusUnavailable:   ErrUnavailable,
	StatusInternal:      ErrInternal,
	StatusUnsupported:   ErrUnsupported,
}

// StatusOf is the status that carries err (StatusInternal for errors
// without one of the sentinels above; StatusOK for nil).
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	for s, e := range statusErrs {
		if e != nil && errors.Is(err, e) {
			return Status(s)
		}
	}
	return StatusInternal
}

// Err is the error a reply with status s and message msg stands for (nil
// for StatusOK).
func (s Status) Err(msg string) error {
	if s == StatusOK {
		return nil
	}
	if int(s) < len(statusErrs) && statusErrs[s] != nil {
		e := statusErrs[s]
		if msg == "" || msg == e.Error() {
			return e
		}
		return &replyError{err: e, msg: msg}
	}
	return fmt.Errorf("%w: unknown status %d: %s", ErrBadReply, s, msg)
}

// replyError is a server's error as the client sees it: the server's
// message, matching the sentinel with errors.Is.
type replyError struct {
	err error
	msg string
}

func (e *replyError) Error() string { return e.msg }
func (e *replyError) Unwrap() error { return e.err }
