\* EXPECT: multiple-yield 13:5 the else path of the write body has no yield (position: the end of the body)
---- MODULE missing_yield_write ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_yield_write {
  mapping macro M {
    read { yield $variable; }
    write {
      if ($value > 0) {
        yield $value;
      };
    }
  }
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables a = 0;
  process (P \in {1}) == instance A(ref a) mapping a via M;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
