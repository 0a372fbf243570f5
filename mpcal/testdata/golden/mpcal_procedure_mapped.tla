---- MODULE mpcal_procedure_mapped ----
\* Golden: an MPCal procedure whose ref parameter is bound, in different
\* instances, to a mapped resource and to an unmapped one (the compiler
\* specialises the procedure per binding), plus a ref a[_] procedure
\* parameter.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mpcal_procedure_mapped {
  procedure Bump(ref c) {
  bump:
    c := c + 1;
    return;
  }

  procedure Mark(ref flags[_], idx) {
  mark:
    flags[idx] := TRUE;
    return;
  }

  mapping macro Tens {
    read { yield $variable; }
    write { yield $variable + 10 * ($value - $variable); }
  }

  archetype AUse(ref counter, ref flags[_]) {
  a:
    call Bump(ref counter);
  b:
    call Mark(ref flags[_], self);
  }

  variables x = 0, y = 0, flags = [k \in 1..2 |-> FALSE];

  process (Mapped \in {1}) == instance AUse(ref x, ref flags[_])
    mapping x via Tens;
  process (Unmapped \in {2}) == instance AUse(ref y, ref flags[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == x \in {0, 10} /\ y \in {0, 1}
====
