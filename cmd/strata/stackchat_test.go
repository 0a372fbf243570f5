package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
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
