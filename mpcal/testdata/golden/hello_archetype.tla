---- MODULE hello_archetype ----
\* Golden: the smallest MPCal spec: one archetype with one ref parameter, a
\* define block, a global variable without initial value, one "=" process.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal hello_archetype {
  define {
    Greeting == "hello"
  }

  archetype AHello(ref out) {
  greet:
    out := Greeting;
  }

  variables out;

  process (Hello = 1) == instance AHello(ref out);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out \in {defaultInitValue, "hello"}
====
