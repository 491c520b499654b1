package dnnl

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

func randn(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64, seed int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*(1+math.Abs(want[i]))) {
			t.Fatalf("%s [%d] = %v, want %v (seed %d)", what, i, got[i], want[i], seed)
		}
	}
}

// run makes the primitive through a Cache and runs it twice (the second
// time from the cache), checking each answer.
func run[D comparable](t *testing.T, d D, check func(), args ...[]float32) {
	t.Helper()
	var c Cache[D]
	for rep := 0; rep < 2; rep++ {
		p, err := c.Get(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rep == 1 {
			if p2, _ := c.Get(d, 0); p2 != p {
				t.Fatal("Cache.Get made the primitive again")
			}
		}
		if err := p.Run(make([]byte, p.WorkBytes()), args...); err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		check()
	}
}

// TestSoftmax checks Softmax and LogSoftmax along rows against float64.
func TestSoftmax(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	for _, d := range []SoftmaxDesc{{Rows: 1, Cols: 1}, {Rows: 3, Cols: 7}, {Rows: 64, Cols: 128, Log: true}, {Rows: 5, Cols: 1000}, {Rows: 2, Cols: 33, Log: true}} {
		x := randn(r, d.Rows*d.Cols)
		for i := range x {
			x[i] *= 4
		}
		want := make([]float64, len(x))
		for row := 0; row < d.Rows; row++ {
			xs, ws := x[row*d.Cols:(row+1)*d.Cols], want[row*d.Cols:(row+1)*d.Cols]
			mx := math.Inf(-1)
			for _, v := range xs {
				mx = math.Max(mx, float64(v))
			}
			sum := 0.0
			for _, v := range xs {
				sum += math.Exp(float64(v) - mx)
			}
			for i, v := range xs {
				if d.Log {
					ws[i] = float64(v) - mx - math.Log(sum)
				} else {
					ws[i] = math.Exp(float64(v)-mx) / sum
				}
			}
		}
		y := make([]float32, len(x))
		run(t, d, func() { closeTo(t, "softmax", y, want, 1e-5, seed) }, x, y)
	}
}

// TestLayerNorm checks row normalisation and its statistics against
// float64.
func TestLayerNorm(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	for _, d := range []LayerNormDesc{{Rows: 1, Cols: 5, Eps: 1e-3}, {Rows: 48, Cols: 64, Eps: 1e-6}, {Rows: 7, Cols: 129, Eps: 1e-3}} {
		x := randn(r, d.Rows*d.Cols)
		for i := range x {
			x[i] = x[i]*3 + 2
		}
		want, wm, wv := make([]float64, len(x)), make([]float64, d.Rows), make([]float64, d.Rows)
		for row := range d.Rows {
			xs := x[row*d.Cols : (row+1)*d.Cols]
			for _, v := range xs {
				wm[row] += float64(v)
			}
			wm[row] /= float64(d.Cols)
			for _, v := range xs {
				wv[row] += (float64(v) - wm[row]) * (float64(v) - wm[row])
			}
			wv[row] /= float64(d.Cols)
			for i, v := range xs {
				want[row*d.Cols+i] = (float64(v) - wm[row]) / math.Sqrt(wv[row]+float64(d.Eps))
			}
		}
		y, m, v := make([]float32, len(x)), make([]float32, d.Rows), make([]float32, d.Rows)
		run(t, d, func() {
			closeTo(t, "y", y, want, 1e-5, seed)
			closeTo(t, "mean", m, wm, 1e-5, seed)
			closeTo(t, "variance", v, wv, 1e-5, seed)
		}, x, y, m, v)
	}
}

// TestBatchNorm checks per-channel batch normalisation of NHWC data, in
// inference (given statistics) and training (the batch's, written out).
func TestBatchNorm(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	for _, d := range []BatchNormDesc{{N: 2, Spatial: 9, C: 3, Eps: 1e-3}, {N: 4, Spatial: 64, C: 32, Eps: 1e-5, Training: true}, {N: 1, Spatial: 1, C: 17, Eps: 1e-3}, {N: 3, Spatial: 5, C: 5, Eps: 1e-3, Training: true}} {
		x := randn(r, d.N*d.Spatial*d.C)
		scale, shift := randn(r, d.C), randn(r, d.C)
		mean, variance := randn(r, d.C), randn(r, d.C)
		for i := range variance {
			variance[i] = variance[i]*variance[i] + 0.1
		}
		wm, wv := make([]float64, d.C), make([]float64, d.C)
		rows := d.N * d.Spatial
		for c := range d.C {
			if d.Training {
				for i := range rows {
					wm[c] += float64(x[i*d.C+c])
				}
				wm[c] /= float64(rows)
				for i := range rows {
					dv := float64(x[i*d.C+c]) - wm[c]
					wv[c] += dv * dv
				}
				wv[c] /= float64(rows)
			} else {
				wm[c], wv[c] = float64(mean[c]), float64(variance[c])
			}
		}
		want := make([]float64, len(x))
		for i, v := range x {
			c := i % d.C
			want[i] = (float64(v)-wm[c])/math.Sqrt(wv[c]+float64(d.Eps))*float64(scale[c]) + float64(shift[c])
		}
		y := make([]float32, len(x))
		run(t, d, func() {
			closeTo(t, "y", y, want, 1e-5, seed)
			if d.Training {
				closeTo(t, "mean", mean, wm, 1e-5, seed)
				closeTo(t, "variance", variance, wv, 1e-5, seed)
			}
		}, x, y, scale, shift, mean, variance)
	}
}

// TestMatMul checks matmul with transposes, bias and each activation
// against float64.
func TestMatMul(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	acts := map[int]func(float64) float64{
		ActNone: func(x float64) float64 { return x }, ActRelu: func(x float64) float64 { return math.Max(x, 0) },
		ActRelu6: func(x float64) float64 { return math.Min(math.Max(x, 0), 6) },
		ActElu: func(x float64) float64 {
			if x < 0 {
				return math.Expm1(x)
			}
			return x
		},
		ActTanh: math.Tanh, ActSigmoid: func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
		ActGeluErf:  func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) },
		ActGeluTanh: func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) },
		ActLeakyRelu: func(x float64) float64 {
			if x < 0 {
				return 0.2 * x
			}
			return x
		},
	}
	shapes := []MatMulDesc{{M: 1, K: 7, N: 5}, {M: 16, K: 64, N: 33, TA: true}, {M: 9, K: 3, N: 2, TB: true}, {M: 32, K: 100, N: 70, TA: true, TB: true}}
	for i, d := range shapes {
		for act, f := range acts {
			d.Act, d.Bias, d.Alpha = act, (i+act)%2 == 0, 0.2
			a, b, bias := randn(r, d.M*d.K), randn(r, d.K*d.N), randn(r, d.N)
			want := make([]float64, d.M*d.N)
			for m := range d.M {
				for n := range d.N {
					s := 0.0
					for k := range d.K {
						ai, bi := m*d.K+k, k*d.N+n
						if d.TA {
							ai = k*d.M + m
						}
						if d.TB {
							bi = n*d.K + k
						}
						s += float64(a[ai]) * float64(b[bi])
					}
					if d.Bias {
						s += float64(bias[n])
					}
					want[m*d.N+n] = f(s)
				}
			}
			y := make([]float32, d.M*d.N)
			args := [][]float32{a, b, y}
			if d.Bias {
				args = append(args, bias)
			}
			run(t, d, func() { closeTo(t, "matmul", y, want, 1e-4, seed) }, args...)
		}
	}
}

// TestFallbackWarns checks that a desc oneDNN cannot make is warned about
// once, naming the node, and counted.
func TestFallbackWarns(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	var got []string
	loadMu.Lock()
	old := wanted.Warn
	wanted.Warn = func(msg string) { got = append(got, msg) }
	loadMu.Unlock()
	defer func() {
		loadMu.Lock()
		wanted.Warn = old
		loadMu.Unlock()
	}()
	before := Fallbacks()
	c := Cache[SoftmaxDesc]{Node: "model/bad_softmax"}
	bad := SoftmaxDesc{Rows: -1, Cols: 4} // an invalid shape oneDNN refuses
	for range 3 {
		if _, err := c.Get(bad, 0); err == nil {
			t.Fatal("oneDNN made a softmax of -1 rows")
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "'model/bad_softmax'") || Fallbacks() != before+1 {
		t.Fatalf("warnings %q, fallbacks %d -> %d: want one naming the node, counted once", got, before, Fallbacks())
	}
	cc := ConvCache{Node: "model/bad_conv"}
	if _, err := cc.Get(ConvDesc{N: 1, H: 4, W: 4, C: 2, O: 2, KH: 9, KW: 9, SH: 1, SW: 1, DH: 1, DW: 1, OH: -5, OW: -5}, 0); err == nil {
		t.Fatal("oneDNN made a convolution of a negative output size")
	}
	if len(got) != 2 || !strings.Contains(got[1], "'model/bad_conv'") {
		t.Fatalf("warnings %q: want the convolution's, naming its node", got)
	}
}

// TestPrimitivesReported checks that each primitive made is counted under
// its kind and oneDNN's implementation name, as the stats show them.
func TestPrimitivesReported(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	var c Cache[SoftmaxDesc]
	p, err := c.Get(SoftmaxDesc{Rows: 3, Cols: 1001}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Impl == "" || !strings.Contains(Loaded().Primitives, "softmax "+p.Impl+" x") {
		t.Fatalf("primitives %q: want softmax %s counted", Loaded().Primitives, p.Impl)
	}
	t.Logf("%s", Loaded().Primitives)
}
