---- MODULE mpcal_procedure_ref ----
\* Golden: an MPCal procedure with a ref parameter and a non-ref parameter,
\* called from an archetype with "ref" on the argument; the procedure calls
\* another MPCal procedure passing its own ref parameter on.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mpcal_procedure_ref {
  procedure AddTo(ref acc, amount) {
  add:
    acc := acc + amount;
    return;
  }

  procedure AddTwice(ref acc2, amount) {
  first:
    call AddTo(ref acc2, amount);
  second:
    call AddTo(ref acc2, amount);
    return;
  }

  archetype AUser(ref total)
    variables mine = 0;
  {
  u1:
    call AddTwice(ref total, 5);
  u2:
    call AddTo(ref mine, 1);
  }

  variables total = 0;

  process (User \in {1}) == instance AUser(ref total);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == total \in {0, 5, 10}
====
