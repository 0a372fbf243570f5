--------------------------- MODULE FailureDetector ---------------------------
\* MPCal model of the failure-detector idiom (Listing 10 of the PGo paper):
\* a client archetype sends a request and then waits in an either: receive the
\* reply, or "await fd[ServerId]" (only possible once the failure detector
\* reports the server failed) and give up. The server archetype may crash
\* (the Listing 9 idiom); its fail label records the failure in the global
\* failed, which the clients read through the PerfectFailureDetector mapping
\* macro of the paper's appendix.
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written FailureDetector_pcal.tla.
\*
\* FailureDetector.cfg checks (ExploreFail = TRUE)
\*   - NoFalseSuspicion (invariant): a client gives up only on a failed server;
\*   - ReplyOK (invariant): outcomes are "waiting", "done" or "gaveUp";
\*   - AllClientsFinish (property): every client eventually stops waiting
\*     (weak fairness). Without the fd branch this property is violated.
EXTENDS Naturals, Sequences, TLC

CONSTANTS ExploreFail, NumClients

ServerId  == 0
ClientSet == 1..NumClients
NodeSet   == {ServerId} \cup ClientSet

(*
--mpcal FailureDetector {

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

  mapping macro PerfectFailureDetector {
    read { yield $variable; }
    write { yield $value; }
  }

  archetype AServer(ref net[_], ref failed[_])
    variables req;
  {
  srvLoop:
    while (TRUE) {
    srvRecv:
      req := net[self];
      either { await ExploreFail; goto fail; } or { skip; };
    srvReply:
      net[req] := "done";
      either { await ExploreFail; goto fail; } or { skip; };
    };
  fail:
    failed[self] := TRUE;
  }

  archetype AClient(ref net[_], ref fd[_], ref outcome[_])
    variables resp;
  {
  cliSend:
    net[ServerId] := self;
  cliWait:
    either {
      resp := net[self];
      outcome[self] := resp;
    } or {
      await fd[ServerId]; \* Listing 10: only if the detector reports a failure
      outcome[self] := "gaveUp";
    };
  }

  variables
    net = [id \in NodeSet |-> <<>>];
    failed = [id \in NodeSet |-> FALSE];
    outcome = [c \in ClientSet |-> "waiting"];

  fair process (Server \in {ServerId}) == instance AServer(ref net[_], ref failed[_])
    mapping net[_] via ReliableFIFOLink;

  fair process (Client \in ClientSet) == instance AClient(ref net[_], ref failed[_], ref outcome[_])
    mapping net[_] via ReliableFIFOLink
    mapping failed[_] via PerfectFailureDetector;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

NoFalseSuspicion == \A c \in ClientSet : outcome[c] = "gaveUp" => failed[ServerId]

ReplyOK == \A c \in ClientSet : outcome[c] \in {"waiting", "done", "gaveUp"}

AllClientsFinish == \A c \in ClientSet : <>(outcome[c] /= "waiting")
==============================================================================
