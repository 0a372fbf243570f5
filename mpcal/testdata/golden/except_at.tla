---- MODULE except_at ----
\* Golden: EXCEPT with @, several updates in one EXCEPT, a nested path
\* ![i][j], a record field path !.f, in a define and in assignments.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal except_at {
  define {
    Bump(f, k) == [f EXCEPT ![k] = @ + 1]
  }

  archetype AUpdate(ref grid, ref rec) {
  a:
    grid := [grid EXCEPT ![1][2] = @ + 10, ![2][1] = 7];
  b:
    rec := [rec EXCEPT !.count = @ + 1, !.tags = Bump(@, "x")];
  c:
    grid := [grid EXCEPT ![1] = Bump(@, 1)];
  }

  variables
    grid = [i \in 1..2 |-> [j \in 1..2 |-> 0]];
    rec = [count |-> 0, tags |-> [t \in {"x", "y"} |-> 0]];

  process (Update \in {1}) == instance AUpdate(ref grid, ref rec);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

GridOK == grid[1][2] \in {0, 10} /\ grid[2][2] = 0 /\ rec.tags["y"] = 0
====
