---- MODULE if_case_expr ----
\* Golden: IF/THEN/ELSE and CASE expressions (with and without OTHER, with a
\* nested IF inside a CASE arm) in a define block and in statements.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal if_case_expr {
  define {
    Sign(x) == CASE x > 0 -> 1
                 [] x = 0 -> 0
                 [] x < 0 -> 2
    Kind(x) == CASE x = 1 -> "one"
                 [] x = 2 -> IF TRUE THEN "two" ELSE "never"
                 [] OTHER -> "many"
  }

  archetype AClassify(ref out[_])
    variables i = 0;
  {
  loop:
    while (i < 4) {
      out[i] := <<Sign(i), Kind(i), IF i % 2 = 0 THEN "even" ELSE "odd">>;
      i := i + 1;
    };
  }

  variables out = [k \in 0..3 |-> <<>>];

  process (Classify \in {1}) == instance AClassify(ref out[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == /\ out[0] \in {<<>>, <<0, "many", "even">>}
         /\ out[2] \in {<<>>, <<1, "two", "even">>}
====
