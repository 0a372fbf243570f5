package nfs

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"

	"strata/nfs/fs"
	"strata/nfs/xdr"
)

// File handles are 28 bytes: "STR2", the export's id, the inode number,
// its generation, and an 8-byte checksum of those keyed with a secret of
// the file system (fs.FS.Secret, from the superblock's random salt).
//
// The checksum is what makes an export of a subdirectory mean something:
// a client can only use handles the server gave it, which it gets by
// walking down from the export's root (LOOKUP of ".." stops there), so it
// cannot name a file outside the export by guessing an inode number. The
// export id says which export's rules apply to the handle, and a handle
// of an export that does not admit the caller is STALE (as knfsd answers
// for a file system not exported to the client).
//
// Handles of the first format ("STR1", 16 bytes, no export and no
// checksum) are STALE: clients mount again and get new ones.
const (
	fhMagic    = "STR2"
	fhOldMagic = "STR1"
	fhSize     = 28
	fhSumAt    = 20 // the checksum covers the bytes before it
)

// Errors of file handle decoding, mapped by status: errBadFH to
// NFS3ERR_BADHANDLE, errStaleFH to NFS3ERR_STALE, errXDevFH to
// NFS3ERR_XDEV.
var (
	errBadFH   = errors.New("nfs: bad file handle")
	errStaleFH = fmt.Errorf("nfs: file handle of an old format, of an export that is gone, or of an export the client may not use: %w", fs.ErrStale)
	errXDevFH  = errors.New("nfs: file handles of two exports")
	// errReadOnly is NFS3ERR_ROFS: a modifying call on a read-only export.
	errReadOnly = errors.New("nfs: read-only export")
)

// fhCodec makes and checks file handles with one file system's secret.
type fhCodec struct{ key [32]byte }

// sum is the handle checksum: SHA-256 of the key and the handle's first
// 20 bytes, truncated to 8 bytes. The input has a fixed length, so the
// keyed-prefix construction needs no HMAC (there is nothing to extend),
// and it costs one SHA-256 block, without allocating.
func (k *fhCodec) sum(b []byte) []byte {
	var buf [32 + fhSumAt]byte
	copy(buf[:], k.key[:])
	copy(buf[32:], b[:fhSumAt])
	s := sha256.Sum256(buf[:])
	return s[:8]
}

func (k *fhCodec) encode(id uint32, h fs.Handle) []byte {
	b := make([]byte, 0, fhSize)
	b = append(b, fhMagic...)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Ino))
	b = binary.BigEndian.AppendUint32(b, h.Gen)
	return append(b, k.sum(b)...)
}

// decode checks a handle's format and checksum. Whether the inode is live
// and of that generation is for the file system to say (STALE).
func (k *fhCodec) decode(b []byte) (id uint32, h fs.Handle, err error) {
	if len(b) == 16 && string(b[:4]) == fhOldMagic {
		return 0, h, errStaleFH
	}
	if len(b) != fhSize || string(b[:4]) != fhMagic {
		return 0, h, errBadFH
	}
	if subtle.ConstantTimeCompare(k.sum(b), b[fhSumAt:]) != 1 {
		return 0, h, errBadFH
	}
	id = binary.BigEndian.Uint32(b[4:])
	h = fs.Handle{Ino: fs.Inum(binary.BigEndian.Uint64(b[8:])), Gen: binary.BigEndian.Uint32(b[16:])}
	return id, h, nil
}

// op is one NFS call as the exports see it: the export its first file
// handle belongs to, the rule that admits the caller there, and the
// credentials after squashing. Procedures decode and make handles
// through it, so every handle of a call is checked against the same
// export.
type op struct {
	*Server
	ex   *Exports // the table the call was admitted by
	exp  *Export  // nil if the first handle did not resolve to an admitted export
	rule *Rule
	cred caller
	// deny, if set, is what every handle of the call decodes to: STALE
	// for an export that does not admit the caller, ROFS for a
	// modifying procedure on a read-only export. The procedures then
	// answer with their usual failure results and touch nothing.
	deny error
	// first is the first handle's bytes, already checked by admit (as
	// firstH), so that the procedure does not hash it again.
	first  []byte
	firstH fs.Handle
}

// decodeFH decodes a handle of the call's export.
func (o *op) decodeFH(b []byte) (fs.Handle, error) {
	if o.first != nil && o.deny == nil && bytes.Equal(b, o.first) {
		return o.firstH, nil
	}
	id, h, err := o.fh.decode(b)
	switch {
	case err != nil:
		return h, err
	case o.deny != nil:
		return h, o.deny
	case o.exp == nil:
		return h, errStaleFH
	case id != o.exp.id:
		if o.ex.byID(id) == nil {
			return h, errStaleFH
		}
		return h, errXDevFH
	}
	return h, nil
}

func (o *op) readFH(r *xdr.Reader) (fs.Handle, error) {
	b := r.Opaque(MaxFH)
	if r.Err() != nil {
		return fs.Handle{}, r.Err()
	}
	return o.decodeFH(b)
}

// encodeFH makes a handle of the call's export.
func (o *op) encodeFH(h fs.Handle) []byte { return o.fh.encode(o.exp.id, h) }

// fhArg reads a file handle argument; a malformed handle is a status
// (BADHANDLE, STALE, ...), not garbage.
func (o *op) fhArg(r *xdr.Reader) (fs.Handle, uint32, error) {
	h, err := o.readFH(r)
	if r.Err() != nil {
		return h, 0, errGarbage
	}
	if err != nil {
		return h, status(err), nil
	}
	return h, nfsOK, nil
}

// readDirop decodes diropargs3.
func (o *op) readDirop(r *xdr.Reader) (fs.Handle, string, error) {
	h, err := o.readFH(r)
	name := readName(r)
	if r.Err() != nil {
		return h, name, r.Err()
	}
	return h, name, err
}

func (o *op) postFH(w *xdr.Writer, h fs.Handle, ok bool) {
	w.Bool(ok)
	if ok {
		w.Opaque(o.encodeFH(h))
	}
}
