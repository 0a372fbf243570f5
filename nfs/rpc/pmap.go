package rpc

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"strata/nfs/xdr"
)

// Portmapper (rpcbind version 2, RFC 1833) program, version and procedures.
const (
	PmapProg    = 100000
	PmapVers    = 2
	PmapPort    = 111
	pmapProcSet = 1
	pmapProcUns = 2
)

// Protocol numbers of a portmapper mapping.
const (
	IPProtoTCP = 6
	IPProtoUDP = 17
)

// ErrNoRpcbind is returned (wrapped) by PmapSet and PmapUnset when nothing
// answers on 127.0.0.1:111 within about a second, so that callers can run
// without rpcbind.
var ErrNoRpcbind = errors.New("rpc: no rpcbind on 127.0.0.1:111")

// pmapAddr is where the portmapper is; tests point it elsewhere.
var pmapAddr = "127.0.0.1:111"

const pmapTimeout = time.Second

// PmapSet asks the local portmapper to map (prog, vers, proto) to port and
// returns its answer (false if it refused, for example because the mapping
// exists or this process may not register).
func PmapSet(ctx context.Context, prog, vers, proto, port uint32) (bool, error) {
	return pmapCall(ctx, pmapProcSet, prog, vers, proto, port)
}

// PmapUnset asks the local portmapper to remove every mapping of (prog,
// vers) and returns its answer.
func PmapUnset(ctx context.Context, prog, vers uint32) (bool, error) {
	return pmapCall(ctx, pmapProcUns, prog, vers, 0, 0)
}

func pmapCall(ctx context.Context, proc, prog, vers, proto, port uint32) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, pmapTimeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	c, err := Dial(cctx, "udp", pmapAddr)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("%w: %w", ErrNoRpcbind, err)
	}
	defer c.Close()
	c.SetRetry(pmapTimeout/4, 4)
	var w xdr.Writer
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proto)
	w.Uint32(port)
	res, err := c.Call(cctx, PmapProg, PmapVers, proc, w.Bytes())
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err() // the caller gave up, not rpcbind
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) ||
			errors.Is(err, syscall.ECONNREFUSED) {
			return false, fmt.Errorf("%w: %w", ErrNoRpcbind, err)
		}
		return false, fmt.Errorf("rpc: portmapper: %w", err)
	}
	r := xdr.NewReader(res)
	ok := r.Bool()
	if r.Err() != nil {
		return false, fmt.Errorf("%w: portmapper result: %w", ErrBadReply, r.Err())
	}
	return ok, nil
}
