---- MODULE instance_process_name_pcal ----
\* Hand translation of instance_process_name to PlusCal, written
\* independently of the compiler.
EXTENDS Naturals, Sequences, TLC

(*
--algorithm instance_process_name_pcal {
  variables network = [i \in 1..2 |-> [queue |-> <<>>, enabled |-> TRUE]],
    sm = [i \in 1..2 |-> i * 10];

  process (node \in 1..2)
  variables sid = sm[self], got = 0;
  {
  send:
    await network[3 - self].enabled;
    with (q = Append(network[3 - self].queue, sid)) {
      if (Len(q) > 1) {
        network := [network EXCEPT ![3 - self].queue = q, ![self].enabled = FALSE];
      } else {
        network[3 - self].queue := q;
      };
    };
  recv:
    await Len(network[self].queue) > 0;
    got := Head(network[self].queue);
    network[self].queue := Tail(network[self].queue);
    assert got = (3 - self) * 10;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 1..2 : Len(network[i].queue) <= 1
====
