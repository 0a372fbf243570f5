---- MODULE write_only_assert ----
\* Golden: a read-only mapping macro whose write body is "assert FALSE" then
\* a yield (never executed), and a read body that ignores $variable and
\* yields an expression of constants.
EXTENDS Naturals, Sequences, TLC

CONSTANT Page

(*
--mpcal write_only_assert {
  mapping macro Constant {
    read { yield Page; }
    write {
      assert FALSE;
      yield $value;
    }
  }

  archetype AReader(ref fs[_], ref got) {
  read:
    got := fs["index"];
  }

  variables files = [f \in {"index"} |-> "unused"], got = "";

  process (Reader \in {1}) == instance AReader(ref files[_], ref got)
    mapping files[_] via Constant;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == got \in {"", Page}
====
