---- MODULE fifo_network ----
\* Golden: the reliable FIFO network of Listing 2 on ref net[_], with a
\* message record built from self, and a loop that receives and answers.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal fifo_network {
  mapping macro ReliableFIFOLink {
    read {
      await Len($variable) > 0;
      with (readMsg = Head($variable)) {
        $variable := Tail($variable);
        yield readMsg;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  archetype APinger(ref net[_])
    variables reply;
  {
  ping:
    net[0] := [from |-> self, n |-> self * 10];
  pong:
    reply := net[self];
    assert reply = self * 10 + 1;
  }

  archetype APonger(ref net[_])
    variables msg;
  {
  serve:
    while (TRUE) {
      msg := net[0];
    answer:
      net[msg.from] := msg.n + 1;
    };
  }

  variables network = [i \in 0..2 |-> <<>>];

  process (Ponger \in {0}) == instance APonger(ref network[_])
    mapping network[_] via ReliableFIFOLink;
  process (Pinger \in 1..2) == instance APinger(ref network[_])
    mapping network[_] via ReliableFIFOLink;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 0..2 : Len(network[i]) <= 2
====
