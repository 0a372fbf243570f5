// Package xdr encodes and decodes the External Data Representation of
// RFC 4506, the subset that ONC RPC and NFSv3 use: 32- and 64-bit integers,
// booleans, fixed- and variable-length opaque data, strings and optional
// data (the boolean discriminant of an XDR pointer).
//
// # Guarantees
//
//   - Decoding never panics, whatever the input: every length is checked
//     against the bytes that remain and against the caller's limit before
//     anything is sliced or allocated, so a hostile length cannot make the
//     Reader allocate more than the input it was given.
//   - Decode errors are sticky. The first error is kept (Reader.Err); after
//     it every read returns the zero value of its type and consumes nothing,
//     so a decoder may read a whole structure and check Err once at the end.
//   - Every decode error wraps ErrMalformed (errors.Is).
//   - The Writer always writes zero padding. The Reader accepts non-zero
//     padding bytes (RFC 4506 says they are zero, but being lenient here
//     costs nothing and some peers are sloppy).
//   - Reader.Opaque and Reader.FixedOpaque return slices that alias the
//     input (capacity clipped, so appending to them never writes into the
//     input); Reader.String copies.
//
// # Assumptions
//
//   - A Reader or Writer is used by one goroutine at a time.
//   - Limits passed to Opaque and String come from the protocol
//     specification (for example NFS3_FHSIZE); a negative limit means "no
//     limit other than the data".
//   - Encoding values that cannot be represented (an opaque longer than
//     2^32-1 bytes) is a programming error; the Writer does not check it.
package xdr

import "errors"

// ErrMalformed is wrapped by every decode error.
var ErrMalformed = errors.New("xdr: malformed data")

// pad returns the number of zero bytes that follow n bytes of opaque data.
func pad(n int) int { return (4 - n&3) & 3 }
