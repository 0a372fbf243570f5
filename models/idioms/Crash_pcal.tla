------------------------------ MODULE Crash_pcal ------------------------------
\* Hand-written plain PlusCal equivalent of Crash.tla: a storage server that
\* may crash (the crash idiom, Listing 9 of the PGo paper) after storing a
\* request and after acknowledging it; a client sends NumReqs requests one at a
\* time and records the acknowledged ones. The ReliableFIFOLink mapping macro
\* is written out inline. Expected to have exactly the same state graph as
\* Crash.tla compiled.
\*
\* Crash_pcal.cfg checks (with ExploreFail = TRUE, so crashes are explored)
\*   - AckedDurable (invariant): every acknowledged request is on the disk,
\*     whatever crashes happen (the server stores before it acknowledges);
\*   - DiskOK (invariant): the disk holds only requests that were sent.
EXTENDS Naturals, Sequences, TLC

CONSTANTS ExploreFail, NumReqs

ServerId == 0
ClientId == 1

(* --algorithm Crash_pcal {
  variables
    net = [id \in {ServerId, ClientId} |-> <<>>];
    disk = {};
    acked = {};

  fair process (Server \in {ServerId})
    variables req;
  {
  srvLoop:
    while (TRUE) {
    srvRecv:
      await Len(net[ServerId]) > 0;
      req := Head(net[ServerId]);
      net[ServerId] := Tail(net[ServerId]);
    srvStore:
      disk := disk \cup {req};
      either { await ExploreFail; goto fail; } or { skip; };
    srvAck:
      net[ClientId] := Append(net[ClientId], req);
      either { await ExploreFail; goto fail; } or { skip; };
    };
  fail:
    skip;
  }

  fair process (Client \in {ClientId})
    variables i = 1, resp;
  {
  cliLoop:
    while (i <= NumReqs) {
      net[ServerId] := Append(net[ServerId], i);
    cliWait:
      await Len(net[ClientId]) > 0;
      resp := Head(net[ClientId]);
      net[ClientId] := Tail(net[ClientId]);
      acked := acked \cup {resp};
      i := i + 1;
    };
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

AckedDurable == acked \subseteq disk

DiskOK == disk \subseteq 1..NumReqs
==============================================================================
