-------------------------------- MODULE Proc --------------------------------
\* Procedures in the Go back end, model-checked (Proc.cfg) and run as Go
\* (proc.go beside it; distsys's TestProcEndToEnd). The client asks the
\* server for the factorials of 1..N one at a time, then counts down from 3
\* into a local sequence. The server's loop calls Serve (a call inside a
\* while), which receives through its mailbox ref parameter, calls the
\* recursive Fact with a ref to the server's local acc, then calls Reply
\* (a procedure calling a procedure, the mailbox ref passed on). CountDown
\* recurses through a tail call (call; return) into a ref to the client's
\* local trail. Emit, called last, writes trail and "done" to the client's
\* out (a ref mapped in the model) in a loop made with goto. The model's
\* outs collects what the client writes; the invariant says that, once
\* the client is done, it is Expected, which the Go test compares with
\* what the generated code writes.
EXTENDS Naturals, Sequences, TLC

CONSTANTS N, ServerID, ClientID

(*
--mpcal Proc {
  procedure Fact(k, ref acc) {
  fact:
    if (k > 1) {
      acc := acc * k;
      call Fact(k - 1, ref acc);
    };
  factRet:
    return;
  }

  procedure Reply(ref net[_], to, v) {
  send:
    net[to] := v;
    return;
  }

  procedure Serve(ref net[_], ref acc)
    variables req;
  {
  recv:
    req := net[self];
  compute:
    acc := 1;
    call Fact(req.n, ref acc);
  answer:
    call Reply(ref net[_], req.from, [n |-> req.n, fact |-> acc]);
    return;
  }

  \* A local's initial value may read the parameters (not compute with
  \* them: PlusCal also evaluates it in Init, where from is not set).
  procedure CountDown(from, ref log)
    variables cur = from;
  {
  countDown:
    log := Append(log, cur);
    if (cur > 0) {
      call CountDown(cur - 1, ref log);
      return;
    } else {
      return;
    };
  }

  \* Writes each element of vs to sink, looping with goto.
  procedure Emit(ref sink, vs)
    variables rest = vs;
  {
  emit:
    if (rest /= <<>>) {
      sink := Head(rest);
      rest := Tail(rest);
      goto emit;
    };
  emitted:
    return;
  }

  archetype AServer(ref net[_])
    variables acc = 1, served = 0;
  {
  serverLoop:
    while (TRUE) {
      call Serve(ref net[_], ref acc);
    counted:
      served := served + 1;
    };
  }

  archetype AClient(ref net[_], ref out)
    variables i = 1, resp, trail = <<>>;
  {
  clientLoop:
    while (i <= N) {
    ask:
      net[ServerID] := [n |-> i, from |-> self];
    answered:
      resp := net[self];
      assert resp.n = i;
      out := resp.fact;
      i := i + 1;
    };
  count:
    out := "countdown";
    call CountDown(3, ref trail);
  report:
    call Emit(ref out, <<trail, "done">>);
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

  mapping macro Collect {
    read { yield $variable; }
    write { yield Append($variable, $value); }
  }

  variables net = [id \in {ServerID, ClientID} |-> <<>>], outs = <<>>;

  fair process (Server = ServerID) == instance AServer(ref net[_])
    mapping net[_] via FIFO;
  fair process (Client = ClientID) == instance AClient(ref net[_], ref outs)
    mapping net[_] via FIFO
    mapping outs via Collect;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

\* With N = 3. TestProcEndToEnd reads this line and compares it with the
\* outputs of the generated code.
Expected == <<1, 2, 6, "countdown", <<3, 2, 1, 0>>, "done">>

OutputsAsModeled == pc[ClientID] = "Done" => outs = Expected

\* The client finishes (the server then waits for a request forever).
ClientFinishes == <>(pc[ClientID] = "Done")
==============================================================================
