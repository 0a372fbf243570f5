package nfs

import (
	"errors"
	"fmt"
	"testing"

	"strata/nfs/fs"
)

// TestStatusMapping: every file-system error, wrapped as the file system
// wraps it, maps to its RFC 1813 status; anything else is SERVERFAULT.
func TestStatusMapping(t *testing.T) {
	for _, c := range []struct {
		err  error
		want uint32
	}{
		{nil, nfsOK},
		{fs.ErrNoEnt, errNoEnt},
		{fs.ErrExist, errExist},
		{fs.ErrNotDir, errNotDir},
		{fs.ErrIsDir, errIsDir},
		{fs.ErrNotEmpty, errNotEmpty},
		{fs.ErrNameTooLong, errNameTooLong},
		{fs.ErrStale, errStale},
		{fs.ErrNoSpace, errNoSpc},
		{fs.ErrMLink, errMLink},
		{fs.ErrInval, errInval},
		{fs.ErrFBig, errFBig},
		{fs.ErrBadCookie, errBadCookie},
		{fs.ErrNotSync, errNotSync},
		{fs.ErrIO, errIO},
		{fs.ErrCorrupt, errIO},
		{&fs.CorruptError{Inode: 5, Block: 99, Detail: "block pointer 99 outside the data area"}, errIO},
		{errors.New("something else"), errServerFault},
	} {
		err := c.err
		if err != nil {
			err = fmt.Errorf("inode 7: %w", err)
		}
		if got := status(err); got != c.want {
			t.Errorf("status(%v) = %d, want %d", err, got, c.want)
		}
	}
	// A rename target that cannot be replaced: EXIST, whichever of
	// NOTDIR, ISDIR or NOTEMPTY it also wraps (fs.Rename's form).
	for _, kind := range []error{fs.ErrNotDir, fs.ErrIsDir, fs.ErrNotEmpty} {
		err := fmt.Errorf("%w (%w): %q", kind, fs.ErrIncompatible, "b")
		if got := status(err); got != errExist {
			t.Errorf("status(%v) = %d, want NFS3ERR_EXIST", err, got)
		}
	}
	if errMLink != 31 || errExist != 17 {
		t.Fatalf("NFS3ERR_MLINK is 31 and NFS3ERR_EXIST 17 in RFC 1813, not %d and %d", errMLink, errExist)
	}
}
