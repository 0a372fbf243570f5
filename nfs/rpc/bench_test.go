package rpc

import (
	"context"
	"testing"
)

func benchCalls(b *testing.B, network string, argSize int) {
	s, _ := newTestServer(b)
	var addr string
	if network == "udp" {
		addr = serveUDP(b, s, nil)
	} else {
		addr = serveTCP(b, s)
	}
	c, err := Dial(context.Background(), network, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetAuthSys(AuthSys{Machine: "bench", UID: 1, GID: 1, GIDs: []uint32{1, 2}})
	args := opaqueArgs(make([]byte, argSize))
	ctx := context.Background()
	b.SetBytes(int64(argSize))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Call(ctx, testProg, 1, procEcho, args); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkEchoTCP(b *testing.B)    { benchCalls(b, "tcp", 0) }
func BenchmarkEchoTCP64K(b *testing.B) { benchCalls(b, "tcp", 64<<10) }
func BenchmarkEchoUDP(b *testing.B)    { benchCalls(b, "udp", 0) }
