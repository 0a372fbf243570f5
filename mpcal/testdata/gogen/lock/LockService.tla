----------------------------- MODULE LockService -----------------------------
\* The central lock service of the PGo paper (Listing 2, as in
\* models/lock/LockService.tla) for the Go back end's end-to-end test:
\* NumClients clients each take the lock Rounds times, and record entering
\* and leaving the critical section through the cs resource (an output
\* channel in Go, a sequence here), so that the test can check mutual
\* exclusion and progress. lock.go beside it is what `strata mpcal gogen`
\* makes of it (TestGoGenGolden keeps them in step).
EXTENDS Naturals, Sequences, TLC

CONSTANTS NumClients, Rounds

ServerID  == 0
ClientSet == 1..NumClients
NodeSet   == {ServerID} \cup ClientSet

LockMsg   == "lock"
UnlockMsg == "unlock"
GrantMsg  == "grant"

(*
--mpcal LockService {

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

  archetype AClient(ref network[_], ref cs)
    variables resp, round = 0;
  {
  clientLoop:
    while (round < Rounds) {
    requestLock:
      network[ServerID] := [type |-> LockMsg, from |-> self];
    receiveLock:
      resp := network[self];
    enterCS:
      assert resp = GrantMsg;
      cs := <<"enter", self>>;
    leaveCS:
      cs := <<"leave", self>>;
      network[ServerID] := [type |-> UnlockMsg, from |-> self];
      round := round + 1;
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

  mapping macro Log {
    read { yield $variable; }
    write { yield Append($variable, $value); }
  }

  variables network = [id \in NodeSet |-> <<>>], csLog = <<>>;

  fair process (Server \in {ServerID}) == instance AServer(ref network[_])
    mapping network[_] via ReliableFIFOLink;

  fair process (Client \in ClientSet) == instance AClient(ref network[_], ref csLog)
    mapping network[_] via ReliableFIFOLink
    mapping csLog via Log;
}
*)
==============================================================================
