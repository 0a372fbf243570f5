package smr

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestAssembly drives the apply loop's part joiner with logs a deposed
// leader, a junk fill and stray parts can leave, and checks which
// commands come out.
func TestAssembly(t *testing.T) {
	part := func(prop, nonce, i, n uint64, s string) entry {
		return entry{kind: kindPart, proposer: prop, nonce: nonce, part: i, parts: n, payload: []byte(s)}
	}
	junk := entry{kind: kindJunk}
	noop := entry{kind: kindNoop, leader: 2, epoch: 3}
	batch := entry{kind: kindBatch, proposer: 1, nonce: 5, cmds: [][]byte{[]byte("x")}}
	cases := []struct {
		name string
		log  []entry
		want []string // commands joined, in order
		drop int      // partial commands dropped
	}{
		{"whole", []entry{part(1, 1, 0, 3, "ab"), part(1, 1, 1, 3, "cd"), part(1, 1, 2, 3, "e")}, []string{"abcde"}, 0},
		{"two in a row", []entry{part(1, 1, 0, 2, "a"), part(1, 1, 1, 2, "b"), part(1, 2, 0, 2, "c"), part(1, 2, 1, 2, "d")}, []string{"ab", "cd"}, 0},
		{"junk fill after the first part", []entry{part(1, 1, 0, 3, "a"), junk, junk}, nil, 1},
		{"junk fill between parts", []entry{part(1, 1, 0, 3, "a"), junk, part(1, 1, 2, 3, "c")}, nil, 1},
		{"a new leader's noop", []entry{part(1, 1, 0, 2, "a"), noop, part(1, 1, 1, 2, "b")}, nil, 1},
		{"a batch between", []entry{part(1, 1, 0, 2, "a"), batch, part(1, 1, 1, 2, "b")}, nil, 1},
		{"out of order", []entry{part(1, 1, 1, 2, "b"), part(1, 1, 0, 2, "a")}, nil, 0},
		{"another proposer's part", []entry{part(1, 1, 0, 2, "a"), part(2, 1, 1, 2, "b")}, nil, 1},
		{"another nonce", []entry{part(1, 1, 0, 2, "a"), part(1, 2, 1, 2, "b")}, nil, 1},
		{"another count", []entry{part(1, 1, 0, 2, "a"), part(1, 1, 1, 3, "b")}, nil, 1},
		{"a repeated part", []entry{part(1, 1, 0, 3, "a"), part(1, 1, 1, 3, "b"), part(1, 1, 1, 3, "b"), part(1, 1, 2, 3, "c")}, nil, 1},
		{"restart after an abandoned one", []entry{part(1, 1, 0, 3, "a"), part(1, 1, 1, 3, "b"), part(2, 7, 0, 2, "x"), part(2, 7, 1, 2, "y")}, []string{"xy"}, 1},
		{"abandoned, then a new one", []entry{part(1, 1, 0, 2, "a"), junk, part(1, 2, 0, 2, "c"), part(1, 2, 1, 2, "d")}, []string{"cd"}, 1},
	}
	for _, c := range cases {
		var a assembly
		var got []string
		drops := 0
		for _, e := range c.log {
			cmd, ok, dropped := a.add(e)
			if ok {
				got = append(got, string(cmd))
			}
			if dropped {
				drops++
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || drops != c.drop {
			t.Errorf("%s: joined %q dropping %d, want %q dropping %d", c.name, got, drops, c.want, c.drop)
		}
		if c.name == "whole" && a.open {
			t.Errorf("%s: the assembly stays open after its last part", c.name)
		}
	}
	// Parts from the encoder join to the command.
	cmd := []byte(strings.Repeat("0123456789", 100))
	var a assembly
	var out []byte
	for i, b := range encodeParts(4, 9, cmd, 128) {
		e, err := decodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		c, ok, _ := a.add(e)
		if ok {
			out = c
		} else if !a.open {
			t.Fatalf("part %d closed the assembly", i)
		}
	}
	if !bytes.Equal(out, cmd) {
		t.Fatalf("encoded parts joined to %d bytes, want %d", len(out), len(cmd))
	}
}
