---- MODULE multiple_instances ----
\* Golden: one archetype instantiated by three process declarations bound to
\* different globals, with and without a mapping macro, so that its locals
\* are duplicated per process (the compiler renames them).
EXTENDS Integers, Sequences, TLC

(*
--mpcal multiple_instances {
  mapping macro Neg {
    read { yield 0 - $variable; }
    write { yield 0 - $value; }
  }

  archetype AInc(ref cell)
    variables old;
  {
  inc:
    old := cell;
    cell := old + 1;
  }

  variables a = 0, b = 0, c = 0;

  process (IncA \in {1}) == instance AInc(ref a);
  process (IncB \in {2, 3}) == instance AInc(ref b);
  process (IncC \in {4}) == instance AInc(ref c)
    mapping c via Neg;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == a \in {0, 1} /\ b \in {0, 1, 2} /\ c \in {0, -1}
====
