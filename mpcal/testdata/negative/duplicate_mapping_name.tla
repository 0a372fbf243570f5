\* EXPECT: duplicate-mapping 22:13 network[_] mapped twice in one instance
---- MODULE duplicate_mapping_name ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal duplicate_mapping_name {
  mapping macro M1 {
    read { yield $variable; }
    write { yield $value; }
  }
  mapping macro M2 {
    read { yield $variable; }
    write { yield $value; }
  }
  archetype A(ref net[_]) {
  l1:
    net[1] := 1;
  }
  variables network = [i \in 1..2 |-> 0];
  process (P \in {1}) == instance A(ref network[_])
    mapping network[_] via M1
    mapping network[_] via M2;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
