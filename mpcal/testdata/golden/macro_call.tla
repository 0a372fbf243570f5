---- MODULE macro_call ----
\* Golden: PlusCal macros with parameters, one calling another, expanded in
\* an archetype (on a ref parameter and a local) and in a plain process.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal macro_call {
  macro Push(q, v) {
    q := Append(q, v);
  }

  macro PushTwice(q, v, w) {
    await Len(q) < 5;
    Push(q, v + w);
  }

  archetype AUser(ref queue)
    variables local = <<>>;
  {
  u1:
    Push(queue, self);
    Push(local, 0);
  u2:
    PushTwice(queue, 1, 2);
  }

  variables queue = <<>>;

  process (User \in 1..2) == instance AUser(ref queue);

  process (Plain \in {3}) {
  pl:
    Push(queue, 9);
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

QueueOK == Len(queue) <= 5 /\ \A i \in 1..Len(queue) : queue[i] \in {1, 2, 3, 9}
====
