-------------------------------- MODULE Echo --------------------------------
\* An echo service for the Go back end's end-to-end test: the client sends
\* NumRequests numbered requests one at a time and checks each reply; the
\* server answers every request with its number doubled. The client writes
\* each checked reply to out (an output channel in Go). Exercises either,
\* with, a macro, a define, a quantifier and a record EXCEPT in generated
\* code. echo.go beside it is what `strata mpcal gogen` makes of it.
EXTENDS Naturals, Sequences, TLC

CONSTANTS NumRequests, ServerID, ClientID

(*
--mpcal Echo {
  define {
    Double(n) == n + n
    Reply(req) == [req EXCEPT !.n = Double(@), !.from = ServerID]
  }

  macro send(to, m) {
    net[to] := m;
  }

  archetype AEchoServer(ref net[_])
    variables req, served = 0;
  {
  serve:
    while (TRUE) {
    recv:
      req := net[self];
    reply:
      either {
        send(req.from, Reply(req));
      } or {
        with (r = Reply(req), k \in {1}) {
          assert r.n = 2 * req.n /\ k = 1;
          net[req.from] := r;
        };
      };
      served := served + 1;
    };
  }

  archetype AEchoClient(ref net[_], ref out)
    variables i = 1, resp;
  {
  loop:
    while (i <= NumRequests) {
    request:
      send(ServerID, [n |-> i, from |-> self]);
    response:
      resp := net[self];
      assert resp.n = Double(i) /\ \A f \in DOMAIN resp : f \in {"n", "from"};
      out := resp.n;
      i := i + 1;
    };
  done:
    print <<"client done", self>>;
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

  variables net = [id \in {ServerID, ClientID} |-> <<>>], sink = 0;

  fair process (Server = ServerID) == instance AEchoServer(ref net[_])
    mapping net[_] via FIFO;
  fair process (Client = ClientID) == instance AEchoClient(ref net[_], ref sink)
    mapping net[_] via FIFO
    mapping sink via Sink;
}
*)
==============================================================================
