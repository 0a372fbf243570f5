---- MODULE instance_process_name ----
\* Golden: PGo-style instances. The process's name stands for its id in
\* the instance's arguments (sm[node] for process (node \in S)), and one
\* global is passed as three ref parameters with three mapping macros (a
\* FIFO queue, its length, its enabled flag), written through two of them
\* in one step.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal instance_process_name {
  mapping macro FIFO {
    read {
      await Len($variable.queue) > 0;
      with (m = Head($variable.queue)) {
        $variable := [queue |-> Tail($variable.queue), enabled |-> $variable.enabled];
        yield m;
      };
    }
    write {
      await $variable.enabled;
      yield [queue |-> Append($variable.queue, $value), enabled |-> $variable.enabled];
    }
  }

  mapping macro Toggle {
    read { yield $variable.enabled; }
    write { yield [queue |-> $variable.queue, enabled |-> $value]; }
  }

  mapping macro Length {
    read { yield Len($variable.queue); }
    write { assert FALSE; }
  }

  archetype ANode(ref net[_], ref netLen[_], ref netEn[_], sid)
  variables got = 0;
  {
  send:
    net[3 - self] := sid;
    if (netLen[3 - self] > 1) {
      netEn[self] := FALSE;
    };
  recv:
    got := net[self];
    assert got = (3 - self) * 10;
  }

  variables network = [i \in 1..2 |-> [queue |-> <<>>, enabled |-> TRUE]],
    sm = [i \in 1..2 |-> i * 10];

  process (node \in 1..2) == instance ANode(ref network[_], ref network[_], ref network[_], sm[node])
    mapping @1[_] via FIFO
    mapping @2[_] via Length
    mapping @3[_] via Toggle;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 1..2 : Len(network[i].queue) <= 1
====
