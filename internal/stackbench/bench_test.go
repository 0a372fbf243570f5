package stackbench

import "testing"

func BenchmarkCode100(b *testing.B) {
	CodeLatency(100, b.N, false)
}
