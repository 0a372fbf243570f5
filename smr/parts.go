package smr

// Commands larger than one log entry are written as parts: consecutive
// part entries of one leader's term, each carrying a slice of the
// command (encodeParts). The apply loop joins them with an assembly and
// applies the command with its last part, as one command.
//
// Why this is safe: a leader queues a command's parts together, so it
// writes them to consecutive registers, nothing of its own between them.
// Only a junk fill or a newer leader's entries can come between parts
// (the leader was deposed midway), and every replica then sees the same
// interruption in the same log and drops the partial command alike: it
// was never applied anywhere, and the proposer learns ErrNotLeader.
// Snapshots are taken only between commands (never while an assembly
// is open), so a replica that starts from a snapshot never misses the
// first parts of a command the others apply.

// assembly joins the parts of one command as the apply loop meets them.
// It is pure: the same entries in the same order give the same commands
// on every replica.
type assembly struct {
	open            bool
	proposer, nonce uint64
	parts, next     uint64
	buf             []byte
}

// add takes the next log entry. It returns the joined command when e is
// the last part of one whose every part came in order with nothing
// between; any other entry (or a part out of order) drops a command
// being joined, and add then says so.
func (a *assembly) add(e entry) (cmd []byte, complete, dropped bool) {
	dropped = a.open && (e.kind != kindPart || e.part == 0 || e.proposer != a.proposer || e.nonce != a.nonce || e.parts != a.parts || e.part != a.next)
	if e.kind != kindPart {
		*a = assembly{}
		return nil, false, dropped
	}
	switch {
	case e.part == 0:
		*a = assembly{open: true, proposer: e.proposer, nonce: e.nonce, parts: e.parts, next: 0}
	case dropped || !a.open:
		*a = assembly{}
		return nil, false, dropped
	}
	a.buf = append(a.buf, e.payload...)
	a.next++
	if a.next < a.parts {
		return nil, false, dropped
	}
	cmd = a.buf
	*a = assembly{}
	return cmd, true, dropped
}
