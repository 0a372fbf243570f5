package transport

import (
	"strata/stack"
	"testing"
)

func benchTCPSend(b *testing.B, size int) {
	a, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	r, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.SetReceiver(func(_ stack.Addr, _ []byte) {})
	vec := [][]byte{make([]byte, 16), make([]byte, size)}
	b.SetBytes(int64(size + 16))
	b.ResetTimer()
	for range b.N {
		if err := a.Send(r.Local(), vec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTCPSend64(b *testing.B)  { benchTCPSend(b, 64) }
func BenchmarkTCPSend64K(b *testing.B) { benchTCPSend(b, 64<<10) }

func benchUDPSend(b *testing.B, vecs int) {
	a, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	r, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.SetReceiver(func(_ stack.Addr, _ []byte) {})
	vec := make([][]byte, vecs)
	for i := range vec {
		vec[i] = make([]byte, 1200/vecs)
	}
	b.SetBytes(1200)
	b.ResetTimer()
	for range b.N {
		if err := a.Send(r.Local(), vec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUDPSend1(b *testing.B) { benchUDPSend(b, 1) }
func BenchmarkUDPSend3(b *testing.B) { benchUDPSend(b, 3) }

func BenchmarkPeek(b *testing.B) {
	a, _ := ListenTCP("127.0.0.1:0")
	defer a.Close()
	r, _ := ListenTCP("127.0.0.1:0")
	defer r.Close()
	a.Send(r.Local(), nil)
	p := a.peers[r.Local()]
	b.ResetTimer()
	for range b.N {
		if peerClosed(p.oc.c) {
			b.Fatal("closed")
		}
	}
}
