package vec

import (
	"fmt"
	"testing"
)

// BenchmarkUnary times the transcendental maps over 64K elements (a
// transformer's FFN activation at B=1 is 32K), in ns per element.
func BenchmarkUnary(b *testing.B) {
	x, y := make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%2001)/250 - 4
	}
	for _, op := range []struct {
		name string
		op   Unary
	}{{"Erf", Erf}, {"GeluErf", GeluErf}, {"GeluTanh", GeluTanh}, {"Exp", Exp}, {"Tanh", Tanh}, {"Sigmoid", Sigmoid}} {
		b.Run(fmt.Sprintf("%s/%s", op.name, CurrentLevel()), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				MapUnary(op.op, x, y)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}
