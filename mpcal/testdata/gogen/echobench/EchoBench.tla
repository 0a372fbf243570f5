----------------------------- MODULE EchoBench -----------------------------
\* The echo of `strata bench mpcal-go` (bench/mpcalgo): the client sends
\* NumRequests numbered requests one at a time, each after the reply to the
\* previous one, and checks each reply; the server sends every request back
\* unchanged. The client writes the number of each checked reply to lap (a
\* resource of the benchmark that timestamps its commits). Each section
\* has at most one send, so the relaxed mailbox mode is exact for it.
\* echobench.go beside it is what `strata mpcal gogen` makes of it.
EXTENDS Naturals, Sequences, TLC

CONSTANTS NumRequests, ServerID

(*
--mpcal EchoBench {
  archetype AServer(ref net[_])
    variables req;
  {
  serve:
    while (TRUE) {
      req := net[self];
      net[req.from] := req;
    };
  }

  archetype AClient(ref net[_], ref lap)
    variables i = 1, resp;
  {
  request:
    while (i <= NumRequests) {
      net[ServerID] := [n |-> i, from |-> self];
    response:
      resp := net[self];
      assert resp.n = i;
      lap := i;
      i := i + 1;
    };
  }

  mapping macro FIFO {
    read {
      await Len($variable) > 0;
      with (m = Head($variable)) {
        $variable := Tail($variable);
        yield m;
      };
    }
    write { yield Append($variable, $value); }
  }

  mapping macro Sink {
    read { yield $variable; }
    write { yield $value; }
  }

  variables net = [id \in {ServerID, "client"} |-> <<>>], laps = 0;

  fair process (Server = ServerID) == instance AServer(ref net[_])
    mapping net[_] via FIFO;
  fair process (Client = "client") == instance AClient(ref net[_], ref laps)
    mapping net[_] via FIFO
    mapping laps via Sink;
}
*)
==============================================================================
