--------------------------- MODULE FaultyLink_pcal ---------------------------
\* Hand-written plain PlusCal equivalent of FaultyLink.tla: stop-and-wait
\* transfer of the messages 1..MaxMsg from a sender to a receiver over links
\* that lose and duplicate messages (the FaultyLink idiom, Listing 8 of the PGo
\* paper, here with a duplicating branch too and a bounded buffer that drops
\* when full). The FaultyLink write body is written out inline at each send.
\* Expected to have exactly the same state graph as FaultyLink.tla compiled.
\*
\* FaultyLink_pcal.cfg checks
\*   - InOrder (invariant): the receiver delivered exactly 1..k for some k, in
\*     order, with no duplicate and no gap, despite loss and duplication;
\*   - BufferBound (invariant): no link ever holds more than BufSize + 1 messages.
EXTENDS Naturals, Sequences, TLC

CONSTANTS MaxMsg, BufSize

SenderId   == 1
ReceiverId == 2

(* --algorithm FaultyLink_pcal {
  variables
    net = [id \in {SenderId, ReceiverId} |-> <<>>];
    delivered = <<>>;

  process (Sender \in {SenderId})
    variables next = 1, ack;
  {
  sndLoop:
    while (next <= MaxMsg) {
    send:
      if (Len(net[ReceiverId]) < BufSize) {
        either {
          net[ReceiverId] := Append(net[ReceiverId], [seq |-> next]);
        } or {
          net[ReceiverId] := net[ReceiverId];
        } or {
          net[ReceiverId] := Append(Append(net[ReceiverId], [seq |-> next]), [seq |-> next]);
        };
      } else {
        net[ReceiverId] := net[ReceiverId];
      };
    waitAck:
      either {
        await Len(net[SenderId]) > 0;
        ack := Head(net[SenderId]);
        net[SenderId] := Tail(net[SenderId]);
        if (ack >= next) {
          next := ack + 1;
        };
      } or {
        skip; \* time out and send again
      };
    };
  }

  process (Receiver \in {ReceiverId})
    variables m;
  {
  rcvLoop:
    while (TRUE) {
    rcv:
      await Len(net[ReceiverId]) > 0;
      m := Head(net[ReceiverId]);
      net[ReceiverId] := Tail(net[ReceiverId]);
      if (m.seq = Len(delivered) + 1) {
        delivered := Append(delivered, m.seq);
      };
    sendAck:
      if (Len(net[SenderId]) < BufSize) {
        either {
          net[SenderId] := Append(net[SenderId], Len(delivered));
        } or {
          net[SenderId] := net[SenderId];
        } or {
          net[SenderId] := Append(Append(net[SenderId], Len(delivered)), Len(delivered));
        };
      } else {
        net[SenderId] := net[SenderId];
      };
    };
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

InOrder == delivered = [i \in 1..Len(delivered) |-> i] /\ Len(delivered) <= MaxMsg

BufferBound == \A id \in {SenderId, ReceiverId} : Len(net[id]) <= BufSize + 1
==============================================================================
