---- MODULE macro_whole_ref_pcal ----
\* Hand translation of macro_whole_ref to PlusCal, written independently of
\* the compiler: the macros inlined, the two mailbox appends and the two
\* flag updates of a step folded into one assignment each.
EXTENDS Integers, Sequences, TLC

(*
--algorithm macro_whole_ref_pcal {
  variables gnet = [i \in 1..2 |-> <<>>], gen = [p \in (1..2) \X (1..2) |-> TRUE],
    gcnt = [i \in 1..2 |-> 0];

  procedure Bump() {
  bump:
    gcnt[self] := gcnt[self] + 1;
    return;
  }

  process (Node \in 1..2)
  variables seen = -1;
  {
  l1:
    gnet := [gnet EXCEPT ![self] = Append(@, 1), ![3 - self] = Append(@, 2)];
    seen := Len(gnet[self]);
    either {
      skip;
    } or {
      gen := [gen EXCEPT ![<<self, 1>>] = FALSE, ![<<self, 2>>] = FALSE];
      goto failed;
    };
  l2:
    call Bump();
  l3:
    gcnt[self] := gcnt[self] + 10;
    goto Done;
  failed:
    gcnt[self] := 100;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == /\ \A i \in 1..2 : Len(gnet[i]) \in {0, 1, 2, 3, 4} /\ gcnt[i] \in {0, 1, 11, 100}
       /\ \A i \in 1..2 : gcnt[i] = 100 => ~gen[<<i, 1>>] /\ ~gen[<<i, 2>>]
====
