---- MODULE await_when ----
\* Golden: await and its synonym when, as a first statement of a step and
\* after an assignment in the same step, synchronising two instances.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal await_when {
  archetype AProducer(ref flag, ref data) {
  produce:
    data := 42;
    flag := TRUE;
  }

  archetype AConsumer(ref flag, ref data, ref got) {
  waitFlag:
    await flag;
    got := data;
  waitAgain:
    when got = 42;
    got := got + 1;
  }

  variables flag = FALSE, data = 0, got = 0;

  process (Producer \in {1}) == instance AProducer(ref flag, ref data);
  process (Consumer \in {2}) == instance AConsumer(ref flag, ref data, ref got);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

GotOK == got \in {0, 42, 43}
====
