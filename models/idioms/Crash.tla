-------------------------------- MODULE Crash --------------------------------
\* MPCal model of the crash idiom (Listing 9 of the PGo paper): at the end of
\* a critical section that might fail, "either { await ExploreFail; goto fail; }
\* or { skip; }" lets the model checker explore a crash there (the process
\* jumps to its fail label and never serves again). A storage server archetype
\* stores each request on its disk (a shared resource) and then acknowledges
\* it, and may crash after either step; a client archetype sends NumReqs
\* requests one at a time over a reliable FIFO link and records the acks.
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written Crash_pcal.tla.
\*
\* Crash.cfg checks (with ExploreFail = TRUE, so crashes are explored)
\*   - AckedDurable (invariant): every acknowledged request is on the disk;
\*   - DiskOK (invariant): the disk holds only requests that were sent.
EXTENDS Naturals, Sequences, TLC

CONSTANTS ExploreFail, NumReqs

ServerId == 0
ClientId == 1

(*
--mpcal Crash {

  mapping macro ReliableFIFOLink {
    read {
      await Len($variable) > 0;
      with (msg = Head($variable)) {
        $variable := Tail($variable);
        yield msg;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  archetype AServer(ref net[_], ref disk)
    variables req;
  {
  srvLoop:
    while (TRUE) {
    srvRecv:
      req := net[ServerId];
    srvStore:
      disk := disk \cup {req};
      \* Listing 9: this critical section may end in a crash.
      either { await ExploreFail; goto fail; } or { skip; };
    srvAck:
      net[ClientId] := req;
      either { await ExploreFail; goto fail; } or { skip; };
    };
  fail:
    skip;
  }

  archetype AClient(ref net[_], ref acked)
    variables i = 1, resp;
  {
  cliLoop:
    while (i <= NumReqs) {
      net[ServerId] := i;
    cliWait:
      resp := net[ClientId];
      acked := acked \cup {resp};
      i := i + 1;
    };
  }

  variables
    net = [id \in {ServerId, ClientId} |-> <<>>];
    disk = {};
    acked = {};

  fair process (Server \in {ServerId}) == instance AServer(ref net[_], ref disk)
    mapping net[_] via ReliableFIFOLink;

  fair process (Client \in {ClientId}) == instance AClient(ref net[_], ref acked)
    mapping net[_] via ReliableFIFOLink;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

AckedDurable == acked \subseteq disk

DiskOK == disk \subseteq 1..NumReqs
==============================================================================
