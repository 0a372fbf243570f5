package stackbench

import "testing"

func BenchmarkCode100(b *testing.B) {
	for _, mode := range Modes {
		b.Run(mode, func(b *testing.B) { CodeLatency(100, b.N, mode) })
	}
}

func BenchmarkGroupCode100(b *testing.B) {
	for _, st := range GroupStacks {
		for _, mode := range Modes {
			b.Run(st+"/"+mode, func(b *testing.B) { GroupCodeLatency(st, 100, b.N, mode) })
		}
	}
}
