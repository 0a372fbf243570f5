package mpcal

import (
	"fmt"
	"strings"
)

// Synthetic returns a valid MPCal module of about the given number of
// lines, for measuring the compiler: a reliable FIFO network as a mapping
// macro and as many archetypes as fit, each with a loop, mapped reads and
// writes, a with, an either and a procedure call, each instantiated once.
func Synthetic(lines int) []byte {
	var b strings.Builder
	b.WriteString("---- MODULE Synthetic ----\nEXTENDS Naturals, Sequences, TLC\nCONSTANT N\n(*\n--mpcal Synthetic {\n")
	b.WriteString(`  define {
    Bump(x) == x + 1
  }
  mapping macro FIFO {
    read {
      await Len($variable) > 0;
      with (msg = Head($variable)) {
        $variable := Tail($variable);
        yield msg;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }
  procedure Note(ref log, v) {
    note:
      log := Append(log, v);
      return;
  }
`)
	const header, perArchetype, tail = 24, 27, 6
	k := (lines - header - tail) / perArchetype
	if k < 1 {
		k = 1
	}
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, `  archetype A%d(ref net[_], ref log)
  variables m = 0, c = 0;
  {
  a%d_loop:
    while (c < 2) {
    a%d_recv:
      m := net[self];
      if (m > 0) {
        c := c + 1;
      } else {
        c := Bump(c);
      };
    a%d_send:
      with (d \in {self}) {
        either {
          net[d] := m + c;
        } or {
          net[d] := Bump(m);
        };
      };
    a%d_note:
      call Note(ref log, m);
    };
  a%d_end:
    assert c >= 2;
  }

`, i, i, i, i, i, i)
	}
	b.WriteString("  variables net = [i \\in 0..N |-> <<0>>], log = <<>>;\n")
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "  fair process (P%d \\in {%d}) == instance A%d(ref net[_], ref log) mapping net[_] via FIFO;\n", i, i, i)
	}
	b.WriteString("}\n*)\n\\* BEGIN TRANSLATION\n\\* END TRANSLATION\n====\n")
	return []byte(b.String())
}
