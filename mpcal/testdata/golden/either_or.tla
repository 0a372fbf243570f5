---- MODULE either_or ----
\* Golden: either/or with two and three branches, one branch with an await,
\* one with a nested either, in two archetype instances.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal either_or {
  archetype AChoose(ref out[_]) {
  choose:
    either {
      out[self] := 1;
    } or {
      out[self] := 2;
    } or {
      await self = 2;
      either { out[self] := 3; } or { out[self] := 4; };
    };
  }

  variables out = [p \in 1..2 |-> 0];

  process (Choose \in 1..2) == instance AChoose(ref out[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out[1] \in 0..2 /\ out[2] \in 0..4
====
