---- MODULE sets_functions ----
\* Golden: set constructors (filter, map), SUBSET, UNION, \cup, \cap, \,
\* Cardinality, function constructors, [S -> T], DOMAIN, function application.
EXTENDS Naturals, FiniteSets, Sequences, TLC

CONSTANT Nodes

(*
--mpcal sets_functions {
  define {
    Big(S) == {x \in S : x > 1}
    Squares(S) == {x * x : x \in S}
    AllSubsets == SUBSET Nodes
    Flat == UNION {{1}, {2, 3}}
  }

  archetype ASets(ref f, ref s) {
  one:
    s := (Big(Nodes) \cup Squares(Nodes)) \ {4};
    f := [n \in Nodes |-> Cardinality({m \in Nodes : m < n})];
  two:
    with (g \in [Nodes -> {0, 1}]) {
      s := s \cap (Flat \cup DOMAIN g);
    };
  three:
    assert Cardinality(AllSubsets) = 2 ^ Cardinality(Nodes);
  }

  variables f = <<>>, s = {};

  process (Sets \in {1}) == instance ASets(ref f, ref s);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

SetOK == s \subseteq {1, 2, 3, 9}
====
