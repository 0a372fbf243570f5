--------------------------- MODULE LockService ---------------------------
(* A centralized lock service in the shape of a PlusCal translation: a   *)
(* server process and client processes exchanging messages over FIFO     *)
(* channels, with pc-based control flow.                                 *)
EXTENDS Naturals, Sequences, TLC

CONSTANTS NumClients, defaultInitValue
ASSUME NumClients \in Nat \ {0}

LockMsg == 1
UnlockMsg == 2
GrantMsg == 3
ServerID == 0
Clients == 1..NumClients

(* --algorithm LockService
variables network = [id \in 0..NumClients |-> <<>>];
fair process (Server = ServerID) ...
end algorithm; *)
\* BEGIN TRANSLATION
VARIABLES network, pc, msg, q, hasLock

vars == << network, pc, msg, q, hasLock >>

ProcSet == {ServerID} \cup (Clients)

Init == (* Global variables *)
        /\ network = [id \in 0..NumClients |-> <<>>]
        (* Process Server *)
        /\ msg = defaultInitValue
        /\ q = <<>>
        (* Process Client *)
        /\ hasLock = [self \in Clients |-> FALSE]
        /\ pc = [self \in ProcSet |-> CASE self = ServerID -> "serverLoop"
                                        [] self \in Clients -> "acquireLock"]

serverLoop == /\ pc[ServerID] = "serverLoop"
              /\ pc' = [pc EXCEPT ![ServerID] = "serverReceive"]
              /\ UNCHANGED << network, msg, q, hasLock >>

serverReceive == /\ pc[ServerID] = "serverReceive"
                 /\ Len(network[ServerID]) > 0
                 /\ msg' = Head(network[ServerID])
                 /\ network' = [network EXCEPT ![ServerID] = Tail(network[ServerID])]
                 /\ pc' = [pc EXCEPT ![ServerID] = "serverRespond"]
                 /\ UNCHANGED << q, hasLock >>

serverRespond == /\ pc[ServerID] = "serverRespond"
                 /\ IF msg.type = LockMsg
                       THEN /\ IF q = <<>>
                                  THEN /\ network' = [network EXCEPT ![msg.from] = Append(network[msg.from], GrantMsg)]
                                  ELSE /\ TRUE
                                       /\ UNCHANGED network
                            /\ q' = Append(q, msg.from)
                       ELSE /\ IF msg.type = UnlockMsg
                                  THEN /\ q' = Tail(q)
                                       /\ IF q' /= <<>>
                                             THEN /\ network' = [network EXCEPT ![Head(q')] = Append(network[Head(q')], GrantMsg)]
                                             ELSE /\ TRUE
                                                  /\ UNCHANGED network
                                  ELSE /\ TRUE
                                       /\ UNCHANGED << network, q >>
                 /\ pc' = [pc EXCEPT ![ServerID] = "serverLoop"]
                 /\ UNCHANGED << msg, hasLock >>

Server == serverLoop \/ serverReceive \/ serverRespond

acquireLock(self) == /\ pc[self] = "acquireLock"
                     /\ network' = [network EXCEPT ![ServerID] = Append(network[ServerID], [from |-> self, type |-> LockMsg])]
                     /\ pc' = [pc EXCEPT ![self] = "criticalSection"]
                     /\ UNCHANGED << msg, q, hasLock >>

criticalSection(self) == /\ pc[self] = "criticalSection"
                         /\ Len(network[self]) > 0
                         /\ network[self][1] = GrantMsg
                         /\ hasLock' = [hasLock EXCEPT ![self] = TRUE]
                         /\ network' = [network EXCEPT ![self] = Tail(network[self]),
                                                       ![ServerID] = Append(@, [from |-> self, type |-> UnlockMsg])]
                         /\ pc' = [pc EXCEPT ![self] = "Done"]
                         /\ UNCHANGED << msg, q >>

Client(self) == acquireLock(self) \/ criticalSection(self)

(* Allow infinite stuttering to prevent deadlock on termination. *)
Terminating == /\ \A self \in ProcSet: pc[self] = "Done"
               /\ UNCHANGED vars

Next == Server
           \/ (\E self \in Clients: Client(self))
           \/ Terminating

Spec == /\ Init /\ [][Next]_vars
        /\ WF_vars(Server)
        /\ \A self \in Clients : WF_vars(Client(self))

Termination == <>(\A self \in ProcSet: pc[self] = "Done")

\* END TRANSLATION

MutualExclusion == \A i, j \in Clients :
                     (pc[i] = "criticalSection" /\ pc[j] = "criticalSection") => i = j
=============================================================================
