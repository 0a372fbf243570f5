package wor

// Engine is how registers are made durable and agreed on: the paxos engine
// (majority quorums), later chain replication and Pando's erasure-coded
// Paxos. Applications use Client, never an engine directly, so they do not
// change when the engine does.
//
// Every method returns at once and calls its callback exactly once, from
// any goroutine (or from the simulator's loop). The contract per address:
//
//   - Capture obtains a CaptureID that orders this client's next Write
//     against every other capture of the address; a later capture by
//     anyone preempts it (ErrPreempted at Write).
//   - Write with a CaptureID either writes value, or finds that another
//     value may already be chosen and completes that one instead
//     (*WrittenError with it). CaptureID 0 is an unsafe write.
//   - Read returns the chosen value, or ErrUnwritten; a value returned is
//     chosen for good.
//
// An engine that stores coded fragments instead of whole values (Pando)
// fits: Capture and Write carry the quorum logic and Read reassembles; the
// contract above is about values, not about what each server keeps.
type Engine interface {
	Capture(addr uint64, cb func(CaptureID, error))
	Write(addr uint64, value []byte, cid CaptureID, cb func(error))
	Read(addr uint64, cb func([]byte, error))
}

var _ Engine = (*Paxos)(nil)
