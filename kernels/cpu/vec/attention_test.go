package vec

import (
	"math"
	"testing"
)

// attentionRef is out = softmax(scale q k^T) v in float64, q scaled
// (rounded to float32) first with scaleQ, as the unfused graph does; the
// scores are rounded to float32, as the graph's scores tensor holds them,
// for softmaxMaxSum.
func attentionRef(sq, sk, d, dv int, q []float32, ldq int, k []float32, ldk int, v []float32, ldv int, scale float32, scaleQ bool) []float64 {
	out := make([]float64, sq*dv)
	s := make([]float32, sk)
	for i := 0; i < sq; i++ {
		for j := range s {
			var dot float64
			for c := 0; c < d; c++ {
				a := q[i*ldq+c]
				if scaleQ {
					a *= scale
				}
				dot += float64(a) * float64(k[j*ldk+c])
			}
			if !scaleQ {
				dot *= float64(scale)
			}
			s[j] = float32(dot)
		}
		m, sum := softmaxMaxSum(s)
		for c := 0; c < dv; c++ {
			for j, x := range s {
				out[i*dv+c] += math.Exp(float64(x)-m) / sum * float64(v[j*ldv+c])
			}
		}
	}
	return out
}

// TestAttention: every tail of the blocks (query rows past a multiple of
// 6, keys past 16 and 64, values past 16 and 32), depth 0, strided
// operands and both places of the scale, against float64 math; the
// caller's rows past ldo's columns are left alone.
func TestAttention(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		if Attention(1, 1, 1, 1, []float32{1}, 1, []float32{1}, 1, []float32{1}, 1, []float32{0}, 1, 1, false, make([]float32, AttentionScratch(1, 1))) {
			t.Fatal("Attention ran below AVX-512")
		}
		t.Skip("no AVX-512: Attention reports false, the kernel takes its GEMMs")
	}
	r := newRand(t)
	for _, c := range []struct{ sq, sk, d, dv int }{
		{64, 64, 32, 32}, {1, 1, 1, 1}, {7, 5, 3, 2}, {13, 17, 8, 16}, {6, 64, 32, 33}, {5, 65, 31, 48},
		{12, 130, 16, 64}, {3, 9, 0, 4}, {1, 200, 64, 17}, {19, 16, 1, 31},
	} {
		for _, scaleQ := range []bool{false, true} {
			ldq, ldk, ldv, ldo := c.d+3, c.d+5, c.dv+2, c.dv+4
			rnd := func(n int, lo, hi float64) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(lo + (hi-lo)*r.Float64())
				}
				return x
			}
			q, k, v := rnd(c.sq*ldq, -2, 2), rnd(c.sk*ldk, -2, 2), rnd(c.sk*ldv, -3, 3)
			out := rnd(c.sq*ldo, 100, 101)
			keep := append([]float32(nil), out...)
			scale := float32(0.3 + r.Float64())
			if !Attention(c.sq, c.sk, c.d, c.dv, q, ldq, k, ldk, v, ldv, out, ldo, scale, scaleQ, make([]float32, AttentionScratch(c.sk, c.d))) {
				t.Fatal("Attention refused at AVX-512")
			}
			want := attentionRef(c.sq, c.sk, c.d, c.dv, q, ldq, k, ldk, v, ldv, scale, scaleQ)
			for i := 0; i < c.sq; i++ {
				for j := 0; j < ldo; j++ {
					g := out[i*ldo+j]
					if j >= c.dv {
						if g != keep[i*ldo+j] {
							t.Fatalf("%+v: out[%d][%d] past dv written", c, i, j)
						}
						continue
					}
					// float32 sums over sk keys against a float64
					// reference: over 400 seeds the largest error was
					// 1.28e-5 x (1+|want|), and 1e-5 failed 3 runs in 300.
					if w := want[i*c.dv+j]; math.Abs(float64(g)-w) > 5e-5*(1+math.Abs(w)) {
						t.Fatalf("%+v scaleQ=%v: out[%d][%d] = %g, want %g", c, scaleQ, i, j, g, w)
					}
				}
			}
		}
	}
}

// TestAttentionRowMax: scores far below zero (a row's exponentials all
// underflow unless its max is taken over the real keys only, not the
// zero padding past sk) and a NaN query, which makes its row NaN as the
// unfused softmax does.
func TestAttentionRowMax(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		t.Skip("no AVX-512")
	}
	sq, sk, d, dv := 2, 5, 1, 2
	q := []float32{1, float32(math.NaN())}
	k := []float32{-300, -301, -302, -303, -304}
	v := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	out := make([]float32, sq*dv)
	Attention(sq, sk, d, dv, q, d, k, d, v, dv, out, dv, 1, false, make([]float32, AttentionScratch(sk, d)))
	want := attentionRef(1, sk, d, dv, q, d, k, d, v, dv, 1, false)
	for j := 0; j < dv; j++ {
		if math.Abs(float64(out[j])-want[j]) > 1e-5*(1+math.Abs(want[j])) {
			t.Errorf("row 0: out[%d] = %g, want %g", j, out[j], want[j])
		}
		if !math.IsNaN(float64(out[dv+j])) {
			t.Errorf("row 1 (NaN query): out[%d] = %g, want NaN", j, out[dv+j])
		}
	}
}
