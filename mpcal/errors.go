package mpcal

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"strata/mpcal/tla"
)

// The kinds of error the compiler reports. Each is stable: tests and
// tools match on it. A syntax error is a *tla.Error with kind "syntax".
const (
	KindSyntax              = "syntax"
	KindUndefined           = "undefined"
	KindRedefinition        = "redefinition"
	KindMultipleAssignment  = "multiple-assignment"
	KindMissingLabel        = "missing-label"
	KindForbiddenLabel      = "forbidden-label"
	KindReservedLabel       = "reserved-label"
	KindDuplicateLabel      = "duplicate-label"
	KindRefMismatch         = "ref-mismatch"
	KindDuplicateMapping    = "duplicate-mapping"
	KindRecursiveMacro      = "recursive-macro"
	KindYieldOutsideMapping = "yield-outside-mapping"
	KindMultipleYield       = "multiple-yield"
	KindStatementAfterYield = "statement-after-yield"
	KindArityMismatch       = "arity-mismatch"
	KindArgumentCount       = "argument-count"
	KindAssignNonVariable   = "assign-non-variable"
	KindForbiddenStatement  = "forbidden-statement"
	KindUnsupported         = "unsupported"
)

// Error is a semantic error at a source position.
type Error struct {
	Pos  Pos
	Kind string
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.Pos.File, e.Pos.Line, e.Pos.Col, e.Kind, e.Msg)
}

// ErrorList is every semantic error found, sorted by position.
type ErrorList []*Error

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Diagnostics returns the errors in err (a syntax error, an ErrorList or
// an *Error) as *Errors, a syntax error with kind "syntax"; nil if err
// carries no position.
func Diagnostics(err error) []*Error {
	var te *tla.Error
	if errors.As(err, &te) {
		return []*Error{{Pos: te.Pos, Kind: KindSyntax, Msg: te.Msg}}
	}
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
