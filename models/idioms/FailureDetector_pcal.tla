------------------------- MODULE FailureDetector_pcal -------------------------
\* Hand-written plain PlusCal equivalent of FailureDetector.tla: clients send
\* one request each to a server that may crash (Listing 9) and wait either for
\* the reply or for the perfect failure detector to report the server failed
\* (Listing 10 of the PGo paper). The mapping macros (ReliableFIFOLink and
\* PerfectFailureDetector) are written out inline. Expected to have exactly the
\* same state graph as FailureDetector.tla compiled.
\*
\* FailureDetector_pcal.cfg checks (ExploreFail = TRUE)
\*   - NoFalseSuspicion (invariant): a client gives up only on a failed server;
\*   - ReplyOK (invariant): outcomes are "waiting", "done" or "gaveUp";
\*   - AllClientsFinish (property): every client eventually stops waiting, with
\*     a reply or because the detector reported the crash (weak fairness).
EXTENDS Naturals, Sequences, TLC

CONSTANTS ExploreFail, NumClients

ServerId  == 0
ClientSet == 1..NumClients
NodeSet   == {ServerId} \cup ClientSet

(* --algorithm FailureDetector_pcal {
  variables
    net = [id \in NodeSet |-> <<>>];
    failed = [id \in NodeSet |-> FALSE];
    outcome = [c \in ClientSet |-> "waiting"];

  fair process (Server \in {ServerId})
    variables req;
  {
  srvLoop:
    while (TRUE) {
    srvRecv:
      await Len(net[self]) > 0;
      req := Head(net[self]);
      net[self] := Tail(net[self]);
      either { await ExploreFail; goto fail; } or { skip; };
    srvReply:
      net[req] := Append(net[req], "done");
      either { await ExploreFail; goto fail; } or { skip; };
    };
  fail:
    failed[self] := TRUE;
  }

  fair process (Client \in ClientSet)
    variables resp;
  {
  cliSend:
    net[ServerId] := Append(net[ServerId], self);
  cliWait:
    either {
      await Len(net[self]) > 0;
      resp := Head(net[self]);
      net[self] := Tail(net[self]);
      outcome[self] := resp;
    } or {
      await failed[ServerId];
      outcome[self] := "gaveUp";
    };
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

NoFalseSuspicion == \A c \in ClientSet : outcome[c] = "gaveUp" => failed[ServerId]

ReplyOK == \A c \in ClientSet : outcome[c] \in {"waiting", "done", "gaveUp"}

AllClientsFinish == \A c \in ClientSet : <>(outcome[c] /= "waiting")
==============================================================================
