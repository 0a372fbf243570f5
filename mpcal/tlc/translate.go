package tlc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ToolError is a failure reported by one of the TLA+ tools about its
// input: a PlusCal translation error or a SANY parse or semantic error.
type ToolError struct {
	Tool string // "pcal.trans" or "SANY"
	File string // the file the message is about
	// Line and Col locate the first error when the tool gives a position
	// (0 when it does not; Col may be 0 alone).
	Line, Col int
	Msg       string // the tool's message, boilerplate removed
	Output    string // everything the tool printed
}

// Error gives "file:line:col: tool: message", leaving out what is unknown.
func (e *ToolError) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			pos += ":" + strconv.Itoa(e.Col)
		}
	}
	return fmt.Sprintf("%s: %s: %s", pos, e.Tool, e.Msg)
}

var (
	// "line 7, column 6" (pcal.trans, SANY's parser) and "line 5, col 14
	// to line 5, col 14 of module Sem" (SANY's semantic checker, TLC).
	posRe    = regexp.MustCompile(`line (\d+), col(?:umn)? (\d+)`)
	moduleRe = regexp.MustCompile(`of module ([A-Za-z0-9_]+)`)
)

// Translate runs the PlusCal translator (pcal.trans -nocfg) on tlaFile,
// which it rewrites in place as the translator does: the TLA+ translation
// replaces what is between the file's BEGIN TRANSLATION and END
// TRANSLATION lines. The translator's backup copy (the file with the
// extension .old) is removed unless it was there before. A translation
// error is a *ToolError with the translator's message and position.
func Translate(ctx context.Context, tlaFile string) error {
	old := strings.TrimSuffix(tlaFile, ".tla") + ".old"
	_, statErr := os.Stat(old)
	hadOld := statErr == nil
	out, exit, err := runTool(ctx, "pcal.trans", tlaFile, "-nocfg")
	if !hadOld {
		os.Remove(old) // absent when the translator failed early
	}
	if err != nil {
		return err
	}
	_, after, failed := strings.Cut(out, "Unrecoverable error:")
	if !failed && exit == 0 {
		return nil
	}
	if !failed {
		after = out
	}
	var msg []string
	for _, l := range strings.Split(after, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "--"))
		if l != "" && !strings.HasPrefix(l, "pcal.trans Version") {
			msg = append(msg, l)
		}
	}
	e := &ToolError{Tool: "pcal.trans", File: tlaFile, Msg: strings.Join(msg, " "), Output: out}
	if e.Msg == "" {
		e.Msg = fmt.Sprintf("failed with exit status %d and no message", exit)
	}
	e.Line, e.Col = firstPos(after)
	return e
}

// SANY parses tlaFile and the modules it extends with SANY, the TLA+
// reference parser and semantic checker, and returns a *ToolError carrying
// SANY's messages when it finds a lexical, parse or semantic error (or
// cannot find a module). SANY exits with status 0 after semantic errors;
// its output is what is judged.
func SANY(ctx context.Context, tlaFile string) error {
	out, exit, err := runTool(ctx, "tla2sany.SANY", tlaFile)
	if err != nil {
		return err
	}
	if !sanyFailed(out) && exit == 0 {
		return nil
	}
	e := &ToolError{Tool: "SANY", File: tlaFile, Msg: sanyMessage(strings.Split(out, "\n")), Output: out}
	if e.Msg == "" {
		e.Msg = fmt.Sprintf("failed with exit status %d", exit)
	}
	e.Line, e.Col = firstPos(e.Msg)
	if m := moduleRe.FindStringSubmatch(e.Msg); m != nil && m[1]+".tla" != filepath.Base(tlaFile) {
		e.File = filepath.Join(filepath.Dir(tlaFile), m[1]+".tla")
	}
	return e
}

// sanyFailed tells whether SANY's output reports an error.
func sanyFailed(out string) bool {
	for _, s := range []string{"***Parse Error***", "Lexical error", "Fatal errors", "Semantic errors:", "Cannot find"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// sanyBoilerplate are the lines of SANY's output that carry no message.
var sanyBoilerplate = []string{
	"****** SANY2 Version", "Parsing file ", "Semantic processing of module ",
	"Residual stack trace follows:", "Module definition starting at",
	"Fatal errors while parsing", "tla2sany.semantic.AbortException",
	"*** Abort messages:", "*** Errors:", "Semantic errors:", "Could not parse module",
	"In module ", "Unknown location", "Linting of module", "SANY finished",
}

var sanyLocRe = regexp.MustCompile(`^line \d+, col \d+ to line \d+, col \d+ of module`)

// sanyMessage is SANY's messages without its boilerplate: one line per
// semantic error ("line L, col C to ... of module M: message") and the
// lines of a parse error joined into one.
func sanyMessage(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || hasAnyPrefix(l, sanyBoilerplate) {
			continue
		}
		switch {
		case b.Len() == 0:
		case sanyLocRe.MatchString(l):
			b.WriteByte('\n')
		case sanyLocRe.MatchString(lastLine(b.String())) && !strings.Contains(lastLine(b.String()), ": "):
			b.WriteString(": ")
		default:
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return b.String()
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// firstPos is the first "line L, col(umn) C" in s, or zeros.
func firstPos(s string) (line, col int) {
	m := posRe.FindStringSubmatch(s)
	if m == nil {
		return 0, 0
	}
	line, err1 := strconv.Atoi(m[1])
	col, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return line, col
}
