package smr

import (
	"context"
	"errors"
)

// maxAddr bounds Config.Addr (it travels in every log segment's metadata).
const maxAddr = 1024

var errTODO = errors.New("smr: not implemented yet")

// replica is the implementation behind Replica (being written).
type replica struct{}

func start(ctx context.Context, cfg Config, sm StateMachine) (*replica, error) { return nil, errTODO }

func (r *replica) propose(ctx context.Context, cmd []byte) ([]byte, error) { return nil, errTODO }
func (r *replica) read(ctx context.Context, c Consistency, fn func()) error   { return errTODO }
func (r *replica) leader() (uint64, string, uint64, bool)                      { return 0, "", 0, false }
func (r *replica) appliedIndex() uint64                                        { return 0 }
func (r *replica) campaign(ctx context.Context) error                          { return errTODO }
func (r *replica) close() error                                                { return nil }
