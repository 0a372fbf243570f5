------------------------------ MODULE FaultyLink ------------------------------
\* MPCal model of the faulty-link idiom (Listing 8 of the PGo paper): the
\* FaultyLink mapping macro reads like a reliable FIFO link, but a write may
\* deliver the message, silently drop it (Listing 8's "yield $variable"), or
\* deliver it twice; a full buffer (BufSize) drops. A sender archetype transfers
\* the messages 1..MaxMsg stop-and-wait, retransmitting on a "timeout" (an
\* either branch), and a receiver archetype delivers in order and sends a
\* cumulative acknowledgement after each message it receives.
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written FaultyLink_pcal.tla.
\*
\* FaultyLink.cfg checks
\*   - InOrder (invariant): the receiver delivered exactly 1..k for some k, in
\*     order, with no duplicate and no gap, despite loss and duplication;
\*   - BufferBound (invariant): no link ever holds more than BufSize + 1 messages.
EXTENDS Naturals, Sequences, TLC

CONSTANTS MaxMsg, BufSize

SenderId   == 1
ReceiverId == 2

(*
--mpcal FaultyLink {

  \* Listing 8: the read is the reliable FIFO read; the write may lose (and
  \* here also duplicate) the message.
  mapping macro FaultyLink {
    read {
      await Len($variable) > 0;
      with (msg = Head($variable)) {
        $variable := Tail($variable);
        yield msg;
      };
    }
    write {
      if (Len($variable) < BufSize) {
        either {
          yield Append($variable, $value);
        } or {
          yield $variable; \* silently drop the message
        } or {
          yield Append(Append($variable, $value), $value); \* duplicate it
        };
      } else {
        yield $variable; \* buffer full: drop
      };
    }
  }

  archetype ASender(ref net[_])
    variables next = 1, ack;
  {
  sndLoop:
    while (next <= MaxMsg) {
    send:
      net[ReceiverId] := [seq |-> next];
    waitAck:
      either {
        ack := net[SenderId];
        if (ack >= next) {
          next := ack + 1;
        };
      } or {
        skip; \* time out and send again
      };
    };
  }

  archetype AReceiver(ref net[_], ref delivered)
    variables m;
  {
  rcvLoop:
    while (TRUE) {
    rcv:
      m := net[ReceiverId];
      if (m.seq = Len(delivered) + 1) {
        delivered := Append(delivered, m.seq);
      };
    sendAck:
      net[SenderId] := Len(delivered);
    };
  }

  variables
    net = [id \in {SenderId, ReceiverId} |-> <<>>];
    delivered = <<>>;

  process (Sender \in {SenderId}) == instance ASender(ref net[_])
    mapping net[_] via FaultyLink;

  process (Receiver \in {ReceiverId}) == instance AReceiver(ref net[_], ref delivered)
    mapping net[_] via FaultyLink;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

InOrder == delivered = [i \in 1..Len(delivered) |-> i] /\ Len(delivered) <= MaxMsg

BufferBound == \A id \in {SenderId, ReceiverId} : Len(net[id]) <= BufSize + 1
==============================================================================
