//go:build !linux

package kit

import "errors"

// PinSelf is only implemented on Linux.
func PinSelf(cpu int) (restore func(), err error) {
	return nil, errors.New("CPU pinning is only implemented on Linux")
}
