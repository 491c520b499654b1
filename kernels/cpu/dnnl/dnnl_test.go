package dnnl

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"testing"
	"time"

	"mstream/hostmem"
)

func refConv(d ConvDesc, src, wei, bias []float32) []float64 {
	out := make([]float64, d.N*d.OH*d.OW*d.O)
	for n := 0; n < d.N; n++ {
		for oy := 0; oy < d.OH; oy++ {
			for ox := 0; ox < d.OW; ox++ {
				for o := 0; o < d.O; o++ {
					s := 0.0
					if d.Bias {
						s = float64(bias[o])
					}
					for ky := 0; ky < d.KH; ky++ {
						y := oy*d.SH - d.PT + ky*d.DH
						if y < 0 || y >= d.H {
							continue
						}
						for kx := 0; kx < d.KW; kx++ {
							x := ox*d.SW - d.PL + kx*d.DW
							if x < 0 || x >= d.W {
								continue
							}
							for c := 0; c < d.C; c++ {
								s += float64(src[((n*d.H+y)*d.W+x)*d.C+c]) * float64(wei[((ky*d.KW+kx)*d.C+c)*d.O+o])
							}
						}
					}
					if d.Relu && s < 0 {
						s = 0
					}
					out[((n*d.OH+oy)*d.OW+ox)*d.O+o] = s
				}
			}
		}
	}
	return out
}

// TestConv checks oneDNN's convolution against a float64 loop over
// strides, paddings (SAME-like, asymmetric, none), dilations, bias and ReLU,
// and that a cached primitive is reused and gives the same answer again:
// with the weights reordered per Run, then as a constant filter packed on
// its first Run (once) and reused, then, given other weights that are not
// declared constant, with those.
func TestConv(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	t.Logf("%s", Loaded())
	if _, set := os.LookupEnv("OMP_WAIT_POLICY"); set && Loaded().OMPWaitPolicySet {
		t.Fatal("Load left OMP_WAIT_POLICY set in the environment")
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	var cache ConvCache
	for _, d := range []ConvDesc{
		{N: 1, H: 5, W: 5, C: 1, O: 1, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1},
		{N: 2, H: 9, W: 7, C: 3, O: 8, KH: 3, KW: 2, SH: 2, SW: 1, DH: 1, DW: 1, PT: 0, PL: 0, PB: 1, PR: 1, Bias: true},
		{N: 3, H: 16, W: 16, C: 16, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, Bias: true, Relu: true},
		{N: 1, H: 11, W: 10, C: 4, O: 5, KH: 3, KW: 3, SH: 2, SW: 3, DH: 2, DW: 1, Relu: true},
		{N: 2, H: 8, W: 8, C: 64, O: 16, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Bias: true},
		{N: 1, H: 5, W: 6, C: 2, O: 3, KH: 2, KW: 2, SH: 2, SW: 2, DH: 1, DW: 1}, // VALID with a remainder
	} {
		d.OH = (d.H+d.PT+d.PB-(d.KH-1)*d.DH-1)/d.SH + 1
		d.OW = (d.W+d.PL+d.PR-(d.KW-1)*d.DW-1)/d.SW + 1
		src := make([]float32, d.N*d.H*d.W*d.C)
		wei := make([]float32, d.KH*d.KW*d.C*d.O)
		bias := make([]float32, d.O)
		for _, s := range [][]float32{src, wei, bias} {
			for i := range s {
				s[i] = float32(r.NormFloat64())
			}
		}
		if !d.Bias {
			bias = nil
		}
		other := make([]float32, len(wei))
		for i := range other {
			other[i] = float32(r.NormFloat64())
		}
		want := refConv(d, src, wei, bias)
		for rep, constWei := range []bool{false, true, true, false} {
			c, err := cache.Get(d, 0)
			if err != nil {
				t.Fatal(err)
			}
			w, want := wei, want
			if rep == 3 {
				w, want = other, refConv(d, src, other, bias)
			}
			dst := make([]float32, len(want))
			for i := range dst {
				dst[i] = float32(math.NaN())
			}
			if err := c.Run(hostmem.Limit{}, src, w, bias, dst, constWei); err != nil {
				t.Fatalf("%+v: %v", d, err)
			}
			for i := range want {
				if math.Abs(float64(dst[i])-want[i]) > 1e-4*math.Sqrt(float64(d.KH*d.KW*d.C))*(1+math.Abs(want[i])) {
					t.Fatalf("%+v, run %d (const weights %v) [%d] = %v, want %v (seed %d)", d, rep, constWei, i, dst[i], want[i], seed)
				}
			}
		}
		c, _ := cache.Get(d, 0)
		if packs, want := c.pk.packs.Load(), min(1, c.packedBytes()); packs != want {
			t.Errorf("%+v (%s): constant weights packed %d times, want %d", d, c.Impl, packs, want)
		}
	}
	if n := len(cache.s.m); n != 6 {
		t.Fatalf("cache holds %d primitives for 6 shapes", n)
	}
}

func refPool(d PoolDesc, src []float32) []float64 {
	out := make([]float64, d.N*d.OH*d.OW*d.C)
	for n := 0; n < d.N; n++ {
		for oy := 0; oy < d.OH; oy++ {
			for ox := 0; ox < d.OW; ox++ {
				for c := 0; c < d.C; c++ {
					m, sum, cnt := math.Inf(-1), 0.0, 0
					for ky := 0; ky < d.KH; ky++ {
						for kx := 0; kx < d.KW; kx++ {
							y, x := oy*d.SH-d.PT+ky, ox*d.SW-d.PL+kx
							if y < 0 || y >= d.H || x < 0 || x >= d.W {
								continue
							}
							v := float64(src[((n*d.H+y)*d.W+x)*d.C+c])
							m, sum, cnt = math.Max(m, v), sum+v, cnt+1
						}
					}
					if !d.Max {
						m = sum / float64(cnt)
					}
					out[((n*d.OH+oy)*d.OW+ox)*d.C+c] = m
				}
			}
		}
	}
	return out
}

// TestPool checks max and average pooling (padding excluded from the
// average, as TF's) against a float64 loop.
func TestPool(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	var cache Cache[PoolDesc]
	for _, d := range []PoolDesc{
		{N: 2, H: 8, W: 8, C: 16, KH: 2, KW: 2, SH: 2, SW: 2},
		{N: 1, H: 7, W: 9, C: 3, KH: 3, KW: 3, SH: 2, SW: 2, PT: 1, PL: 1, PB: 1, PR: 1},
		{N: 3, H: 5, W: 5, C: 8, KH: 3, KW: 2, SH: 1, SW: 2, PT: 1, PL: 0, PB: 1, PR: 1},
		{N: 1, H: 5, W: 6, C: 2, KH: 2, KW: 2, SH: 2, SW: 2}, // VALID with a remainder
	} {
		d.OH = (d.H+d.PT+d.PB-d.KH)/d.SH + 1
		d.OW = (d.W+d.PL+d.PR-d.KW)/d.SW + 1
		src := make([]float32, d.N*d.H*d.W*d.C)
		for i := range src {
			src[i] = float32(r.NormFloat64())
		}
		for _, isMax := range []bool{true, false} {
			d.Max = isMax
			want := refPool(d, src)
			p, err := cache.Get(d, 0)
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]float32, len(want))
			if err := p.Run(make([]byte, p.WorkBytes()), src, dst); err != nil {
				t.Fatalf("%+v: %v", d, err)
			}
			for i := range want {
				if math.Abs(float64(dst[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("%+v [%d] = %v, want %v (seed %d)", d, i, dst[i], want[i], seed)
				}
			}
		}
	}
}

// TestConvSharesPackedFilter runs one constant filter through the
// primitives one node makes for several batch sizes and row bands (as
// package cpu's split does): each gives the reference answer, and the
// filter is packed once per weight layout, not once per shape.
func TestConvSharesPackedFilter(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	base := ConvDesc{H: 8, W: 8, C: 32, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, OH: 8, OW: 8, Bias: true, Relu: true}
	wei, bias := randF32(r, 9*base.C*base.O), randF32(r, base.O)
	var cache ConvCache
	layouts := map[*packed]bool{}
	for _, n := range []int{1, 2, 3, 16} {
		for _, band := range []struct{ h, pt, pb, oh int }{{8, 1, 1, 8}, {5, 1, 0, 4}, {5, 0, 1, 4}} {
			d := base
			d.N, d.H, d.PT, d.PB, d.OH = n, band.h, band.pt, band.pb, band.oh
			c, err := cache.Get(d, 1)
			if err != nil {
				t.Fatal(err)
			}
			src := randF32(r, d.N*d.H*d.W*d.C)
			dst := make([]float32, d.N*d.OH*d.OW*d.O)
			if err := c.Run(hostmem.Limit{}, src, wei, bias, dst, true); err != nil {
				t.Fatal(err)
			}
			if err := within(dst, refConv(d, src, wei, bias), 1e-3); err != nil {
				t.Fatalf("%+v (%s): %v", d, c.Impl, err)
			}
			if c.packedBytes() > 0 {
				layouts[c.pk] = true
			}
		}
	}
	packs := int64(0)
	for pk := range layouts {
		packs += pk.packs.Load()
	}
	if packs != int64(len(layouts)) || len(layouts) > 3 {
		t.Fatalf("12 shapes packed the filter %d times in %d layouts: want once per layout, a few layouts", packs, len(layouts))
	}
	t.Logf("12 shapes, %d packed copies", len(layouts))
}

// concurrently runs job(w, rep) for rep < reps on each of workers
// goroutines at once, as concurrent Runs of a session run one primitive,
// and fails on the first error.
func concurrently(t *testing.T, workers, reps int, job func(w, rep int) error) {
	t.Helper()
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for rep := 0; rep < reps; rep++ {
				if err := job(w, rep); err != nil {
					errs <- fmt.Errorf("worker %d, run %d: %w", w, rep, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// within says got is want within tol (relative beyond 1).
func within(got []float32, want []float64, tol float64) error {
	for k := range want {
		if !(math.Abs(float64(got[k])-want[k]) <= tol*(1+math.Abs(want[k]))) {
			return fmt.Errorf("[%d] = %v, want %v", k, got[k], want[k])
		}
	}
	return nil
}

func randF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestPoolConcurrent runs one pooling primitive from several goroutines at
// once, each on its own buffers, many times: every run must get the answer
// of a run alone although the runs share the primitive's kept stream and
// memory objects (dl.c's slots), one run's at a time.
func TestPoolConcurrent(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	d := PoolDesc{N: 2, H: 9, W: 9, C: 16, KH: 3, KW: 3, SH: 2, SW: 2, PT: 1, PL: 1, PB: 1, PR: 1, OH: 5, OW: 5, Max: true}
	var cache Cache[PoolDesc]
	p, err := cache.Get(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	var srcs [workers][]float32
	var wants [workers][]float64
	for w := range srcs {
		srcs[w] = randF32(r, d.N*d.H*d.W*d.C)
		wants[w] = refPool(d, srcs[w])
	}
	concurrently(t, workers, 50, func(w, rep int) error {
		dst := make([]float32, len(wants[w]))
		if err := p.Run(make([]byte, p.WorkBytes()), srcs[w], dst); err != nil {
			return err
		}
		return within(dst, wants[w], 0)
	})
}

// TestConvConcurrent runs one cached primitive from several goroutines at
// once, as concurrent Runs of a session do: each must get the answer of a
// run alone (each run brings its own scratchpad and weight buffer), with
// weights of its own reordered per run, or, constWeights, one constant
// filter that the racing first runs pack once.
func TestConvConcurrent(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	for _, d := range []ConvDesc{
		{N: 2, H: 12, W: 12, C: 8, O: 16, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, OH: 12, OW: 12, Bias: true, Relu: true},
		{N: 1, H: 8, W: 8, C: 64, O: 128, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, OH: 8, OW: 8, Bias: true, Relu: true},
	} {
		for _, constWeights := range []bool{false, true} {
			var cache ConvCache
			c, err := cache.Get(d, 2)
			if err != nil {
				t.Fatal(err)
			}
			const workers = 8
			type job struct {
				src, wei, bias []float32
				want           []float64
			}
			var jobs [workers]job
			shared := randF32(r, d.KH*d.KW*d.C*d.O)
			for w := range jobs {
				j := job{randF32(r, d.N*d.H*d.W*d.C), shared, randF32(r, d.O), nil}
				if !constWeights {
					j.wei = randF32(r, len(shared))
				}
				j.want = refConv(d, j.src, j.wei, j.bias)
				jobs[w] = j
			}
			concurrently(t, workers, 10, func(w, rep int) error {
				j := jobs[w]
				dst := make([]float32, len(j.want))
				if err := c.Run(hostmem.Limit{}, j.src, j.wei, j.bias, dst, constWeights); err != nil {
					return err
				}
				return within(dst, j.want, 1e-3)
			})
			if want := min(1, c.packedBytes()); constWeights && c.pk.packs.Load() != want {
				t.Fatalf("%s: the constant filter was packed %d times, want %d", c.Impl, c.pk.packs.Load(), want)
			}
		}
	}
}

// TestTeamFollowsThreads checks that a primitive made for a thread count
// runs on an OpenMP team of that size, whatever OpenMP's default: the
// probe runs it on a new OS thread and counts the threads the team started
// (they inherit the probe thread's name). Before, every call took
// omp_get_max_threads() threads, so two client threads with intra_op=1
// ran 2 x cores of them.
func TestTeamFollowsThreads(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	if ompDefault() == 0 {
		t.Skip("oneDNN's threading runtime has no omp_set_num_threads")
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	// Big enough that oneDNN splits it over every thread it may use.
	d := ConvDesc{N: 4, H: 32, W: 32, C: 16, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, OH: 32, OW: 32, Bias: true}
	src, wei, bias := fill(d.N*d.H*d.W*d.C), fill(d.KH*d.KW*d.C*d.O), fill(d.O)
	sm := SoftmaxDesc{Rows: 4096, Cols: 256}
	x := fill(sm.Rows * sm.Cols)
	var cc ConvCache
	var pc Cache[SoftmaxDesc]
	for _, threads := range []int{1, 2, 3} {
		c, err := cc.Get(d, threads)
		if err != nil {
			t.Fatal(err)
		}
		got, err := teamProbe(c, nil, src, wei, bias, make([]float32, d.N*d.OH*d.OW*d.O), nil, make([]byte, c.WorkBytes()))
		if err != nil {
			t.Fatal(err)
		}
		if got != threads {
			t.Errorf("convolution made for %d threads ran on a team of %d (OpenMP's default %d)", threads, got, ompDefault())
		}
		p, err := pc.Get(sm, threads)
		if err != nil {
			t.Fatal(err)
		}
		got, err = teamProbe(nil, p, nil, nil, nil, nil, [][]float32{x, make([]float32, len(x))}, make([]byte, p.WorkBytes()))
		if err != nil {
			t.Fatal(err)
		}
		if got != threads {
			t.Errorf("softmax made for %d threads ran on a team of %d (OpenMP's default %d)", threads, got, ompDefault())
		}
	}
	// The probe sees the default's team too: 0 is OpenMP's own count.
	c, err := cc.Get(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := teamProbe(c, nil, src, wei, bias, make([]float32, d.N*d.OH*d.OW*d.O), nil, make([]byte, c.WorkBytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got != ompDefault() {
		t.Errorf("convolution made for OpenMP's default ran on a team of %d, want %d", got, ompDefault())
	}
}

// TestRunAllocates checks that a run of a made primitive takes nothing
// from the Go heap: a kernel makes dozens of calls a Run at a batch of one
// (each band of a split convolution and its pool is one), and an
// allocation a call (the error buffer handed to C, which escaped) fed the
// collector on every one. Convolutions with and without packed weights,
// a pooling (2 arguments) and a batch norm (6, the most a Prim takes).
func TestRunAllocates(t *testing.T) {
	if !Available() {
		t.Skipf("no oneDNN: %s", Loaded().Warning)
	}
	d := ConvDesc{N: 1, H: 8, W: 8, C: 16, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PL: 1, PB: 1, PR: 1, OH: 8, OW: 8, Bias: true, Relu: true}
	c, err := NewConv(d, 1)
	if err != nil {
		t.Fatal(err)
	}
	src, wei, bias := make([]float32, 8*8*16), make([]float32, 3*3*16*32), make([]float32, 32)
	for i := range wei {
		wei[i] = float32(i%7) - 3
	}
	dst := make([]float32, 8*8*32)
	pool, err := NewPool(PoolDesc{N: 1, H: 8, W: 8, C: 32, OH: 4, OW: 4, KH: 2, KW: 2, SH: 2, SW: 2, Max: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	pooled, poolWork := make([]float32, 4*4*32), make([]byte, pool.WorkBytes())
	bn, err := NewBatchNorm(BatchNormDesc{N: 1, Spatial: 64, C: 32, Eps: 1e-3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	normed, stats, bnWork := make([]float32, 8*8*32), make([]float32, 32), make([]byte, bn.WorkBytes())
	for i := range stats {
		stats[i] = 1
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Conv.Run", func() error { return c.Run(hostmem.Limit{}, src, wei, bias, dst, false) }},
		{"Conv.Run packed", func() error { return c.Run(hostmem.Limit{}, src, wei, bias, dst, true) }},
		{"Prim.Run pooling", func() error { return pool.Run(poolWork, dst, pooled) }},
		{"Prim.Run batch norm", func() error { return bn.Run(bnWork, dst, normed, stats, stats, stats, stats) }},
	} {
		if err := c.run(); err != nil { // made its work buffers, packed the filter
			t.Fatalf("%s: %v", c.name, err)
		}
		var err error
		if n := testing.AllocsPerRun(50, func() {
			if e := c.run(); e != nil {
				err = e
			}
		}); n != 0 || err != nil {
			t.Errorf("%s: %v allocations a run (%v), want 0", c.name, n, err)
		}
	}
}
