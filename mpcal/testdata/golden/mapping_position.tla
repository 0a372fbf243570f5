---- MODULE mapping_position ----
\* Golden: "mapping @2 via M" maps the instance's second argument by its
\* position (the same global is passed twice, mapped only in position 2);
\* "mapping @1[_] via" maps an indexed argument by position.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_position {
  mapping macro Double {
    read { yield $variable * 2; }
    write { yield $value; }
  }

  archetype ATwoViews(ref raw, ref doubled, ref out) {
  look:
    out := <<raw, doubled>>;
  }

  archetype AIndexed(ref cells[_], ref out) {
  look:
    out := cells[1];
  }

  variables v = 3, cells = [i \in 1..2 |-> 4], o1 = <<>>, o2 = 0;

  process (Views \in {1}) == instance ATwoViews(ref v, ref v, ref o1)
    mapping @2 via Double;

  process (Indexed \in {2}) == instance AIndexed(ref cells[_], ref o2)
    mapping @1[_] via Double;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == o1 \in {<<>>, <<3, 6>>} /\ o2 \in {0, 8}
====
