---- MODULE mapping_same_step ----
\* Golden: a global read and written in the same step through a mapping
\* macro (receive from a FIFO mailbox and reply on another mailbox of the
\* same network in one step: the generated PlusCal must combine the two
\* updates of network into one valid assignment).
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_same_step {
  mapping macro FIFO {
    read {
      await Len($variable) > 0;
      with (m = Head($variable)) {
        $variable := Tail($variable);
        yield m;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  archetype AEcho(ref net[_]) {
  echo:
    with (m = net[self]) {
      net[m.from] := m.body + 1;
    };
  }

  archetype AAsk(ref net[_], ref answer) {
  ask:
    net[1] := [from |-> self, body |-> 41];
  wait:
    answer := net[self];
  }

  variables network = [i \in 1..2 |-> <<>>], answer = 0;

  process (Echo \in {1}) == instance AEcho(ref network[_])
    mapping network[_] via FIFO;
  process (Ask \in {2}) == instance AAsk(ref network[_], ref answer)
    mapping network[_] via FIFO;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == answer \in {0, 42} /\ \A i \in 1..2 : Len(network[i]) <= 1
====
