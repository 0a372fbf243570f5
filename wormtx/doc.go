// Package wormtx is WormTX (WormSpace §4.3): non-blocking atomic commit
// of transactions across partitions, built on write-once registers
// through the public wor Engine and Learner API alone, so it runs over
// the paxos and chain engines alike.
//
// # The protocol
//
// A transaction touches accounts (int64 balances) held by resource
// managers (RMs), each RM a partition. Every participant RM votes in a
// write-once register of its own for the transaction: yes (it locked the
// accounts, checked the operations and logged its writes durably) or no.
// The decision is a deterministic function of the registers: commit if
// every participant's register holds yes. Because a register is write
// once, any RM that waits too long may write no into a silent
// participant's register (a capture and a write); either its no is chosen
// (the transaction aborts) or the participant's vote already was, and
// every RM reads the same outcome. A crashed RM blocks nobody.
//
// The five variants of §4.3 differ in who coordinates and how the votes
// travel; on a network whose one-way delay is d and that costs nothing
// else, the initiator knows the outcome after the variant's number of
// message delays times d (TestMessageDelays):
//
//	A8  initiator → TM → RMs; each RM captures (2) and writes (2) its
//	    register; RM → TM its vote; TM → RMs the decision.
//	B6  as A8, but the TM pre-captured the registers (SegCapture) and
//	    hands each RM a token: the write is one round trip.
//	C5  as B6, but the TM learns the votes from the wormservers' reports
//	    of the accepts (wor.Learner) instead of from the RMs.
//	D4  as C5, but every RM learns the votes itself: no decision message.
//	E3  no TM: the initiator pre-captures and sends the prepare itself.
//
// E3 is the default.
//
// # Concurrency control
//
// Each RM locks the accounts a transaction touches when it prepares it
// (shared for reads, exclusive for writes) and holds the locks until the
// outcome; a lock it cannot take at once makes it vote no
// (Immediate-Restart: the client retries the transaction after a random
// pause), so there are no deadlocks. Before voting yes the RM logs the
// transaction's writes in its Store; on commit it applies them. With
// locks held to the end (strict two-phase locking) and atomic commit,
// committed transactions are strictly serializable (TestBank checks a
// bank workload's history under crashes).
//
// # Assumptions
//
// Messages between RMs and the TM may be lost, delayed or duplicated:
// a lost message at worst makes some RM time out and resolve the
// transaction from the registers. A coordinator's vote segment is fresh
// for each incarnation (Config.VoteSeg), so no register is reused. An RM
// that crashes keeps its Store (its log and balances) and, on restart,
// resolves the transactions it had prepared from the registers.
package wormtx
