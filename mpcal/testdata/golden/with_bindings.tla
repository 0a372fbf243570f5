---- MODULE with_bindings ----
\* Golden: with statements with several bindings mixing \in and =, a binding
\* that depends on an earlier one, and nested withs.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal with_bindings {
  archetype APick(ref out) {
  pick:
    with (x \in 1..3, y = x * 10, z \in {y, y + 1}) {
      out := out \cup {z};
    };
  nested:
    with (a = 5) {
      with (b \in {a, a + 1}) {
        out := out \cup {b};
      };
    };
  }

  variables out = {};

  process (Pick \in {1}) == instance APick(ref out);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out \subseteq {10, 11, 20, 21, 30, 31, 5, 6}
====
