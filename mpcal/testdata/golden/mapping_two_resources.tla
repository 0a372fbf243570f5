---- MODULE mapping_two_resources ----
\* Golden: an archetype with three resources, two mapped by different
\* mapping macros and one unmapped, all used in one step.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_two_resources {
  mapping macro Input {
    read {
      await $variable /= <<>>;
      with (h = Head($variable)) {
        $variable := Tail($variable);
        yield h;
      };
    }
    write { yield Append($variable, $value); }
  }

  mapping macro Output {
    read { yield Len($variable); }
    write { yield Append($variable, $value); }
  }

  archetype APipe(ref in, ref out, ref count) {
  loop:
    while (TRUE) {
      out := in * 2;
      count := count + 1;
    };
  }

  variables src = <<1, 2>>, dst = <<>>, count = 0;

  process (Pipe \in {1}) == instance APipe(ref src, ref dst, ref count)
    mapping src via Input
    mapping dst via Output;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == count = Len(dst) /\ Len(src) + Len(dst) = 2
====
