---- MODULE quantifiers_choose ----
\* Golden: bounded \A and \E (several bound variables, tuple binding), CHOOSE,
\* in a define block, an await and an assert.
EXTENDS Naturals, Sequences, TLC

CONSTANT S

(*
--mpcal quantifiers_choose {
  define {
    AllPositive(T) == \A x \in T : x > 0
    HasPair(T) == \E x, y \in T : x /= y /\ x + y = 5
    Min(T) == CHOOSE x \in T : \A y \in T : x <= y
    SomePair(T) == CHOOSE <<a, b>> \in T \X T : a < b
  }

  archetype APick(ref picked) {
  pick:
    await AllPositive(S) /\ HasPair(S);
    picked := Min(S);
  check:
    assert \A y \in S : picked <= y;
    assert \E <<a, b>> \in S \X S : <<a, b>> = SomePair(S);
  }

  variables picked = 0;

  process (Pick \in {1}) == instance APick(ref picked);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

PickedOK == picked \in {0, 1}
====
