//go:build !linux

package sbench

import "errors"

// PinSelf is only implemented on Linux.
func PinSelf(cpu int) (restore func(), err error) {
	return nil, errors.New("sbench: CPU pinning is only implemented on Linux")
}
