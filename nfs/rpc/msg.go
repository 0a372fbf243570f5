package rpc

import (
	"errors"
	"fmt"

	"strata/nfs/xdr"
)

// RPCVersion is the only ONC RPC protocol version (rpcvers) spoken.
const RPCVersion = 2

// Authentication flavors (RFC 5531 §8.1). The AUTH_SYS constant is named
// AuthSysFlavor because AuthSys is the name of its credential body type.
const (
	AuthNone      = 0
	AuthSysFlavor = 1
)

// Message types.
const (
	msgCall  = 0
	msgReply = 1
)

// Reply status.
const (
	msgAccepted = 0
	msgDenied   = 1
)

// Limits from RFC 5531.
const (
	MaxAuthBytes   = 400 // body of an opaque_auth
	MaxMachineName = 255 // AUTH_SYS machinename
	MaxAuthSysGIDs = 16  // AUTH_SYS gids
)

// AcceptStat is the status of a call the server accepted (accept_stat).
type AcceptStat uint32

// Accept statuses.
const (
	Success      AcceptStat = 0 // RPC executed successfully
	ProgUnavail  AcceptStat = 1 // remote has not exported the program
	ProgMismatch AcceptStat = 2 // remote cannot support the version
	ProcUnavail  AcceptStat = 3 // program cannot support the procedure
	GarbageArgs  AcceptStat = 4 // procedure cannot decode the arguments
	SystemErr    AcceptStat = 5 // for example a memory allocation failure
)

func (s AcceptStat) String() string {
	switch s {
	case Success:
		return "SUCCESS"
	case ProgUnavail:
		return "PROG_UNAVAIL"
	case ProgMismatch:
		return "PROG_MISMATCH"
	case ProcUnavail:
		return "PROC_UNAVAIL"
	case GarbageArgs:
		return "GARBAGE_ARGS"
	case SystemErr:
		return "SYSTEM_ERR"
	}
	return fmt.Sprintf("accept_stat(%d)", uint32(s))
}

// RejectStat says why a call was denied (reject_stat).
type RejectStat uint32

// Reject statuses.
const (
	RPCMismatch RejectStat = 0 // rpcvers != 2
	AuthError   RejectStat = 1 // the credentials were refused
)

func (s RejectStat) String() string {
	switch s {
	case RPCMismatch:
		return "RPC_MISMATCH"
	case AuthError:
		return "AUTH_ERROR"
	}
	return fmt.Sprintf("reject_stat(%d)", uint32(s))
}

// AuthStat says why credentials were refused (auth_stat).
type AuthStat uint32

// Authentication statuses.
const (
	AuthOK           AuthStat = 0
	AuthBadCred      AuthStat = 1 // bad credential (seal broken)
	AuthRejectedCred AuthStat = 2 // client must begin new session
	AuthBadVerf      AuthStat = 3 // bad verifier (seal broken)
	AuthRejectedVerf AuthStat = 4 // verifier expired or replayed
	AuthTooWeak      AuthStat = 5 // rejected for security reasons
)

func (s AuthStat) String() string {
	switch s {
	case AuthOK:
		return "AUTH_OK"
	case AuthBadCred:
		return "AUTH_BADCRED"
	case AuthRejectedCred:
		return "AUTH_REJECTEDCRED"
	case AuthBadVerf:
		return "AUTH_BADVERF"
	case AuthRejectedVerf:
		return "AUTH_REJECTEDVERF"
	case AuthTooWeak:
		return "AUTH_TOOWEAK"
	}
	return fmt.Sprintf("auth_stat(%d)", uint32(s))
}

// AuthSys is the body of an AUTH_SYS credential (RFC 5531 appendix A).
type AuthSys struct {
	Stamp   uint32
	Machine string   // at most MaxMachineName bytes
	UID     uint32   // effective user ID
	GID     uint32   // effective group ID
	GIDs    []uint32 // supplementary groups, at most MaxAuthSysGIDs
}

// ErrBadAuthSys is wrapped by the errors of UnmarshalAuthSys and
// AuthSys.Validate.
var ErrBadAuthSys = errors.New("rpc: malformed AUTH_SYS credential")

// Validate reports whether a fits the limits of RFC 5531.
func (a *AuthSys) Validate() error {
	if len(a.Machine) > MaxMachineName {
		return fmt.Errorf("%w: machine name of %d bytes", ErrBadAuthSys, len(a.Machine))
	}
	if len(a.GIDs) > MaxAuthSysGIDs {
		return fmt.Errorf("%w: %d gids", ErrBadAuthSys, len(a.GIDs))
	}
	return nil
}

// Marshal appends the XDR encoding of a (the credential body, without the
// flavor and length) to w. It does not check the limits; see Validate.
func (a *AuthSys) Marshal(w *xdr.Writer) {
	w.Uint32(a.Stamp)
	w.String(a.Machine)
	w.Uint32(a.UID)
	w.Uint32(a.GID)
	w.Uint32(uint32(len(a.GIDs)))
	for _, g := range a.GIDs {
		w.Uint32(g)
	}
}

// UnmarshalAuthSys decodes an AUTH_SYS credential body. The body must be
// exactly one authsys_parms within the limits of RFC 5531: a longer
// machine name, more than 16 gids, a truncated body or trailing bytes are
// errors wrapping ErrBadAuthSys. It never panics.
func UnmarshalAuthSys(body []byte) (*AuthSys, error) {
	a := &AuthSys{}
	if err := a.unmarshal(body); err != nil {
		return nil, err
	}
	return a, nil
}

// unmarshal decodes body into a, reusing a's GIDs storage and, if the
// machine name is unchanged, its Machine string, so that decoding the
// credentials of a client's successive calls does not allocate.
func (a *AuthSys) unmarshal(body []byte) error {
	r := xdr.NewReader(body)
	a.Stamp = r.Uint32()
	machine := r.Opaque(MaxMachineName)
	if string(machine) != a.Machine { // compared without allocating
		a.Machine = string(machine)
	}
	a.UID = r.Uint32()
	a.GID = r.Uint32()
	n := r.Uint32()
	if r.Err() == nil && n > MaxAuthSysGIDs {
		return fmt.Errorf("%w: %d gids", ErrBadAuthSys, n)
	}
	a.GIDs = a.GIDs[:0]
	if r.Err() == nil {
		for range n {
			a.GIDs = append(a.GIDs, r.Uint32())
		}
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadAuthSys, err)
	}
	return nil
}

// callHeader is a parsed call message up to its arguments.
type callHeader struct {
	xid, rpcvers, prog, vers, proc uint32
	credFlavor                     uint32
	credBody                       []byte // aliases the message
	verfFlavor                     uint32
	sys                            *AuthSys // &sysBuf if credFlavor == AuthSysFlavor and well-formed
	args                           []byte   // aliases the message
	sysBuf                         AuthSys  // storage for sys, reused across calls
}

// parseOutcome is what the server does with a message.
type parseOutcome int

const (
	// parseOK: a well-formed call with acceptable credentials; dispatch it.
	parseOK parseOutcome = iota
	// parseDrop: not a call, or its header cannot be parsed; no reply.
	parseDrop
	// parseRPCMismatch: rpcvers != 2; reply MSG_DENIED/RPC_MISMATCH. Only
	// xid and rpcvers are set.
	parseRPCMismatch
	// parseBadCred: unsupported flavor or malformed AUTH_SYS body; reply
	// MSG_DENIED/AUTH_ERROR/AUTH_BADCRED.
	parseBadCred
)

// errNotCall and friends explain a parseDrop.
var (
	errShortHeader = errors.New("rpc: call header truncated")
	errNotCall     = errors.New("rpc: message is not a call")
)

// parseCall parses a call message (one record or datagram) into h. The
// returned error explains every outcome other than parseOK. It never
// panics; it allocates only for an AUTH_SYS machine name that differs from
// the one h last held.
func parseCall(msg []byte, h *callHeader) (parseOutcome, error) {
	*h = callHeader{sysBuf: h.sysBuf}
	r := xdr.NewReader(msg)
	h.xid = r.Uint32()
	mtype := r.Uint32()
	if r.Err() != nil {
		return parseDrop, errShortHeader
	}
	if mtype != msgCall {
		return parseDrop, fmt.Errorf("%w: type %d", errNotCall, mtype)
	}
	h.rpcvers = r.Uint32()
	if r.Err() != nil {
		return parseDrop, errShortHeader
	}
	if h.rpcvers != RPCVersion {
		return parseRPCMismatch, fmt.Errorf("rpc: rpcvers %d", h.rpcvers)
	}
	h.prog = r.Uint32()
	h.vers = r.Uint32()
	h.proc = r.Uint32()
	h.credFlavor = r.Uint32()
	h.credBody = r.Opaque(MaxAuthBytes)
	h.verfFlavor = r.Uint32()
	r.Opaque(MaxAuthBytes) // verifier body, unused for AUTH_NONE and AUTH_SYS
	if err := r.Err(); err != nil {
		return parseDrop, fmt.Errorf("%w: %w", errShortHeader, err)
	}
	h.args = r.Rest()
	switch h.credFlavor {
	case AuthNone:
	case AuthSysFlavor:
		if err := h.sysBuf.unmarshal(h.credBody); err != nil {
			return parseBadCred, err
		}
		h.sys = &h.sysBuf
	default:
		return parseBadCred, fmt.Errorf("rpc: unsupported credential flavor %d", h.credFlavor)
	}
	return parseOK, nil
}

// appendAcceptedHeader writes the header of an accepted reply with an
// AUTH_NONE verifier, up to and including the accept status (and the
// version range for PROG_MISMATCH).
func appendAcceptedHeader(w *xdr.Writer, xid uint32, stat AcceptStat, low, high uint32) {
	w.Uint32(xid)
	w.Uint32(msgReply)
	w.Uint32(msgAccepted)
	w.Uint32(AuthNone) // verifier flavor
	w.Uint32(0)        // verifier length
	w.Uint32(uint32(stat))
	if stat == ProgMismatch {
		w.Uint32(low)
		w.Uint32(high)
	}
}

// appendDenied writes a complete MSG_DENIED reply.
func appendDenied(w *xdr.Writer, xid uint32, rs RejectStat, as AuthStat) {
	w.Uint32(xid)
	w.Uint32(msgReply)
	w.Uint32(msgDenied)
	w.Uint32(uint32(rs))
	if rs == RPCMismatch {
		w.Uint32(RPCVersion) // low
		w.Uint32(RPCVersion) // high
	} else {
		w.Uint32(uint32(as))
	}
}

// appendCallHeader writes a call header with the given encoded credential
// (flavor, length and body) and an AUTH_NONE verifier.
func appendCallHeader(w *xdr.Writer, xid, prog, vers, proc uint32, cred []byte) {
	w.Uint32(xid)
	w.Uint32(msgCall)
	w.Uint32(RPCVersion)
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proc)
	if len(cred) == 0 {
		w.Uint32(AuthNone)
		w.Uint32(0)
	} else {
		w.Write(cred) // flavor, length and body, already encoded
	}
	w.Uint32(AuthNone)
	w.Uint32(0)
}

// ReplyError is the error Client.Call returns for a reply other than an
// accepted SUCCESS. Match it with errors.As, or with errors.Is against a
// *ReplyError whose Denied, Accept, Reject and Auth fields are compared
// (XID, Low and High are ignored), for example
// errors.Is(err, &ReplyError{Accept: ProcUnavail}).
type ReplyError struct {
	XID    uint32
	Denied bool       // MSG_DENIED; otherwise MSG_ACCEPTED
	Accept AcceptStat // if !Denied: never Success
	Reject RejectStat // if Denied
	Auth   AuthStat   // if Denied with AuthError
	// Low and High are the version range of PROG_MISMATCH (program
	// versions) and RPC_MISMATCH (RPC versions).
	Low, High uint32
}

func (e *ReplyError) Error() string {
	if !e.Denied {
		if e.Accept == ProgMismatch {
			return fmt.Sprintf("rpc: call accepted: PROG_MISMATCH (versions %d to %d)", e.Low, e.High)
		}
		return "rpc: call accepted: " + e.Accept.String()
	}
	if e.Reject == RPCMismatch {
		return fmt.Sprintf("rpc: call denied: RPC_MISMATCH (versions %d to %d)", e.Low, e.High)
	}
	if e.Reject == AuthError {
		return "rpc: call denied: AUTH_ERROR " + e.Auth.String()
	}
	return "rpc: call denied: " + e.Reject.String()
}

// Is reports whether target is a *ReplyError with the same outcome.
func (e *ReplyError) Is(target error) bool {
	t, ok := target.(*ReplyError)
	if !ok {
		return false
	}
	if e.Denied != t.Denied {
		return false
	}
	if !e.Denied {
		return e.Accept == t.Accept
	}
	return e.Reject == t.Reject && (e.Reject != AuthError || e.Auth == t.Auth)
}

// ErrBadReply is wrapped by the errors for replies that cannot be parsed.
var ErrBadReply = errors.New("rpc: malformed reply")

// parseReply parses a reply message. It returns the result bytes of an
// accepted SUCCESS (aliasing msg), a *ReplyError for other well-formed
// replies, or an error wrapping ErrBadReply. It never panics.
func parseReply(msg []byte) (xid uint32, results []byte, err error) {
	r := xdr.NewReader(msg)
	xid = r.Uint32()
	mtype := r.Uint32()
	stat := r.Uint32()
	if r.Err() != nil {
		return xid, nil, fmt.Errorf("%w: %w", ErrBadReply, r.Err())
	}
	if mtype != msgReply {
		return xid, nil, fmt.Errorf("%w: message type %d", ErrBadReply, mtype)
	}
	switch stat {
	case msgAccepted:
		r.Uint32()             // verifier flavor
		r.Opaque(MaxAuthBytes) // verifier body
		as := AcceptStat(r.Uint32())
		if r.Err() != nil {
			return xid, nil, fmt.Errorf("%w: %w", ErrBadReply, r.Err())
		}
		switch as {
		case Success:
			return xid, r.Rest(), nil
		case ProgMismatch:
			e := &ReplyError{XID: xid, Accept: as, Low: r.Uint32(), High: r.Uint32()}
			if r.Err() != nil {
				return xid, nil, fmt.Errorf("%w: %w", ErrBadReply, r.Err())
			}
			return xid, nil, e
		default:
			return xid, nil, &ReplyError{XID: xid, Accept: as}
		}
	case msgDenied:
		e := &ReplyError{XID: xid, Denied: true, Reject: RejectStat(r.Uint32())}
		switch e.Reject {
		case RPCMismatch:
			e.Low, e.High = r.Uint32(), r.Uint32()
		case AuthError:
			e.Auth = AuthStat(r.Uint32())
		default:
			return xid, nil, fmt.Errorf("%w: reject status %d", ErrBadReply, e.Reject)
		}
		if r.Err() != nil {
			return xid, nil, fmt.Errorf("%w: %w", ErrBadReply, r.Err())
		}
		return xid, nil, e
	default:
		return xid, nil, fmt.Errorf("%w: reply status %d", ErrBadReply, stat)
	}
}
