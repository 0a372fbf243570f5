// Package layers holds Strata's micro-protocol layers and Configure, which
// chooses a stack from required properties.
//
// Point-to-point stack, top to bottom, with the header each layer pushes:
//
//	top     (no header)   application interface; swallows timer events
//	rpc     kind u8, id u64            request/response, deadlines, cancel
//	pt2ptw  kind u8, credit u32        per-peer credit flow control
//	frag    kind u8, id u32, idx u16, n u16   fragmentation/reassembly
//	pt2pt   kind u8, epoch u64, seq u64, sack u64   reliable FIFO per peer
//	bottom  magic u8, version u8       binds the transport; drops foreign datagrams
//
// Every layer forwards the events it does not handle, passes ETimer up so
// that the layers above see time, and re-requests a timer (ETimerReq) for
// its next deadline after every ETimer it handles.
package layers
