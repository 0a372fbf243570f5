------------------------------ MODULE FDWatch ------------------------------
\* A watcher of one peer through PGo's failure detector resource (fd[_],
\* distsys.FailureDetector in Go): it reports fd[Peer] once at the start
\* (FALSE while the peer is alive), waits until the peer is suspected
\* (await fd[Peer] retries the section until then) and reports fd[Peer]
\* again (TRUE). The distsys test TestFailureDetectorSeesClosedPeer runs
\* it; fdwatch.go beside it is what `strata mpcal gogen` makes of it.
EXTENDS Naturals, TLC

CONSTANTS Peer

(*
--mpcal FDWatch {
  archetype AWatcher(ref fd[_], ref out)
  {
  first:
    out := fd[Peer];
  waitDown:
    await fd[Peer];
  down:
    out := fd[Peer];
  }

  mapping macro Sink {
    read { yield $variable; }
    write { yield $value; }
  }

  mapping macro PerfectFD {
    read { yield FALSE; }
    write { assert FALSE; yield $value; }
  }

  variables fds = [p \in {Peer} |-> FALSE], seen = FALSE;

  fair process (Watcher = "watcher") == instance AWatcher(ref fds[_], ref seen)
    mapping fds[_] via PerfectFD
    mapping seen via Sink;
}
*)
==============================================================================
