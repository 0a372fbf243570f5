//go:build !linux

package kv

import "context"

// pauseSupported: pausing the system not measured needs Linux (process
// groups and /proc, to find etcd's member processes and check they are
// stopped); elsewhere only a run without the peer (--no-etcd) works.
const pauseSupported = false

func stopGroups(context.Context, []int) error { return errNoPause }

func contGroups(context.Context, []int) error { return errNoPause }

func childProcesses(func(argv []string) bool) ([]int, error) { return nil, errNoPause }
