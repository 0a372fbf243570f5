---- MODULE crash_idiom ----
\* Golden: the crash idiom (Listing 9) at the end of a step: an either whose
\* first branch awaits a constant and jumps to a fail label.
EXTENDS Naturals, Sequences, TLC

CONSTANT ExploreFail

(*
--mpcal crash_idiom {
  archetype AWorker(ref done[_]) {
  work:
    done[self] := "working";
    either { await ExploreFail; goto fail; } or { skip; };
  finish:
    done[self] := "finished";
    goto over;
  fail:
    done[self] := "crashed";
  over:
    skip;
  }

  variables done = [i \in 1..2 |-> "idle"];

  process (Worker \in 1..2) == instance AWorker(ref done[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 1..2 : done[i] \in {"idle", "working", "finished", "crashed"}
====
