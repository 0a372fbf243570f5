package tla

import "fmt"

// Pos is a position in a source file. Line and Col are 1-based; Col counts
// characters (runes), with a tab advancing to the next multiple of 8 plus
// one, as in SANY's character stream. Offset is the 0-based byte offset.
// The zero Pos means "unknown".
type Pos struct {
	File   string
	Offset int
	Line   int
	Col    int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats p as file:line:col (line:col if the file is unnamed).
func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is a syntax error in TLA+ source. Its message has the form
// "file:line:col: syntax: message". File is the file being parsed, which
// is normally also Pos.File.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = e.Pos.File
	}
	if file == "" {
		file = "<input>"
	}
	return fmt.Sprintf("%s:%d:%d: syntax: %s", file, e.Pos.Line, e.Pos.Col, e.Msg)
}
