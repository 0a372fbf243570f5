---- MODULE records_tuples ----
\* Golden: record constructors, record sets [f : S], field access, tuples,
\* tuple indexing and a set of tuples (\X).
EXTENDS Naturals, Sequences, TLC

(*
--mpcal records_tuples {
  define {
    Msgs == [kind : {"req", "ack"}, seq : 0..2]
    Pairs == {1, 2} \X {"a", "b"}
  }

  archetype ABuild(ref log) {
  build:
    with (m \in Msgs, p \in Pairs) {
      log := <<[m EXCEPT !.seq = 0], p[2], <<p[1], m.kind>> >>;
    };
  }

  variables log = <<>>;

  process (Build \in {1}) == instance ABuild(ref log);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

LogOK == log = <<>> \/ (log[1].seq = 0 /\ log[2] \in {"a", "b"})
====
