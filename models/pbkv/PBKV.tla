-------------------------------- MODULE PBKV --------------------------------
\* A primary-backup key-value store (the PGo paper's PGo-PBKV, §6, written
\* for Strata): NumReplicas replicas in a fixed order; the primary is the
\* lowest-numbered replica the failure detector does not suspect
\* (crash-stop, `ref fd[_]`). Clients send each request to the replica they
\* take for the primary. The primary applies a put to its store (once per
\* client and sequence number), then pushes its whole state (store and the
\* table of applied requests) to every backup its detector does not
\* suspect, waits until each of them acknowledged or is suspected, and only
\* then answers; a get is answered the same way, after the same push, so
\* that a value a client has seen is on every live replica. A backup takes a
\* pushed state only from the highest primary it has heard from (a state
\* from an older primary, still in flight when that one crashed, is
\* refused). A client whose replica is suspected retries the same request
\* (same sequence number) at the next replica; a replica that is not the
\* primary answers with a redirect naming the one it believes is.
\*
\* What is assumed: the failure detector is perfect (fd[r] becomes TRUE
\* only after r crashed, and eventually does), as in the PGo paper's
\* model; links between live replicas are reliable and FIFO per sender but
\* messages from different senders may overtake each other; a crashed
\* replica never comes back. What TLC checks (PBKV.cfg):
\*   - ReadSeesLastAcked: a get returns a value at least as new as the
\*     last put of its key acknowledged before the get was sent (each key
\*     has one writer, whose values increase, so "newer" is ">");
\*   - AckedNotLost: every live replica holds every acknowledged put
\*     (hence so does the primary after the old one crashed);
\*   - TypeOK.
\* BugAckEarly = TRUE (PBKV_BugAckEarly.cfg) makes the primary answer
\* without waiting for the backups' acknowledgements; TLC must find a
\* violation. In Go (`strata mpcal gogen`, package models/pbkv/gen) the
\* Crashable set is empty, so the crash points compile to nothing that runs.
EXTENDS Naturals, Sequences, TLC, FiniteSets

CONSTANTS NumReplicas, NumClients, NumOps, Crashable, BugAckEarly

Replicas == 1..NumReplicas
Clients  == (NumReplicas + 1)..(NumReplicas + NumClients)
Keys     == Clients   \* in the model each client writes its own key
NoValue  == 0         \* what a get of a key never written returns

\* The key a client's i-th operation (a get when i is even) reads: its own
\* key, then the next client's.
ReadKey(c, i) == IF (i \div 2) % 2 = 1 THEN c ELSE (((c - NumReplicas) % NumClients) + NumReplicas + 1)

\* Whether a put from client c with sequence number s is not yet in the
\* applied table a.
Fresh(a, c, s) == c \notin DOMAIN a \/ a[c] < s

Lookup(st, k) == IF k \in DOMAIN st THEN st[k] ELSE NoValue

(*
--mpcal PBKV {

  \* A replica that may crash (who \in Crashable) may stop here.
  macro MayCrash(who) {
    if (who \in Crashable) {
      either { goto crash; } or { skip; };
    };
  }

  archetype AReplica(ref net[_], ref fd[_], ref primary, ref reqs[_], ref resps[_])
    variables store = <<>>, applied = <<>>, maxSeen = 0, version = 0,
              msg, req, result, ok, waiting = {}, idx;
  {
  replicaLoop:
    while (TRUE) {
      either {
        \* As a backup: take a pushed state from the newest primary.
        msg := net[self];
        if (msg.type = "state") {
          if (msg.from >= maxSeen) {
            store := msg.store;
            applied := msg.applied;
            maxSeen := msg.from;
            net[msg.from] := [type |-> "ack", from |-> self, version |-> msg.version, ok |-> TRUE];
          } else {
            net[msg.from] := [type |-> "ack", from |-> self, version |-> msg.version, ok |-> FALSE];
          };
        };
        \* An "ack" here answers a push whose wait is over: dropped.
        goto replicaLoop;
      } or {
        req := reqs[self];
        if (primary /= self) {
          resps[req.from] := [type |-> "redirect", seq |-> req.seq, value |-> NoValue, primary |-> primary];
          goto replicaLoop;
        } else {
          if (req.type = "put" /\ Fresh(applied, req.from, req.seq)) {
            store := (req.key :> req.value) @@ store;
            applied := (req.from :> req.seq) @@ applied;
          };
          result := IF req.type = "get" THEN Lookup(store, req.key) ELSE NoValue;
          maxSeen := self;
          version := version + 1;
          ok := TRUE;
          waiting := {};
          idx := 1;
        };
      };
    forward:
      \* Push the state to every backup not suspected, one at a time.
      while (idx <= NumReplicas) {
        if (idx /= self /\ ~fd[idx]) {
          net[idx] := [type |-> "state", from |-> self, version |-> version, store |-> store, applied |-> applied];
          waiting := waiting \union {idx};
        };
        idx := idx + 1;
        MayCrash(self);
      };
    collect:
      \* Wait until every backup pushed to acknowledged or is suspected.
      while (waiting /= {} /\ ~BugAckEarly) {
        either {
          msg := net[self];
          if (msg.type = "ack" /\ msg.version = version /\ msg.from \in waiting) {
            waiting := waiting \ {msg.from};
            ok := ok /\ msg.ok;
          } else if (msg.type = "state") {
            \* Another replica acts as primary while this one is: refuse.
            net[msg.from] := [type |-> "ack", from |-> self, version |-> msg.version, ok |-> FALSE];
          };
        } or {
          with (b \in waiting) {
            await fd[b];
            waiting := waiting \ {b};
          };
        };
      };
    reply:
      if (ok) {
        resps[req.from] := [type |-> "ok", seq |-> req.seq, value |-> result, primary |-> self];
      } else {
        resps[req.from] := [type |-> "redirect", seq |-> req.seq, value |-> NoValue, primary |-> primary];
      };
      MayCrash(self);
    };
  crash:
    fd[self] := TRUE;
    primary := self;
  }

  \* The client of the model; the Go client (models/pbkv/client.go)
  \* follows the same protocol, with a timeout in place of fd.
  archetype AClient(ref reqs[_], ref resps[_], ref fd[_], ref acked[_], ref reads)
    variables i = 1, replica = 1, op, floor, resp;
  {
  clientLoop:
    while (i <= NumOps) {
      if (i % 2 = 1) {
        op := [type |-> "put", key |-> self, value |-> i];
      } else {
        op := [type |-> "get", key |-> ReadKey(self, i), value |-> NoValue];
      };
      floor := acked[op.key];
    send:
      reqs[replica] := [type |-> op.type, key |-> op.key, value |-> op.value, from |-> self, seq |-> i];
    wait:
      either {
        resp := resps[self];
        if (resp.seq /= i) {
          goto wait;
        } else if (resp.type = "redirect") {
          replica := resp.primary;
          goto send;
        } else {
          if (op.type = "put") {
            acked[op.key] := op.value;
          } else {
            reads := Append(reads, [key |-> op.key, value |-> resp.value, floor |-> floor]);
          };
          i := i + 1;
        };
      } or {
        await fd[replica];
        replica := (replica % NumReplicas) + 1;
        goto send;
      };
    };
  }

  \* Messages to a replica, one FIFO queue per sender; a read takes the
  \* head of any sender's queue (senders overtake one another).
  mapping macro PerSenderFIFO {
    read {
      with (s \in {x \in DOMAIN $variable : $variable[x] /= <<>>}) {
        with (m = Head($variable[s])) {
          $variable := [$variable EXCEPT ![s] = Tail($variable[s])];
          yield m;
        };
      };
    }
    write {
      yield [$variable EXCEPT ![$value.from] = Append($variable[$value.from], $value)];
    }
  }

  mapping macro FIFO {
    read {
      await Len($variable) > 0;
      with (m = Head($variable)) {
        $variable := Tail($variable);
        yield m;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  mapping macro PerfectFD {
    read { yield $variable; }
    write { yield $value; }
  }

  \* The lowest replica still alive; a write is a crash leaving the set.
  mapping macro LowestAlive {
    read { yield CHOOSE r \in $variable : \A q \in $variable : r <= q; }
    write { yield $variable \ {$value}; }
  }

  variables
    net = [r \in Replicas |-> [s \in Replicas |-> <<>>]];
    crashed = [r \in Replicas |-> FALSE];
    alive = Replicas;
    reqs = [r \in Replicas |-> <<>>];
    resps = [c \in Clients |-> <<>>];
    acked = [k \in Keys |-> NoValue];
    reads = <<>>;

  fair process (Replica \in Replicas) == instance AReplica(ref net[_], ref crashed[_], ref alive, ref reqs[_], ref resps[_])
    mapping net[_] via PerSenderFIFO
    mapping crashed[_] via PerfectFD
    mapping alive via LowestAlive
    mapping reqs[_] via FIFO
    mapping resps[_] via FIFO;

  fair process (Client \in Clients) == instance AClient(ref reqs[_], ref resps[_], ref crashed[_], ref acked[_], ref reads)
    mapping reqs[_] via FIFO
    mapping resps[_] via FIFO
    mapping crashed[_] via PerfectFD;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

TypeOK ==
  /\ alive \subseteq Replicas
  /\ crashed \in [Replicas -> BOOLEAN]
  /\ \A j \in 1..Len(reads) : reads[j].key \in Keys

ReadSeesLastAcked == \A j \in 1..Len(reads) : reads[j].value >= reads[j].floor

AckedNotLost ==
  \A r \in Replicas : ~crashed[r] =>
    \A k \in Keys : acked[k] /= NoValue => Lookup(store[r], k) >= acked[k]
==============================================================================
