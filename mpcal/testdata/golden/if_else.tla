---- MODULE if_else ----
\* Golden: if / else if / else statements, nested, without labels inside,
\* and an if without else.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal if_else {
  archetype AGrade(ref grade[_])
    variables n = 0;
  {
  loop:
    while (n < 5) {
      if (n = 0) {
        grade[n] := "zero";
      } else if (n < 3) {
        if (n % 2 = 1) { grade[n] := "small odd"; } else { grade[n] := "small even"; };
      } else {
        grade[n] := "big";
      };
      if (n = 4) { skip; };
      n := n + 1;
    };
  }

  variables grade = [i \in 0..4 |-> ""];

  process (Grade \in {1}) == instance AGrade(ref grade[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

GradeOK == grade[1] \in {"", "small odd"} /\ grade[4] \in {"", "big"}
====
