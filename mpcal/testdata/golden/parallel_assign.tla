---- MODULE parallel_assign ----
\* Golden: labels and := with || (a swap of two globals and of two locals in
\* one statement; an indexed left-hand side in a || group).
EXTENDS Naturals, Sequences, TLC

(*
--mpcal parallel_assign {
  archetype ASwap(ref a, ref b, ref arr)
    variables x = 1, y = 2;
  {
  swap:
    a := b || b := a;
  swapLocals:
    x := y || y := x || arr[1] := x;
  done:
    arr[2] := y;
  }

  variables a = "A", b = "B", arr = [i \in 1..2 |-> 0];

  process (Swap \in {1}) == instance ASwap(ref a, ref b, ref arr);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

SwapOK == {a, b} = {"A", "B"} /\ arr[1] \in {0, 1} /\ arr[2] \in {0, 1}
====
