---- MODULE sequences ----
\* Golden: the Sequences operators (Append, Head, Tail, Len, SubSeq, \o,
\* Seq in a bounded form, SelectSeq) on a global queue.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal sequences {
  define {
    IsEven(x) == x % 2 = 0
    Evens(s) == SelectSeq(s, IsEven)
  }

  archetype AQueue(ref q) {
  push:
    q := Append(q, 1) \o <<2, 3>>;
  pop:
    await Len(q) > 0;
    q := Tail(q) \o SubSeq(<<4, 5, 6>>, 1, 2);
  filter:
    q := <<Head(q)>> \o Evens(q);
  }

  variables q = <<>>;

  process (Queue \in {1}) == instance AQueue(ref q);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

QueueOK == Len(q) <= 5 /\ q \in Seq(1..6)
====
