package vec

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// levels runs f at every level this CPU has.
func levels(t *testing.T, f func(t *testing.T)) {
	best := SetLevel(AVX512)
	defer SetLevel(best)
	for l := Base; l <= best; l++ {
		SetLevel(l)
		t.Run(l.String(), f)
	}
}

func newRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed))
}

// inputs covers uniform ranges, every magnitude from subnormal to the
// largest float, and the IEEE specials.
func inputs(r *rand.Rand, n int) []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		1e-45, -1e-45, 1e-39, -1e-39, math.MaxFloat32, -math.MaxFloat32, 1, -1, 0.5, -0.5, 2.5, -2.5, 3.5,
		88.72, 88.73, 89, -87.3, -100, -103.9, -104, -110, 9, -9, 9.01, 0.4999, 0.5001, -0.4999}
	for len(x) < n {
		switch r.Intn(3) {
		case 0:
			x = append(x, float32(r.Float64()*220-110))
		case 1:
			x = append(x, float32(r.Float64()*8-4))
		default:
			m := math.Pow(10, r.Float64()*83-45)
			if r.Intn(2) == 0 {
				m = -m
			}
			x = append(x, float32(m))
		}
	}
	return x
}

const eps = 1.1920929e-7

func TestUnary(t *testing.T) {
	type spec struct {
		op  Unary
		f   func(float64) float64
		rel float64 // in float32 epsilons
		abs float64 // absolute floor, scaled by max(1, |x|)
	}
	specs := []spec{
		{Neg, func(x float64) float64 { return -x }, 0, 0},
		{Abs, math.Abs, 0, 0},
		{Square, func(x float64) float64 { return x * x }, 0.5, 0},
		{Sqrt, math.Sqrt, 0.5, 0},
		{Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, 1.5, 0},
		{Reciprocal, func(x float64) float64 { return 1 / x }, 0.5, 0},
		{Exp, math.Exp, 3, 1e-45},
		{Expm1, math.Expm1, 3, 1e-45},
		{Log, math.Log, 3, 0},
		{Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 4, 1e-45},
		{Tanh, math.Tanh, 4, 0},
		{Relu, func(x float64) float64 {
			if x > 0 || x != x {
				return x
			}
			return 0
		}, 0, 0},
		{Relu6, func(x float64) float64 {
			if x != x {
				return x
			}
			return math.Min(math.Max(x, 0), 6)
		}, 0, 0},
		{Floor, math.Floor, 0, 0},
		{Ceil, math.Ceil, 0, 0},
		{Round, math.RoundToEven, 0, 0},
		{Elu, func(x float64) float64 {
			if x < 0 {
				return math.Expm1(x)
			}
			return x
		}, 3, 3e-45},
		{Selu, func(x float64) float64 {
			if x < 0 {
				return 1.0507009873554805 * 1.6732632423543772 * math.Expm1(x)
			}
			return 1.0507009873554805 * x
		}, 4, 3e-45},
		{Softsign, func(x float64) float64 { return x / (1 + math.Abs(x)) }, 1.5, 0},
		{GeluErf, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, 8, 3e-7},
		{Erf, math.Erf, 8, 3e-7},
		{GeluTanh, func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}, 8, 3e-7},
	}
	levels(t, func(t *testing.T) {
		r := newRand(t)
		x := inputs(r, 20000)
		for _, s := range specs {
			y := make([]float32, len(x))
			MapUnary(s.op, x, y)
			bad := 0
			for i, v := range x {
				w := s.f(float64(v))
				g := float64(y[i])
				abs := s.abs
				if abs > 0 && math.Abs(float64(v)) > 1 {
					abs *= math.Abs(float64(v))
				}
				if !closeEnough(g, w, s.rel, abs) {
					if bad < 3 {
						t.Errorf("op %d: f(%g) = %g, want %g", s.op, v, g, float32(w))
					}
					bad++
				}
			}
			// In place gives the same.
			z := append([]float32(nil), x...)
			MapUnary(s.op, z, z)
			for i := range z {
				if z[i] != y[i] && !(z[i] != z[i] && y[i] != y[i]) {
					t.Fatalf("op %d in place differs at %g", s.op, x[i])
				}
			}
		}
	})
}

// closeEnough compares with want rounded to float32 first: rel is in
// float32 epsilons of |want|, abs an absolute floor.
func closeEnough(g, w, rel, abs float64) bool {
	w = float64(float32(w))
	if math.IsNaN(w) {
		return math.IsNaN(g)
	}
	if math.IsInf(w, 0) || math.IsInf(g, 0) {
		return g == w
	}
	return math.Abs(g-w) <= rel*eps*math.Abs(w)+abs
}

func TestBinary(t *testing.T) {
	ops := map[Binary]func(a, b float32) float32{
		Add: func(a, b float32) float32 { return a + b },
		Sub: func(a, b float32) float32 { return a - b },
		Mul: func(a, b float32) float32 { return a * b },
		Div: func(a, b float32) float32 { return a / b },
		Max: func(a, b float32) float32 {
			if a != a || a > b {
				return a
			}
			return b
		},
		Min: func(a, b float32) float32 {
			if a != a || a < b {
				return a
			}
			return b
		},
		SquaredDifference: func(a, b float32) float32 { d := a - b; return d * d },
	}
	levels(t, func(t *testing.T) {
		r := newRand(t)
		x := inputs(r, 3000)
		yv := inputs(r, 3000)
		r.Shuffle(len(yv), func(i, j int) { yv[i], yv[j] = yv[j], yv[i] })
		for op, f := range ops {
			for _, st := range [][2]int{{1, 1}, {0, 1}, {1, 0}, {0, 0}} {
				for _, n := range []int{0, 1, 7, 33, len(x)} {
					out := make([]float32, n)
					MapBinary(op, x, yv, out, st[0], st[1])
					for i := range out {
						w := f(x[i*st[0]], yv[i*st[1]])
						if out[i] != w && !(out[i] != out[i] && w != w) {
							t.Fatalf("op %d strides %v: f(%g, %g) = %g, want %g", op, st, x[i*st[0]], yv[i*st[1]], out[i], w)
						}
					}
				}
			}
		}
	})
}

func TestReduce(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, n := range []int{0, 1, 5, 16, 17, 100, 1001} {
			for _, withNaN := range []bool{false, true} {
				rows := 3
				x := make([]float32, rows*n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 10)
				}
				if withNaN && n > 0 {
					x[r.Intn(n)+n] = float32(math.NaN()) // row 1
				}
				sum, mx, mn := make([]float32, rows), make([]float32, rows), make([]float32, rows)
				RowReduce(Sum, x, n, sum, 0.5)
				RowReduce(RMax, x, n, mx, 1)
				RowReduce(RMin, x, n, mn, 1)
				for row := 0; row < rows; row++ {
					var s float64
					m, l := math.Inf(-1), math.Inf(1)
					for _, v := range x[row*n : row*n+n] {
						s += float64(v)
						if v != v {
							m, l = math.NaN(), math.NaN()
						} else if m == m {
							m, l = math.Max(m, float64(v)), math.Min(l, float64(v))
						}
					}
					if !closeEnough(float64(sum[row]), s*0.5, 1, 1e-9*float64(n)) {
						t.Errorf("n=%d row %d: sum %g, want %g", n, row, sum[row], s*0.5)
					}
					if !closeEnough(float64(mx[row]), m, 0, 0) || !closeEnough(float64(mn[row]), l, 0, 0) {
						t.Errorf("n=%d row %d: max/min %g/%g, want %g/%g", n, row, mx[row], mn[row], m, l)
					}
				}
				// Columns of the same block viewed as [rows, n].
				acc := make([]float64, n)
				ColSum(x, rows, n, acc)
				cm := make([]float32, n)
				for j := range cm {
					cm[j] = float32(math.Inf(-1))
				}
				ColMinMax(RMax, x, rows, n, cm)
				for j := 0; j < n; j++ {
					var s float64
					m := math.Inf(-1)
					for row := 0; row < rows; row++ {
						v := x[row*n+j]
						s += float64(v)
						if v != v || m != m {
							m = math.NaN()
						} else {
							m = math.Max(m, float64(v))
						}
					}
					if !(acc[j] == s || math.IsNaN(acc[j]) && math.IsNaN(s)) || !closeEnough(float64(cm[j]), m, 0, 0) {
						t.Errorf("n=%d col %d: sum %g max %g, want %g %g", n, j, acc[j], cm[j], s, m)
					}
				}
			}
		}
	})
}

func TestArgReduce(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, n := range []int{1, 2, 15, 16, 17, 1000} {
			rows := 5
			x := make([]float32, rows*n)
			for i := range x {
				x[i] = float32(r.Intn(7) - 3) // ties are common
			}
			x[n+r.Intn(n)] = float32(math.NaN())     // row 1 holds a NaN
			x[2*n+r.Intn(n)] = float32(math.Inf(1))  // row 2 an inf
			x[3*n+r.Intn(n)] = float32(math.Inf(-1)) // row 3 a -inf
			for _, op := range []Reduce{RMax, RMin} {
				out := make([]int64, rows)
				ArgReduce(op, x, n, out)
				for row := 0; row < rows; row++ {
					xr := x[row*n : row*n+n]
					want := 0
					for i, v := range xr {
						if xr[want] != xr[want] {
							break
						}
						if v != v || (op == RMax && v > xr[want]) || (op == RMin && v < xr[want]) {
							want = i
						}
					}
					if out[row] != int64(want) {
						t.Errorf("n=%d op %d row %d: index %d, want %d", n, op, row, out[row], want)
					}
				}
			}
		}
	})
}

// softmaxMaxSum is a row's max (NaN if it holds one) and the sum of
// e^(x - max), in float64: the reference softmax is e^(x - max) / sum.
func softmaxMaxSum(x []float32) (m, s float64) {
	m = math.Inf(-1)
	for _, v := range x {
		if f := float64(v); f > m || f != f {
			m = f
		}
	}
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m, s
}

// TestSoftmaxRows: rows of every length up to 70 (AVX-512's masked tails)
// and rows with -inf, +inf, NaN, all -inf and huge spreads (e^(x - max)
// underflowing to subnormals and zero), at every level, against the
// float64 softmax by the same formula (within the rounding of x - max) (a NaN or +inf in a row makes it
// NaN, as TF's does).
func TestSoftmaxRows(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	levels(t, func(t *testing.T) {
		r := newRand(t)
		var rows [][]float32
		for n := 1; n <= 70; n++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 30)
			}
			rows = append(rows, x)
		}
		rows = append(rows, []float32{1, -inf, 2, -inf}, []float32{1, inf, 2}, []float32{3, nan, 1, 0, 2},
			[]float32{-inf, -inf, -inf}, []float32{0, -90, -100, -104, -120, 88, 87}, []float32{-1e30, 1e30, 0})
		for _, x := range rows {
			n := len(x)
			y := make([]float32, n)
			Softmax(x, y, n, false)
			m, s := softmaxMaxSum(x)
			for i, v := range x {
				// x - max is rounded to float32 first: e^ of it is
				// off by |x - max| ulps relative.
				if w := math.Exp(float64(v)-m) / s; !closeEnough(float64(y[i]), w, 8+math.Min(math.Abs(float64(v)-m), 200), 1e-30) {
					t.Fatalf("row %v: softmax[%d] = %g, want %g", x, i, y[i], w)
				}
			}
		}
	})
}

func TestSoftmax(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, n := range []int{1, 3, 16, 100, 1000} {
			for _, log := range []bool{false, true} {
				x := make([]float32, 4*n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 20)
				}
				y := make([]float32, len(x))
				Softmax(x, y, n, log)
				for row := 0; row < 4; row++ {
					xr := x[row*n : row*n+n]
					m, s := softmaxMaxSum(xr)
					for i, v := range xr {
						w := math.Exp(float64(v)-m) / s
						if log {
							w = float64(v) - m - math.Log(s)
						}
						if g := float64(y[row*n+i]); !closeEnough(g, w, 8, 1e-6) {
							t.Fatalf("n=%d log=%v: softmax[%d] = %g, want %g", n, log, i, g, w)
						}
					}
				}
			}
		}
	})
}

// TestLayerNorm checks each row against float64 math, alone and with a
// residual added first (the sum rounded to float32, as the Add it
// replaces stores it).
func TestLayerNorm(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, sh := range []struct{ n, c int }{{1, 1}, {3, 3}, {17, 17}, {128, 128}, {1000, 1000}, {12, 4}, {64, 16}, {48, 48}} {
			for _, residual := range []bool{false, true} {
				x := make([]float32, 3*sh.n)
				for i := range x {
					x[i] = float32(r.NormFloat64()*5 + 100) // an offset the mean must take out
				}
				var res []float32
				sum := x
				if residual {
					res, sum = make([]float32, len(x)), make([]float32, len(x))
					for i := range res {
						res[i] = float32(r.NormFloat64() * 3)
						sum[i] = x[i] + res[i]
					}
				}
				g, b := make([]float32, sh.c), make([]float32, sh.c)
				for j := range g {
					g[j], b[j] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				y := make([]float32, len(x))
				const eps = 1e-3
				LayerNorm(x, res, y, sh.n, g, b, eps)
				for row := 0; row < 3; row++ {
					xr := sum[row*sh.n : row*sh.n+sh.n]
					var m, v float64
					for _, e := range xr {
						m += float64(e)
					}
					m /= float64(sh.n)
					for _, e := range xr {
						v += (float64(e) - m) * (float64(e) - m)
					}
					v /= float64(sh.n)
					for i, e := range xr {
						w := (float64(e)-m)/math.Sqrt(v+eps)*float64(g[i%sh.c]) + float64(b[i%sh.c])
						// x - mean in float32 carries a few ulps of |x|
						// (about 100 here), which 1/std and g scale: a row
						// of 3 values close together has a small std (the
						// avx2 path was off by 2.2e-5 on such a row).
						slack := 8 * (math.Abs(float64(e)) + math.Abs(m)) * 0x1p-24 / math.Sqrt(v+eps) * math.Abs(float64(g[i%sh.c]))
						if got := float64(y[row*sh.n+i]); math.Abs(got-w) > 2e-5*math.Max(1, math.Abs(w))+slack {
							t.Fatalf("n=%d c=%d residual %v: row %d [%d] = %g, want %g", sh.n, sh.c, residual, row, i, got, w)
						}
					}
				}
			}
		}
	})
}

func TestGemv(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, s := range [][3]int{{0, 5, 5}, {1, 1, 1}, {3, 7, 9}, {5, 1030, 1100}, {1024, 300, 300}} {
			k, n, ldb := s[0], s[1], s[2]
			for _, beta := range []float32{0, 1, -0.5} {
				x, b, y := make([]float32, k), make([]float32, k*ldb), make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range b {
					b[i] = float32(r.NormFloat64())
				}
				y0 := make([]float32, n)
				for j := range y {
					y[j] = float32(r.NormFloat64())
					if beta == 0 {
						y[j] = float32(math.NaN()) // beta 0 ignores C, NaN included
					}
					y0[j] = y[j]
				}
				const alpha = 1.5
				Gemv(x, k, b, ldb, n, alpha, beta, y)
				for j := range y {
					w, mag := 0.0, 0.0
					for i := 0; i < k; i++ {
						w += float64(x[i]) * float64(b[i*ldb+j])
						mag += math.Abs(float64(x[i]) * float64(b[i*ldb+j]))
					}
					w *= alpha
					if beta != 0 {
						w += float64(beta) * float64(y0[j])
					}
					if math.Abs(float64(y[j])-w) > 1e-6*float64(k+1)*(mag+1) {
						t.Fatalf("k=%d n=%d beta=%g: y[%d] = %g, want %g", k, n, beta, j, y[j], w)
					}
				}
			}
		}
	})
}

// TestBounds checks that bad lengths panic in Go, before C could read or
// write out of range.
func TestBounds(t *testing.T) {
	for _, f := range []func(){
		func() { MapUnary(Exp, make([]float32, 4), make([]float32, 3)) },
		func() { MapBinary(Add, make([]float32, 3), make([]float32, 4), make([]float32, 4), 1, 1) },
		func() { MapBinary(Add, make([]float32, 4), make([]float32, 4), make([]float32, 4), 2, 1) },
		func() { MapBinaryRows(Add, make([]float32, 8), make([]float32, 3), make([]float32, 8), 4, false) },
		func() { MapBinaryRows(Add, make([]float32, 3), make([]float32, 8), make([]float32, 8), 4, true) },
		func() { MapBinaryRows(Add, make([]float32, 9), make([]float32, 4), make([]float32, 9), 4, false) },
		func() { RowReduce(Sum, make([]float32, 5), 3, make([]float32, 2), 1) },
		func() { ColSum(make([]float32, 5), 2, 3, make([]float64, 3)) },
		func() { Softmax(make([]float32, 5), make([]float32, 5), 2, false) },
		func() {
			LayerNorm(make([]float32, 6), nil, make([]float32, 6), 3, make([]float32, 2), make([]float32, 2), 1e-3)
		},
		func() {
			LayerNorm(make([]float32, 6), nil, make([]float32, 6), 3, make([]float32, 3), make([]float32, 1), 1e-3)
		},
		func() {
			LayerNorm(make([]float32, 6), make([]float32, 3), make([]float32, 6), 3, make([]float32, 3), make([]float32, 3), 1e-3)
		},
		func() { GatherRows(make([]byte, 8), make([]byte, 12), []int64{0, 3}, 4) },
		func() { GatherRows(make([]byte, 8), make([]byte, 12), []int64{-1, 0}, 4) },
		func() { GatherRows(make([]byte, 7), make([]byte, 12), []int64{0, 1}, 4) },
		func() { GatherRows(make([]byte, 8), make([]byte, 12), []int32{3, 0}, 4) },
		func() { GemmNT(2, 2, 3, make([]float32, 5), 3, make([]float32, 6), 3, make([]float32, 4), 2, false) },
		func() { GemmNT(2, 3, 3, make([]float32, 6), 3, make([]float32, 9), 3, make([]float32, 6), 3, true) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on bad lengths")
				}
			}()
			f()
		}()
	}
}

// TestGatherRows checks the prefetching row gather against Go's copy of
// each row, for row lengths around and beyond the prefetched lines, row
// counts around the prefetch distance, repeated and boundary indices.
func TestGatherRows(t *testing.T) {
	r := newRand(t)
	for _, row := range []int{1, 4, 63, 64, 256, 260, 1024} {
		for _, n := range []int{1, 7, 16, 17, 40} {
			const rows = 50
			src := make([]byte, rows*row)
			r.Read(src)
			idx := make([]int64, n)
			for j := range idx {
				idx[j] = r.Int63n(rows)
			}
			idx[0], idx[n-1] = rows-1, 0
			dst := make([]byte, n*row+3)
			GatherRows(dst, src, idx, row)
			want := make([]byte, len(dst))
			for j, v := range idx {
				copy(want[j*row:], src[v*int64(row):(v+1)*int64(row)])
			}
			if string(dst) != string(want) {
				t.Fatalf("row %d n %d: the gathered rows differ from the table's", row, n)
			}
			idx32 := make([]int32, n)
			for j, v := range idx {
				idx32[j] = int32(v)
			}
			clear(dst)
			GatherRows(dst, src, idx32, row)
			if string(dst) != string(want) {
				t.Fatalf("row %d n %d: the rows gathered by int32 indices differ from the table's", row, n)
			}
		}
	}
}

// TestGemmNT checks the dot-product A B^T against float64 sums, and its
// lower-triangle path (B is A) against the full product bit for bit.
func TestGemmNT(t *testing.T) {
	if CurrentLevel() < AVX512 {
		if GemmNT(2, 2, 3, make([]float32, 6), 3, make([]float32, 6), 3, make([]float32, 4), 2, false) {
			t.Error("GemmNT ran without AVX-512")
		}
		return
	}
	r := newRand(t)
	for _, c := range [][3]int{{27, 27, 64}, {1, 1, 1}, {5, 9, 17}, {32, 32, 16}, {4, 3, 15}, {31, 30, 100}} {
		m, n, k := c[0], c[1], c[2]
		a, b := inputsRange(r, m*k), inputsRange(r, n*k)
		got := make([]float32, m*n)
		if !GemmNT(m, n, k, a, k, b, k, got, n, false) {
			t.Fatal("GemmNT refused on an AVX-512 CPU")
		}
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want, mag := 0.0, 0.0
				for p := 0; p < k; p++ {
					want += float64(a[i*k+p]) * float64(b[j*k+p])
					mag += math.Abs(float64(a[i*k+p]) * float64(b[j*k+p]))
				}
				if d := math.Abs(float64(got[i*n+j]) - want); d > 1e-6*mag+1e-30 {
					t.Fatalf("%v: C[%d,%d] = %v, want %v", c, i, j, got[i*n+j], want)
				}
			}
		}
		full, tri := make([]float32, m*m), make([]float32, m*m)
		GemmNT(m, m, k, a, k, a, k, full, m, false)
		GemmNT(m, m, k, a, k, a, k, tri, m, true)
		for i := range full {
			if math.Float32bits(full[i]) != math.Float32bits(tri[i]) {
				t.Fatalf("%v: A A^T element %d is %v from the lower triangle, %v computed", c, i, tri[i], full[i])
			}
		}
	}
}

// inputsRange is n uniform draws from [-1, 1).
func inputsRange(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

// TestChannelAffine checks the fused epilogue against a Go loop for row
// counts around the block size, with and without scale and activation.
func TestChannelAffine(t *testing.T) {
	levels(t, func(t *testing.T) {
		r := newRand(t)
		for _, c := range []int{1, 3, 64, 130, 5000} {
			for _, rows := range []int{0, 1, 7, 4096/c + 3} {
				for _, act := range []Unary{-1, Relu, Relu6, Elu} {
					for _, withScale := range []bool{false, true} {
						x := make([]float32, rows*c)
						for i := range x {
							x[i] = float32(r.Float64()*8 - 4)
						}
						off := make([]float32, c)
						var sc []float32
						for j := range off {
							off[j] = float32(r.Float64()*2 - 1)
						}
						if withScale {
							sc = make([]float32, c)
							for j := range sc {
								sc[j] = float32(r.Float64()*2 - 1)
							}
						}
						want := make([]float64, len(x))
						for i, v := range x {
							w := float64(v)
							if sc != nil {
								w = float64(float32(w * float64(sc[i%c])))
							}
							w = float64(float32(w + float64(off[i%c])))
							switch act {
							case Relu:
								w = math.Max(w, 0)
							case Relu6:
								w = math.Min(math.Max(w, 0), 6)
							case Elu:
								if w < 0 {
									w = math.Expm1(w)
								}
							}
							want[i] = w
						}
						ChannelAffine(x, sc, off, act)
						for i := range x {
							if !closeEnough(float64(x[i]), want[i], 4*eps, 4*eps) {
								t.Fatalf("c=%d rows=%d act=%d scale=%v: x[%d] = %v, want %v", c, rows, act, withScale, i, x[i], want[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestGemmPackedActBits holds every activation of the packed GEMM's
// epilogue, whether its tiles apply it in registers (Relu, the exact
// GELU) or call MapUnary on the rows they stored, to MapUnary's bits over
// the product without it: a fused layer gives what the unfused kernels
// give, for tiles and for the one-row GEMV, at every width a panel can
// have. Inputs are scaled so that the GELU's erf saturates in some lanes.
func TestGemmPackedActBits(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		t.Skip("the packed GEMM needs AVX-512")
	}
	r := newRand(t)
	randn := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		return x
	}
	for _, act := range []Unary{Relu, Relu6, Elu, Selu, Tanh, Sigmoid, GeluErf, GeluTanh} {
		for _, m := range []int{1, 5, 9} {
			for _, n := range []int{1, 17, 33, 70, 130} {
				for _, k := range []int{3, 64} {
					a, b, bias := randn(m*k, 1), randn(k*n, 3/math.Sqrt(float64(k))), randn(n, 1)
					p := PackB(false, k, n, b, n)
					want, got := make([]float32, m*n), make([]float32, m*n)
					GemmPacked(m, a, k, p, want, n, bias, false, -1, 0, m, 0, p.Panels())
					MapUnary(act, want, want)
					GemmPacked(m, a, k, p, got, n, bias, false, act, 0, m, 0, p.Panels())
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("act %d m=%d n=%d k=%d: C[%d] = %g (%#x), MapUnary gives %g (%#x)", act, m, n, k, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

// TestGemmPacked checks the packed GEMM against float64 sums over shapes
// around its tile (8 rows) and panel (32 columns), B plain and
// transposed, with bias, accumulation and activation, and that any split
// of C into row ranges and panel ranges gives the bits of one call.
func TestGemmPacked(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		t.Skip("the packed GEMM needs AVX-512; callers fall back to OpenBLAS (TestGemmPackedFallback)")
	}
	r := newRand(t)
	randn := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	for _, m := range []int{1, 2, 7, 8, 9, 16, 17, 70} {
		for _, n := range []int{1, 10, 16, 17, 31, 32, 33, 100, 130, 300} {
			for _, k := range []int{0, 1, 5, 17, 130} {
				for _, v := range []struct {
					transB, bias, accum bool
					act                 Unary
				}{{false, false, false, -1}, {true, true, false, -1}, {false, true, false, Relu}, {false, false, true, GeluErf}, {true, true, true, -1}} {
					lda, ldc := k+3, n+2
					a, c := randn(m*lda), randn(m*ldc)
					c0 := append([]float32(nil), c...)
					var b []float32
					ldb := n + 1
					if v.transB {
						ldb = k + 1
						b = randn(n * ldb)
					} else {
						b = randn(k * ldb)
					}
					var bias []float32
					if v.bias {
						bias = randn(n)
					}
					p := PackB(v.transB, k, n, b, ldb)
					if !GemmPacked(m, a, lda, p, c, ldc, bias, v.accum, v.act, 0, m, 0, p.Panels()) {
						t.Fatal("GemmPacked refused at AVX-512")
					}
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							w, mag := 0.0, 0.0
							if v.accum {
								w = float64(c0[i*ldc+j])
							} else if bias != nil {
								w = float64(bias[j])
							}
							mag = math.Abs(w)
							for q := 0; q < k; q++ {
								var bv float32
								if v.transB {
									bv = b[j*ldb+q]
								} else {
									bv = b[q*ldb+j]
								}
								w += float64(a[i*lda+q]) * float64(bv)
								mag += math.Abs(float64(a[i*lda+q]) * float64(bv))
							}
							switch v.act {
							case Relu:
								w = math.Max(w, 0)
							case GeluErf:
								w = 0.5 * w * (1 + math.Erf(w/math.Sqrt2))
							}
							if math.Abs(float64(c[i*ldc+j])-w) > 4e-7*float64(k+1)*(mag+1) {
								t.Fatalf("m=%d n=%d k=%d %+v: C[%d,%d] = %g, want %g", m, n, k, v, i, j, c[i*ldc+j], w)
							}
						}
						// The padding between rows is not written.
						for j := n; j < ldc && i < m-1; j++ {
							if c[i*ldc+j] != c0[i*ldc+j] && !(math.IsNaN(float64(c[i*ldc+j])) && math.IsNaN(float64(c0[i*ldc+j]))) {
								t.Fatalf("m=%d n=%d k=%d: C[%d,%d] past n written", m, n, k, i, j)
							}
						}
					}
					// Any split gives the same bits.
					s := append([]float32(nil), c0...)
					for r0 := 0; r0 < m; {
						r1 := min(m, r0+1+r.Intn(m))
						for p0 := 0; p0 < p.Panels(); {
							p1 := min(p.Panels(), p0+1+r.Intn(3))
							GemmPacked(m, a, lda, p, s, ldc, bias, v.accum, v.act, r0, r1, p0, p1)
							p0 = p1
						}
						r0 = r1
					}
					for i := range s {
						if math.Float32bits(s[i]) != math.Float32bits(c[i]) {
							t.Fatalf("m=%d n=%d k=%d %+v: a split C differs at %d: %g vs %g", m, n, k, v, i, s[i], c[i])
						}
					}
					// A row alone (a GEMV, panels in groups) has the bits
					// it has among the others (tiles of rows).
					for i := 0; i < m; i++ {
						row := append([]float32(nil), c0[i*ldc:i*ldc+n]...)
						GemmPacked(1, a[i*lda:], lda, p, row, ldc, bias, v.accum, v.act, 0, 1, 0, p.Panels())
						for j := range row {
							if math.Float32bits(row[j]) != math.Float32bits(c[i*ldc+j]) {
								t.Fatalf("m=%d n=%d k=%d %+v: row %d alone differs at %d: %g vs %g", m, n, k, v, i, j, row[j], c[i*ldc+j])
							}
						}
					}
					// A narrow B's dots are GemmNT's, bit for bit.
					if n <= Narrow && k > 0 && !v.bias && !v.accum && v.act < 0 {
						bt := make([]float32, n*k)
						for j := 0; j < n; j++ {
							for q := 0; q < k; q++ {
								if v.transB {
									bt[j*k+q] = b[j*ldb+q]
								} else {
									bt[j*k+q] = b[q*ldb+j]
								}
							}
						}
						g := append([]float32(nil), c0...)
						if !GemmNT(m, n, k, a, lda, bt, k, g, ldc, false) {
							t.Fatal("GemmNT refused at AVX-512")
						}
						for i := range g {
							if math.Float32bits(g[i]) != math.Float32bits(c[i]) {
								t.Fatalf("m=%d n=%d k=%d %+v: GemmNT differs from a narrow GemmPacked at %d: %g vs %g", m, n, k, v, i, g[i], c[i])
							}
						}
					}
					// Gemm, packing as it goes, has GemmPacked's bits
					// where GemmPacked runs tiles (a narrow B is dots).
					if !v.bias && !v.accum && v.act < 0 && n > Narrow {
						g := append([]float32(nil), c0...)
						if !Gemm(v.transB, m, n, k, a, lda, b, ldb, g, ldc) {
							t.Fatal("Gemm refused at AVX-512")
						}
						for i := range g {
							if math.Float32bits(g[i]) != math.Float32bits(c[i]) {
								t.Fatalf("m=%d n=%d k=%d %+v: Gemm differs from GemmPacked at %d: %g vs %g", m, n, k, v, i, g[i], c[i])
							}
						}
					}
				}
			}
		}
	}
	// Bad arguments panic in Go before C could read or write out of range.
	p := PackB(false, 4, 4, make([]float32, 16), 4)
	for _, f := range []func(){
		func() { GemmPacked(2, make([]float32, 7), 4, p, make([]float32, 8), 4, nil, false, -1, 0, 2, 0, 1) },
		func() { GemmPacked(2, make([]float32, 8), 4, p, make([]float32, 7), 4, nil, false, -1, 0, 2, 0, 1) },
		func() { GemmPacked(2, make([]float32, 8), 4, p, make([]float32, 8), 4, nil, false, -1, 0, 3, 0, 1) },
		func() { GemmPacked(2, make([]float32, 8), 4, p, make([]float32, 8), 4, nil, false, -1, 0, 2, 0, 2) },
		func() {
			GemmPacked(2, make([]float32, 8), 4, p, make([]float32, 8), 4, make([]float32, 3), false, -1, 0, 2, 0, 1)
		},
		func() { PackB(true, 4, 4, make([]float32, 15), 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on bad arguments")
				}
			}()
			f()
		}()
	}
}

// TestGemmPackedReluBits holds the tiles' Relu, applied in registers, to
// MapUnary's bit for bit: +0 for -0 and for negatives, NaN kept. Rows of
// -0 times a B with a -0 bias make -0 sums; NaN and infinities in A and
// the bias make NaN and +-Inf ones.
func TestGemmPackedReluBits(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		t.Skip("the packed GEMM needs AVX-512")
	}
	r := newRand(t)
	negZero := float32(math.Copysign(0, -1))
	for _, m := range []int{1, 3, 8, 13} {
		for _, n := range []int{5, 32, 40, 130} {
			for _, k := range []int{0, 7, 64} {
				a, b := inputs(r, m*k+40)[:m*k], make([]float32, k*n)
				r.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
				for i := range b {
					b[i] = float32(r.NormFloat64())
				}
				if m > 1 && k > 0 {
					for q := 0; q < k; q++ {
						a[k+q] = negZero // row 1 sums to -0 from a -0 bias
					}
				}
				bias := inputs(r, n)[:n]
				for j := range bias {
					if j%3 == 0 {
						bias[j] = negZero
					}
				}
				p := PackB(false, k, n, b, n)
				want, got := make([]float32, m*n), make([]float32, m*n)
				GemmPacked(m, a, max(k, 1), p, want, n, bias, false, -1, 0, m, 0, p.Panels())
				MapUnary(Relu, want, want)
				GemmPacked(m, a, max(k, 1), p, got, n, bias, false, Relu, 0, m, 0, p.Panels())
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d: C[%d] = %g (%#x), MapUnary's Relu gives %g (%#x)", m, n, k, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}

// TestGemmPackedRowBlocks covers products whose A is larger than the
// block of rows the kernel keeps in L2 (MS_ABLOCK floats), so that the
// rows run as several blocks, each over all the panels: the result is
// the float64 product's within rounding, and a split of the rows or a row
// alone has the same bits.
func TestGemmPackedRowBlocks(t *testing.T) {
	if SetLevel(AVX512) < AVX512 {
		t.Skip("the packed GEMM needs AVX-512")
	}
	r := newRand(t)
	for _, s := range [][3]int{{70, 1100, 70}, {200, 700, 33}, {129, 2048, 64}} {
		m, k, n := s[0], s[1], s[2]
		a, b, bias := make([]float32, m*k), make([]float32, k*n), make([]float32, n)
		for _, x := range [][]float32{a, b, bias} {
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
		}
		p := PackB(false, k, n, b, n)
		c := make([]float32, m*n)
		GemmPacked(m, a, k, p, c, n, bias, false, Relu, 0, m, 0, p.Panels())
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				w, mag := float64(bias[j]), math.Abs(float64(bias[j]))
				for q := 0; q < k; q++ {
					w += float64(a[i*k+q]) * float64(b[q*n+j])
					mag += math.Abs(float64(a[i*k+q]) * float64(b[q*n+j]))
				}
				w = math.Max(w, 0)
				if math.Abs(float64(c[i*n+j])-w) > 4e-7*float64(k+1)*(mag+1) {
					t.Fatalf("%dx%dx%d: C[%d,%d] = %g, want %g", m, k, n, i, j, c[i*n+j], w)
				}
			}
		}
		s := make([]float32, m*n)
		for r0 := 0; r0 < m; {
			r1 := min(m, r0+1+r.Intn(m))
			GemmPacked(m, a, k, p, s, n, bias, false, Relu, r0, r1, 0, p.Panels())
			r0 = r1
		}
		for i := 0; i < m; i++ {
			row := make([]float32, n)
			GemmPacked(1, a[i*k:], k, p, row, n, bias, false, Relu, 0, 1, 0, p.Panels())
			for j := range row {
				if math.Float32bits(row[j]) != math.Float32bits(c[i*n+j]) || math.Float32bits(s[i*n+j]) != math.Float32bits(c[i*n+j]) {
					t.Fatalf("%dx%dx%d: C[%d,%d] = %g whole, %g alone, %g split", m, k, n, i, j, c[i*n+j], row[j], s[i*n+j])
				}
			}
		}
	}
}

// TestPackBNarrow: a B of at most Narrow columns is held as its n x k
// transpose, not in a panel 32 columns wide, so that a head of one column
// streams k floats a row rather than 32 k (TestGemmPacked checks its
// products).
func TestPackBNarrow(t *testing.T) {
	for _, c := range []struct{ k, n, want int }{{256, 1, 256}, {2048, 10, 20480}, {64, 16, 1024}, {64, 17, 2048}, {0, 1, 0}} {
		for _, transB := range []bool{false, true} {
			b := make([]float32, c.k*c.n)
			for i := range b {
				b[i] = float32(i)
			}
			ldb := c.n
			if transB {
				ldb = max(c.k, 1)
			}
			if got := len(PackB(transB, c.k, c.n, b, ldb).data); got != c.want {
				t.Errorf("PackB(%v, k=%d, n=%d) holds %d floats, want %d", transB, c.k, c.n, got, c.want)
			}
		}
	}
}
