------------------------------- MODULE Mutex -------------------------------
(* A lock taken and released by clients; count counts acquisitions. The  *)
(* trace checker's tests validate traces against it.                     *)
EXTENDS Naturals

CONSTANT Clients

VARIABLES owner, count

Init == owner = "none" /\ count = 0

Acquire(c) == owner = "none" /\ owner' = c /\ count' = count + 1
Release(c) == owner = c /\ owner' = "none" /\ UNCHANGED count

Next == \E c \in Clients : Acquire(c) \/ Release(c)
=============================================================================
