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
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  syncBuf
	addr string
	done chan struct{} // closed when the process has exited, with err
	err  error
}

func startChat(t *testing.T, ctx context.Context, name, join string) *chatProc {
	t.Helper()
	args := []string{"stack", "chat", "g", "--listen", "udp:127.0.0.1:0", "--heartbeat", "50ms", "--suspect", "2s"}
	if join != "" {
		args = append(args, "--join", join)
	}
	p := &chatProc{name: name, cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
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
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
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

// startChats starts a group of chat processes named a, b, c, ... (the
// others join through a) and waits until each is in a view of them all.
func startChats(t *testing.T, ctx context.Context, n int) []*chatProc {
	t.Helper()
	var ps []*chatProc
	for i := range n {
		join := ""
		if i > 0 {
			join = ps[0].addr
		}
		ps = append(ps, startChat(t, ctx, string(rune('a'+i)), join))
	}
	for _, p := range ps {
		waitShow(t, ctx, p, ps, "the view of all", func(tr []string) bool { return len(tr) > 0 })
	}
	return ps
}

// transcript is what p printed of the group from its first view of all
// of ps on: messages and views, in order ("view change under way" lines
// left out).
func (p *chatProc) transcript(ps []*chatProc) []string {
	var out []string
	on := false
	for _, l := range strings.Split(p.out.String(), "\n") {
		if !on && isView(l) {
			on = true
			for _, q := range ps {
				on = on && strings.Contains(l+" ", " "+q.addr+" ")
			}
		}
		if on && (strings.HasPrefix(l, "<") || isView(l)) {
			out = append(out, l)
		}
	}
	return out
}

// isView reports whether l announces a view ("* view ID: MEMBERS", not
// "* view change under way").
func isView(l string) bool {
	return strings.HasPrefix(l, "* view ") && !strings.HasPrefix(l, "* view change")
}

// viewOf reports whether view line l has exactly the members ps, in order.
func viewOf(l string, ps ...*chatProc) bool {
	_, ms, ok := strings.Cut(l, ": ")
	want := make([]string, len(ps))
	for i, p := range ps {
		want[i] = p.addr
	}
	return ok && isView(l) && ms == strings.Join(want, " ")
}

// waitShow waits until p's transcript (from the view of all of ps) is ok.
func waitShow(t *testing.T, ctx context.Context, p *chatProc, ps []*chatProc, what string, ok func([]string) bool) {
	t.Helper()
	for !ok(p.transcript(ps)) {
		if ctx.Err() != nil {
			t.Fatalf("%s never showed %s:\n%s", p.name, what, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// delivered reports whether a transcript has the messages want.
func delivered(want ...string) func([]string) bool {
	return func(tr []string) bool {
		for _, w := range want {
			if !slices.ContainsFunc(tr, func(l string) bool { return strings.HasSuffix(l, "> "+w) }) {
				return false
			}
		}
		return true
	}
}

// cast types lines NAME<from> .. NAME<to> into p and returns them.
func (p *chatProc) cast(t *testing.T, from, to int) (sent []string) {
	for i := from; i <= to; i++ {
		l := fmt.Sprintf("%s%d", p.name, i)
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, l)
	}
	return sent
}

// castAll has every process of ps cast lines from .. to and waits until
// all of ps delivered them all.
func castAll(t *testing.T, ctx context.Context, ps []*chatProc, from, to int) {
	t.Helper()
	var sent []string
	for _, p := range ps {
		sent = append(sent, p.cast(t, from, to)...)
	}
	for _, p := range ps {
		waitShow(t, ctx, p, ps, fmt.Sprintf("messages %d-%d of all", from, to), delivered(sent...))
	}
}

// checkFIFO fails unless every sender's messages appear in the order sent.
func checkFIFO(t *testing.T, who string, tr []string) {
	t.Helper()
	last := map[string]int{}
	for _, l := range tr {
		from, body, ok := strings.Cut(l, "> ")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(body[1:])
		if err != nil || k <= last[from] {
			t.Fatalf("%s: %q out of FIFO order (after %d): %q", who, body, last[from], tr)
		}
		last[from] = k
	}
}

// checkVsync checks virtual synchrony on the transcripts of ps: two
// processes that print the same view and then the same next view printed
// the same messages, in the same order, in between. (A view line names
// the view's ID and members; the one a process is still in is left out.)
func checkVsync(t *testing.T, ps []*chatProc) {
	t.Helper()
	type seg struct {
		view, next string
		msgs       []string
	}
	segs := map[string][]seg{}
	for _, p := range ps {
		var cur *seg
		for _, l := range p.transcript(ps) {
			if isView(l) {
				if cur != nil {
					cur.next = l
					segs[p.name] = append(segs[p.name], *cur)
				}
				cur = &seg{view: l}
				continue
			}
			if cur != nil {
				cur.msgs = append(cur.msgs, l)
			}
		}
	}
	for _, p := range ps {
		for _, q := range ps {
			if p.name >= q.name {
				continue
			}
			for _, x := range segs[p.name] {
				for _, y := range segs[q.name] {
					if x.view == y.view && x.next == y.next && !slices.Equal(x.msgs, y.msgs) {
						t.Fatalf("%s and %s moved from %q to %q together but printed in it:\n%q\n%q", p.name, q.name, x.view, x.next, x.msgs, y.msgs)
					}
				}
			}
		}
	}
}

// samePrefix fails unless one of x and y is a prefix of the other.
func samePrefix(t *testing.T, what string, x, y []string) {
	t.Helper()
	n := min(len(x), len(y))
	if !slices.Equal(x[:n], y[:n]) {
		t.Fatalf("%s differ:\n%q\n%q", what, x, y)
	}
}

// leaveAll ends the input of ps, which must then leave and exit 0.
func leaveAll(t *testing.T, ctx context.Context, ps ...*chatProc) {
	t.Helper()
	for _, p := range ps {
		p.in.Close()
	}
	for _, p := range ps {
		select {
		case <-p.done:
			if p.err != nil {
				t.Fatalf("%s exited with %v:\n%s", p.name, p.err, p.out.String())
			}
			if !strings.Contains(p.out.String(), "* left g") {
				t.Fatalf("%s did not leave:\n%s", p.name, p.out.String())
			}
		case <-ctx.Done():
			t.Fatalf("%s did not exit after its input ended:\n%s", p.name, p.out.String())
		}
	}
}

// Three chat processes form a group; all cast; one is killed with
// SIGKILL while everyone is casting. The two survivors install a view
// without it and print the same messages and views in the same order
// (total order, and virtual synchrony: they move to the new view having
// delivered the same messages in the old one), each sender's messages in
// the order sent, every survivor's message delivered at both; what the
// killed process printed is a prefix of that. Then they leave at once,
// exiting 0.
func TestChatRealProcessesSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ps := startChats(t, ctx, 3)
	a, b, c := ps[0], ps[1], ps[2]
	castAll(t, ctx, ps, 1, 20)
	// Everyone casts again; c dies in the middle of it.
	second := append(a.cast(t, 21, 40), b.cast(t, 21, 40)...)
	c.cast(t, 21, 40)
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
	for _, p := range ps[:2] {
		waitShow(t, ctx, p, ps, "a view without c and every survivor's message", func(tr []string) bool {
			return slices.ContainsFunc(tr, func(l string) bool { return viewOf(l, a, b) }) && delivered(second...)(tr)
		})
	}
	ta, tb, tc := a.transcript(ps), b.transcript(ps), c.transcript(ps)
	// The survivors may still be delivering: one is a prefix of the other.
	samePrefix(t, "the survivors' transcripts", ta, tb)
	if len(tc) > len(ta) || !slices.Equal(tc, ta[:len(tc)]) {
		t.Fatalf("the killed member's transcript is not a prefix of the survivors':\nc: %q\na: %q", tc, ta)
	}
	checkFIFO(t, "a", ta)
	checkFIFO(t, "b", tb)
	leaveAll(t, ctx, a, b)
}

// Three chat processes form a group; c is stopped (SIGSTOP) for longer
// than the suspicion window while a and b cast: they go on in a view of
// two, and c, continued (SIGCONT), finds itself alone and merges back.
// All three end in one view of the three, in which they print the same
// messages in the same order; virtual synchrony holds throughout (those
// that move together from a view to the next printed the same in it);
// every transcript keeps FIFO order; then all three leave at once,
// exiting 0.
func TestChatRealProcessesPartitionHeals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ps := startChats(t, ctx, 3)
	a, b, c := ps[0], ps[1], ps[2]
	castAll(t, ctx, ps, 1, 10)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	second := append(a.cast(t, 11, 20), b.cast(t, 11, 20)...)
	for _, p := range ps[:2] {
		waitShow(t, ctx, p, ps, "a view without c and the second messages", func(tr []string) bool {
			return slices.ContainsFunc(tr, func(l string) bool { return viewOf(l, a, b) }) && delivered(second...)(tr)
		})
	}
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// One view of the three again, a later one than the first, the same
	// at all (its line, ID and members; c, alone meanwhile, may have
	// had views of the same IDs with itself only).
	merged := func(p *chatProc) string {
		tr := p.transcript(ps)
		for i := len(tr) - 1; i > 0; i-- {
			if isView(tr[i]) {
				if _, ms, _ := strings.Cut(tr[i], ": "); len(strings.Fields(ms)) == 3 {
					return tr[i]
				}
				return ""
			}
		}
		return ""
	}
	for {
		ma, mb, mc := merged(a), merged(b), merged(c)
		if ma != "" && ma == mb && mb == mc && c.lastView() == mc {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no common view of three after c continued:\na: %s\nb: %s\nc: %s", a.out.String(), b.out.String(), c.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	castAll(t, ctx, ps, 21, 30)
	// a and b need not move together through the merge (one may join
	// c's side before the other): what holds is virtual synchrony.
	checkVsync(t, ps)
	// In the merged view, all three print the same.
	since := func(p *chatProc) []string {
		tr := p.transcript(ps)
		return tr[slices.Index(tr, merged(a)):]
	}
	samePrefix(t, "a's and c's transcripts in the merged view", since(a), since(c))
	samePrefix(t, "b's and c's transcripts in the merged view", since(b), since(c))
	for _, p := range ps {
		checkFIFO(t, p.name, p.transcript(ps))
	}
	leaveAll(t, ctx, a, b, c)
}

// lastView is the last view line p printed.
func (p *chatProc) lastView() string {
	ls := strings.Split(p.out.String(), "\n")
	for i := len(ls) - 1; i >= 0; i-- {
		if isView(ls[i]) {
			return ls[i]
		}
	}
	return ""
}
