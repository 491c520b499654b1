package cpu

import (
	"math"
	"testing"

	"mstream/tensor"
)

// TestBinaryTiled runs the binary ops where one operand is a block of the
// output's trailing dimensions repeated over the leading ones (a bias of
// [heads, depth] on [B, T, heads, depth]), on either side, which the
// fast path does in rows of the block, and shapes that look alike but are
// not that (a column, a middle dimension), and holds every element to
// float32 arithmetic on the broadcast indices.
func TestBinaryTiled(t *testing.T) {
	r := newRand(t)
	ops := map[string]func(p, q float32) float32{
		"AddV2": func(p, q float32) float32 { return p + q }, "Sub": func(p, q float32) float32 { return p - q },
		"Mul": func(p, q float32) float32 { return p * q }, "RealDiv": func(p, q float32) float32 { return p / q },
		"SquaredDifference": func(p, q float32) float32 { d := p - q; return d * d },
	}
	for _, c := range [][2]tensor.Shape{
		{{16, 8, 4, 32}, {4, 32}}, {{4, 32}, {16, 8, 4, 32}}, {{3, 5, 40}, {1, 5, 40}}, {{2, 1, 3, 40}, {3, 40}},
		{{6, 1, 7, 33}, {1, 1, 7, 33}}, {{9, 64}, {64}}, {{5, 7, 40}, {7, 1}}, {{5, 7, 40}, {1, 7, 1}}, {{5, 7, 40}, {5, 1, 40}},
	} {
		for name, f := range ops {
			a, _ := randTensor(r, f32, c[0])
			b, _ := randTensor(r, f32, c[1])
			bc, ok := broadcastShapes(c[0], c[1])
			if !ok {
				t.Fatalf("%v and %v do not broadcast", c[0], c[1])
			}
			got := mustRun(t, node(name, nil, []tensor.DType{f32, f32}, f32), a, b)[0]
			if !got.Shape.Equal(bc.out) {
				t.Fatalf("%s %v %v: shape %v, want %v", name, c[0], c[1], got.Shape, bc.out)
			}
			idx := make([]int64, len(bc.out))
			for i := range got.F32() {
				rem, ai, bi := int64(i), int64(0), int64(0)
				for d := len(bc.out) - 1; d >= 0; d-- {
					idx[d] = rem % bc.out[d]
					rem /= bc.out[d]
					ai += idx[d] * bc.sa[d]
					bi += idx[d] * bc.sb[d]
				}
				want := f(a.F32()[ai], b.F32()[bi])
				if g := got.F32()[i]; math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
					t.Fatalf("%s %v %v: [%d] = %v, want %v", name, c[0], c[1], i, g, want)
				}
			}
		}
	}
}
