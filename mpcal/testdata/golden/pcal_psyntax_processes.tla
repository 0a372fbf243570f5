---- MODULE pcal_psyntax_processes ----
\* Golden: plain PlusCal in P-syntax with a define, a macro, a procedure with
\* a local, processes (fair, \in and =), either/or, with, await, goto,
\* call/return; passed through unchanged.
EXTENDS Naturals, Sequences, TLC

(*
--algorithm pcal_psyntax_processes
variables queue = <<>>, served = 0;
define
  Full == Len(queue) >= 2
end define;

macro Put(v) begin
  await ~Full;
  queue := Append(queue, v);
end macro;

procedure Serve()
variables item = 0;
begin
  S1:
    await queue /= <<>>;
    item := Head(queue);
    queue := Tail(queue);
  S2:
    served := served + item;
    return;
end procedure;

fair process Producer \in 1..2
begin
  P1:
    either
      Put(self);
    or
      with x \in {10, 20} do
        Put(x);
      end with;
    end either;
end process;

fair process Consumer = 0
variables rounds = 0;
begin
  C1:
    if rounds < 2 then
      call Serve();
    else
      goto C3;
    end if;
  C2:
    rounds := rounds + 1;
    goto C1;
  C3:
    skip;
end process;
end algorithm;

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == Len(queue) <= 2 /\ served <= 40
====
