---- MODULE lock_listing2 ----
EXTENDS Naturals, Sequences, TLC
CONSTANTS NodeSet, LockMsg, UnlockMsg, GrantMsg
(*
--mpcal lock_listing2 {
  archetype AServer(ref network[_])
  variables msg, q = <<>>;
  {
  serverLoop:
    while (TRUE) {
    serverReceive:
      msg := network[self];
    serverRespond:
      if (msg.type = LockMsg) {
        if (q = <<>>) {
          network[msg.from] := GrantMsg;
        };
        q := Append(q, msg.from);
      } else if (msg.type = UnlockMsg) {
        q := Tail(q);
        if (q /= <<>>) {
          network[Head(q)] := GrantMsg;
        };
      };
    };
  }

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

  variables network = [id \in NodeSet |-> <<>>];

  fair process (Server \in {1}) == instance AServer(ref network[_])
    mapping network[_] via ReliableFIFOLink;
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
