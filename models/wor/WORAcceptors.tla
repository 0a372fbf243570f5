----------------------------- MODULE WORAcceptors -----------------------------
(***************************************************************************)
(* The acceptors of the WOR paxos engine on their own, for trace          *)
(* validation of the implementation (wor/trace_test.go): a step is one    *)
(* register request (prepare, accept or read at a ballot, with a value)   *)
(* handled by one server's acceptor of one register, with the acceptor    *)
(* rule of WORPaxos.tla (its Step operator, taken through INSTANCE, so    *)
(* the rule validated is the one TLC model-checks there). The clients,    *)
(* the network, trim and reconfiguration of WORPaxos are left out: a run  *)
(* of wor/ records what its servers' acceptors did (Server.apply), not    *)
(* what the clients did, and any request may reach any acceptor.          *)
(*                                                                         *)
(* Ballots and values are those of the trace: the recorder maps the      *)
(* code's 64-bit ballots (round << 32 | client) to their rank among the   *)
(* ballots of the run (order is all Step looks at; 0 stays 0) and each    *)
(* distinct value to a number from 1 (None = 0: nothing accepted).        *)
(***************************************************************************)
EXTENDS Integers

CONSTANTS
    Servers,   \* the servers of the run
    Regs,      \* the registers (numbered in order of first use)
    Ballots,   \* the ballots (ranks), 0 included
    Values,    \* the values (numbers), None = 0 included
    BugAcceptBelowPromise  \* WORPaxos's mutant: accept a ballot below the promise

VARIABLES
    acc,   \* acc[s][a]: [prom, acc, val], as in WORPaxos
    last   \* the last request handled and whether it was answered OK

vars == <<acc, last>>

\* WORPaxos's constants and variables other than its acceptor rule's are
\* not used by Step; they are given dummy values.
W == INSTANCE WORPaxos WITH
    Regs <- Regs, Clients <- {}, Writers <- {}, Readers <- {}, LateClients <- {},
    MaxRound <- 0, MaxOps <- 0, WithTrim <- FALSE, WithSeg <- FALSE, WithReconfig <- FALSE,
    OldServers <- Servers, NewServers <- Servers,
    BugAcceptBelowPromise <- BugAcceptBelowPromise, BugTrimForgets <- FALSE, BugNoSeal <- FALSE,
    acc <- acc, trimmed <- {}, sepoch <- {}, active <- {}, msgs <- {},
    cpc <- {}, ckind <- {}, caddrs <- {}, cround <- {}, cballot <- {}, cwv <- {}, cvals <- {},
    cseq <- {}, creq <- {}, creply <- {}, cops <- {}, cepoch <- {},
    rpc <- {}, sealed <- {}, merged <- {}, votes <- {}, returned <- {}, trimSent <- {}

Init ==
    /\ acc = [s \in Servers |-> [a \in Regs |-> W!Empty]]
    /\ last = [op |-> "none", ok |-> TRUE]

\* Server s's acceptor of register a handles request op at ballot b with
\* value v (acceptor.step as WORPaxos states it).
Handle(s, a, op, b, v) ==
    LET r == W!Step(acc[s][a], op, b, v)
    IN /\ acc' = [acc EXCEPT ![s][a] = r.next]
       /\ last' = [s |-> s, a |-> a, op |-> op, b |-> b, v |-> v, ok |-> r.ok]

Next ==
    \E s \in Servers, a \in Regs, op \in {"prepare", "accept", "read"}, b \in Ballots, v \in Values :
        Handle(s, a, op, b, v)

Spec == Init /\ [][Next]_vars
===============================================================================
