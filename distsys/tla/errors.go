package tla

import (
	"errors"
	"fmt"
)

// ErrUndefined is matched (errors.Is) by every *Error: the operation's
// result is not defined by TLA+ (or not representable here).
var ErrUndefined = errors.New("tla: undefined")

// ErrTooLarge is matched by the *Error of an operation that would build a
// value larger than this package builds (a huge interval materialized,
// SUBSET of a large set). It also matches ErrUndefined.
var ErrTooLarge = errors.New("tla: value too large")

// Error is the failure of a TLA+ operator. The runtime reports it with
// the MPCal source position at which the expression was evaluated.
type Error struct {
	Pos string // source position, "file:line:col"; set by Eval or the runtime
	Op  string // the operator, in TLA+ spelling: "+", "Head", "f[x]"
	Msg string // what went wrong, with the operands printed in TLA+ syntax

	tooLarge bool
}

func (e *Error) Error() string {
	if e.Pos != "" {
		return e.Pos + ": " + e.Op + ": " + e.Msg
	}
	return e.Op + ": " + e.Msg
}

// Is makes errors.Is(err, ErrUndefined) true for every *Error and
// errors.Is(err, ErrTooLarge) true for size failures.
func (e *Error) Is(target error) bool {
	return target == ErrUndefined || (e.tooLarge && target == ErrTooLarge)
}

// maxShown bounds how much of an operand an error message prints: the
// message is for a person, and an operand may be a large state.
const maxShown = 200

// show prints v for an error message, cut short if long.
func show(v Value) string {
	s := v.String()
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return s
}

func errorf(op, format string, args ...any) error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...)}
}

func tooLarge(op, format string, args ...any) error {
	return &Error{Op: op, Msg: fmt.Sprintf(format, args...), tooLarge: true}
}

// typeError reports an operand of the wrong kind.
func typeError(op, want string, v Value) error {
	if !v.IsValid() {
		return errorf(op, "operand is the invalid (zero) Value, want %s", want)
	}
	return errorf(op, "want %s, got %s %s", want, v.Kind(), show(v))
}
