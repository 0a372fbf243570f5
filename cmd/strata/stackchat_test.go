package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"strata/stack/group"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Two chat members see each other's lines in the same order, the views,
// and leave politely when their input ends.
func TestChat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := group.Options{Heartbeat: 20 * time.Millisecond, SuspectAfter: time.Second}
	a, err := group.Join(ctx, "demo", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Contact = string(a.Addr())
	b, err := group.Join(ctx, "demo", o)
	if err != nil {
		t.Fatal(err)
	}
	var outs [2]syncBuf
	var ins [2]*io.PipeWriter
	done := make(chan error, 2)
	for i, m := range []*group.Member{a, b} {
		r, w := io.Pipe()
		ins[i] = w
		go func() { done <- chat(ctx, m, "demo", r, &outs[i]) }()
	}
	wait := func(i int, s string) {
		t.Helper()
		for !strings.Contains(outs[i].String(), s) {
			if ctx.Err() != nil {
				t.Fatalf("member %d never printed %q:\n%s", i, s, outs[i].String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait(0, "* view 2: "+string(a.Addr())+" "+string(b.Addr()))
	wait(1, "* view 2: ")
	io.WriteString(ins[0], "one\n")
	io.WriteString(ins[1], "two\n")
	io.WriteString(ins[0], "three\n")
	for i := range outs {
		wait(i, "three")
		wait(i, "two")
	}
	msgs := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "<") {
				out = append(out, l)
			}
		}
		return out
	}
	if m0, m1 := msgs(outs[0].String()), msgs(outs[1].String()); strings.Join(m0, "|") != strings.Join(m1, "|") || len(m0) != 3 {
		t.Fatalf("members printed different messages:\n%v\n%v", m0, m1)
	}
	ins[1].Close() // b leaves
	wait(1, "* left demo")
	wait(0, "* view 3: "+string(a.Addr())+"\n")
	ins[0].Close()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// chatProc is a `strata stack chat` process of this test's binary.
type chatProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  syncBuf
	addr string
	done chan struct{} // closed when the process has exited, with err
	err  error
}

func startChat(t *testing.T, ctx context.Context, join string) *chatProc {
	t.Helper()
	args := []string{"stack", "chat", "g", "--listen", "udp:127.0.0.1:0", "--heartbeat", "50ms", "--suspect", "3s"}
	if join != "" {
		args = append(args, "--join", join)
	}
	p := &chatProc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	for {
		if s := p.out.String(); strings.Contains(s, "; type lines") {
			_, rest, _ := strings.Cut(s, "you are ")
			p.addr, _, _ = strings.Cut(rest, ";")
			return p
		}
		if ctx.Err() != nil {
			t.Fatalf("chat never started: %s", p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// transcript is what p printed of the group from its first view with all
// of members on: messages and views, in order ("view change under way"
// lines left out).
func (p *chatProc) transcript(members ...string) []string {
	var out []string
	on := false
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.HasPrefix(l, "* view ") && !on {
			on = true
			for _, m := range members {
				on = on && strings.Contains(l+" ", " "+m+" ")
			}
		}
		if on && (strings.HasPrefix(l, "<") || strings.HasPrefix(l, "* view ")) {
			out = append(out, l)
		}
	}
	return out
}

// Three chat processes form a group; all cast; one is killed with
// SIGKILL while everyone is casting. The two survivors install a view
// without it and print the same messages and views in the same order
// (total order, and virtual synchrony: they move to the new view having
// delivered the same messages in the old one), each sender's messages in
// the order sent, every survivor's message delivered at both; what the
// killed process printed is a prefix of that. Then they leave, exiting 0.
func TestChatRealProcessesSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := startChat(t, ctx, "")
	b := startChat(t, ctx, a.addr)
	c := startChat(t, ctx, a.addr)
	ps := []*chatProc{a, b, c}
	name := map[*chatProc]string{a: "a", b: "b", c: "c"}
	waitFor := func(p *chatProc, what string, ok func([]string) bool) {
		t.Helper()
		for !ok(p.transcript(a.addr, b.addr, c.addr)) {
			if ctx.Err() != nil {
				t.Fatalf("%s never showed %s:\n%s", name[p], what, p.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	has := func(want ...string) func([]string) bool {
		return func(tr []string) bool {
			for _, w := range want {
				if !slices.ContainsFunc(tr, func(l string) bool { return strings.HasSuffix(l, "> "+w) }) {
					return false
				}
			}
			return true
		}
	}
	for _, p := range ps {
		waitFor(p, "the view of three", func(tr []string) bool { return len(tr) > 0 })
	}
	lines := func(p *chatProc, from, to int) (sent []string) {
		for i := from; i <= to; i++ {
			l := fmt.Sprintf("%s%d", name[p], i)
			if _, err := io.WriteString(p.in, l+"\n"); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, l)
		}
		return sent
	}
	var first []string
	for _, p := range ps {
		first = append(first, lines(p, 1, 20)...)
	}
	for _, p := range ps {
		waitFor(p, "the first messages", has(first...))
	}
	// Everyone casts again; c dies in the middle of it.
	var second []string
	for _, p := range ps[:2] {
		second = append(second, lines(p, 21, 40)...)
	}
	lines(c, 21, 40)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	twoView := "* view "
	for _, p := range ps[:2] {
		waitFor(p, "a view without c and every survivor's message", func(tr []string) bool {
			for _, l := range tr {
				if _, ms, ok := strings.Cut(strings.TrimPrefix(l, twoView), ": "); ok && strings.HasPrefix(l, twoView) && ms == a.addr+" "+b.addr {
					return has(second...)(tr)
				}
			}
			return false
		})
	}
	ta, tb, tc := a.transcript(a.addr, b.addr, c.addr), b.transcript(a.addr, b.addr, c.addr), c.transcript(a.addr, b.addr, c.addr)
	// Both survivors have reached the two-member view and delivered
	// their own casts; they may still be delivering: compare up to the
	// shorter (then the tail must be in the last view, same at both).
	n := min(len(ta), len(tb))
	if !slices.Equal(ta[:n], tb[:n]) {
		t.Fatalf("survivors differ:\na: %q\nb: %q", ta, tb)
	}
	if len(tc) > len(ta) || !slices.Equal(tc, ta[:len(tc)]) {
		t.Fatalf("the killed member's transcript is not a prefix of the survivors':\nc: %q\na: %q", tc, ta)
	}
	for _, tr := range [][]string{ta, tb} {
		last := map[string]int{}
		for _, l := range tr {
			from, body, ok := strings.Cut(l, "> ")
			if !ok {
				continue
			}
			k, err := strconv.Atoi(body[1:])
			if err != nil || k <= last[from] {
				t.Fatalf("%s: %q out of FIFO order (after %d): %q", from, body, last[from], tr)
			}
			last[from] = k
		}
	}
	for _, p := range ps[:2] {
		p.in.Close()
	}
	for _, p := range ps[:2] {
		select {
		case <-p.done:
			if p.err != nil {
				t.Fatalf("%s exited with %v:\n%s", name[p], p.err, p.out.String())
			}
			if !strings.Contains(p.out.String(), "* left g") {
				t.Fatalf("%s did not leave:\n%s", name[p], p.out.String())
			}
		case <-ctx.Done():
			t.Fatalf("%s did not exit after its input ended:\n%s", name[p], p.out.String())
		}
	}
}
