---- MODULE macro_whole_ref ----
\* Golden: a ref x[_] resource passed whole to a macro, as PGo's systems
\* do (mayFail(self, netEnabled) for an archetype parameter
\* ref netEnabled[_]): the macro is expanded in place and indexes it. The
\* resource may be mapped (writes and reads go through the mapping macro)
\* or not, passed on to a nested macro, and written twice in one step by
\* the macro; a procedure takes it as ref c[_].
EXTENDS Integers, Sequences, TLC

(*
--mpcal macro_whole_ref {
  macro mayFail(me, enabled) {
    either {
      skip;
    } or {
      enabled[<<me, 1>>] := FALSE;
      enabled[<<me, 2>>] := FALSE;
      goto failed;
    };
  }

  macro send(net, to, m) {
    net[to] := m;
  }

  macro relay(net, to, m) {
    send(net, to, m);
  }

  macro peek(net, me, into) {
    into := Len(net[me]);
  }

  mapping macro Mailbox {
    read { yield $variable; }
    write { yield Append($variable, $value); }
  }

  procedure Bump(ref c[_]) {
  bump:
    c[self] := c[self] + 1;
    return;
  }

  archetype ANode(ref net[_], ref en[_], ref cnt[_])
  variables seen = -1;
  {
  l1:
    relay(net, self, 1);
    send(net, 3 - self, 2);
    peek(net, self, seen);
    mayFail(self, en);
  l2:
    call Bump(ref cnt[_]);
  l3:
    cnt[self] := cnt[self] + 10;
    goto Done;
  failed:
    cnt[self] := 100;
  }

  variables gnet = [i \in 1..2 |-> <<>>], gen = [p \in (1..2) \X (1..2) |-> TRUE],
    gcnt = [i \in 1..2 |-> 0];

  process (Node \in 1..2) == instance ANode(ref gnet[_], ref gen[_], ref gcnt[_])
    mapping gnet[_] via Mailbox;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == /\ \A i \in 1..2 : Len(gnet[i]) \in {0, 1, 2, 3, 4} /\ gcnt[i] \in {0, 1, 11, 100}
       /\ \A i \in 1..2 : gcnt[i] = 100 => ~gen[<<i, 1>>] /\ ~gen[<<i, 2>>]
====
