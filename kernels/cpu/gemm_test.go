package cpu

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/vec"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// fusedMatMulNode is a _FusedMatMul of BiasAdd (and act) whose B package
// optimize marked as an unfed constant.
func fusedMatMulNode(act string, tb bool) *graph.Node {
	ops := [][]byte{[]byte("BiasAdd")}
	if act != "" {
		ops = append(ops, []byte(act))
	}
	attrs := map[string]*tfpb.AttrValue{"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: ops}}},
		"num_args": aInt(1), "transpose_a": aBool(false), "transpose_b": aBool(tb),
		"leakyrelu_alpha": {Value: &tfpb.AttrValue_F{F: 0.3}}, constWeightsAttr: aBool(true)}
	return node("_FusedMatMul", attrs, []tensor.DType{f32, f32, f32}, f32)
}

// packedKernel builds fusedMatMulNode's kernel through the registry, as a
// plan does, with its parsed epilogue.
func packedKernel(t *testing.T, act string, tb bool) (*graph.Node, kernels.Kernel, epilogue) {
	t.Helper()
	n := fusedMatMulNode(act, tb)
	kern := cpuKernel(t, n)
	ep, err := parseEpilogue(n, "MatMul", false)
	if err != nil {
		t.Fatal(err)
	}
	return n, kern, ep
}

// TestFusedMatMulPacked runs _FusedMatMul with constant weights, which it
// packs once and runs on vec.GemmPacked, for every activation and shapes
// around the packed kernel's tile and panel, twice each (the second run
// reuses the packed weights), and holds it to the OpenBLAS path, which the
// conformance suite holds to TF. A B of other memory (another tensor)
// must be packed again, not served from the first one's panels.
func TestFusedMatMulPacked(t *testing.T) {
	if vec.CurrentLevel() < vec.AVX512 {
		t.Skip("the packed GEMM needs AVX-512: the kernel takes OpenBLAS here")
	}
	r := newRand(t)
	for _, act := range []string{"", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "GeluExact", "GeluApproximate"} {
		for _, c := range []struct {
			m, k, n int64
			tb      bool
		}{{2, 64, 33, false}, {16, 40, 7, true}, {9, 130, 70, false}, {70, 31, 100, true}, {130, 128, 64, false}, {1, 50, 40, false}} {
			n, kern, ep := packedKernel(t, act, c.tb)
			bs := tensor.Shape{c.k, c.n}
			if c.tb {
				bs = tensor.Shape{c.n, c.k}
			}
			bias, _ := randTensor(r, f32, tensor.Shape{c.n})
			var b *tensor.Tensor
			for run := 0; run < 3; run++ {
				// Runs 0 and 1 share B's memory, run 2 has another B.
				if run != 1 {
					b, _ = randTensor(r, f32, bs)
				}
				a, _ := randTensor(r, f32, tensor.Shape{c.m, c.k})
				ctx := &kernels.Context{Node: n, Inputs: []*tensor.Tensor{a, b, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: pool{}, Alloc: poisoned}
				if err := kern.Compute(ctx); err != nil {
					t.Fatal(err)
				}
				want := runCtx(t, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, false, c.tb, ep, nil, nil, nil) }, a, b, bias)
				// The two GEMMs sum in different orders.
				closeF32(t, fmt.Sprintf("%s %+v run %d", act, c, run), ctx.Outputs[0].F32(), want.F32(), 2e-6*float64(c.k))
			}
		}
	}
}

// TestFusedMatMulPackedConcurrent runs one _FusedMatMul kernel from many
// goroutines at once from its first Run on, as concurrent Runs of a plan
// do: they race to pack B, and every result must equal a lone run's (run
// it with -race).
func TestFusedMatMulPackedConcurrent(t *testing.T) {
	r := newRand(t)
	n, kern, ep := packedKernel(t, "Relu", false)
	a, _ := randTensor(r, f32, tensor.Shape{16, 96})
	b, _ := randTensor(r, f32, tensor.Shape{96, 70})
	bias, _ := randTensor(r, f32, tensor.Shape{70})
	want := runCtx(t, n, func(ctx *kernels.Context) error {
		return fusedMatMul(ctx, false, false, ep, new(packedWeights), nil, nil)
	}, a, b, bias)
	const runs = 8
	outs := make([]*tensor.Tensor, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx := &kernels.Context{Node: n, Inputs: []*tensor.Tensor{a, b, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: pool{}}
			errs[i] = kern.Compute(ctx)
			outs[i] = ctx.Outputs[0]
		}(i)
	}
	wg.Wait()
	for i, o := range outs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for j, v := range o.F32() {
			if math.Float32bits(v) != math.Float32bits(want.F32()[j]) {
				t.Fatalf("run %d: [%d] = %v, want %v", i, j, v, want.F32()[j])
			}
		}
	}
}

// TestFusedMatMulPackedOneRow runs _FusedMatMul with constant weights on
// one row, which streams the packed panels (vec.GemmPacked's GEMV) with
// bias and activation in the kernel, and holds every row of a batch to the
// same row run alone, bit for bit: a request's output must not depend on
// the batch it came in (before, one row took vec.Gemv, which sums in
// another order, and batches of two or more the packed tiles).
func TestFusedMatMulPackedOneRow(t *testing.T) {
	if vec.CurrentLevel() < vec.AVX512 {
		t.Skip("the packed GEMM needs AVX-512: the kernel takes OpenBLAS here")
	}
	r := newRand(t)
	for _, act := range []string{"", "Relu", "Sigmoid", "LeakyRelu"} {
		for _, c := range []struct {
			m, k, n int64
			tb      bool
		}{{3, 512, 1024, false}, {2, 256, 1, false}, {4, 100, 130, true}, {2, 1024, 512, false}} {
			n, kern, _ := packedKernel(t, act, c.tb)
			bs := tensor.Shape{c.k, c.n}
			if c.tb {
				bs = tensor.Shape{c.n, c.k}
			}
			b, _ := randTensor(r, f32, bs)
			bias, _ := randTensor(r, f32, tensor.Shape{c.n})
			a, _ := randTensor(r, f32, tensor.Shape{c.m, c.k})
			run := func(a *tensor.Tensor) []float32 {
				ctx := &kernels.Context{Node: n, Inputs: []*tensor.Tensor{a, b, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: pool{}, Alloc: poisoned}
				if err := kern.Compute(ctx); err != nil {
					t.Fatal(err)
				}
				return ctx.Outputs[0].F32()
			}
			all := run(a)
			for i := int64(0); i < c.m; i++ {
				row := tensor.New(f32, tensor.Shape{1, c.k})
				copy(row.F32(), a.F32()[i*c.k:(i+1)*c.k])
				got := run(row)
				for j, v := range got {
					if w := all[i*c.n+int64(j)]; math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("%s %+v: row %d alone [%d] = %v, in the batch %v", act, c, i, j, v, w)
					}
				}
			}
		}
	}
}

// randomSplits runs For's loop as chunks of sizes drawn from r, in order on
// the caller: the splits a pool of any size may make.
type randomSplits struct{ r interface{ Intn(int) int } }

func (p randomSplits) For(n int, cost, start float64, fn func(lo, hi int)) {
	for lo := 0; lo < n; {
		hi := min(n, lo+1+p.r.Intn(n))
		fn(lo, hi)
		lo = hi
	}
}

// TestGemmUnits checks gemmUnits' calls over random splits: every row of
// every panel exactly once, in whole blocks of rows, a call of several
// blocks over all panels (the kernel then keeps a block of A in L2 over
// them), and a chunk's calls a band of rows in order.
func TestGemmUnits(t *testing.T) {
	r := newRand(t)
	for _, s := range [][3]int{{1, 64, 100}, {16, 512, 1024}, {64, 128, 64}, {65, 30, 33}, {256, 1024, 1024}, {300, 7, 300}, {1000, 128, 512}} {
		m, k, n := s[0], s[1], s[2]
		np := (n + vec.Panel - 1) / vec.Panel
		for trial := 0; trial < 20; trial++ {
			seen := make([]int, m*np)
			ctx := &kernels.Context{Pool: randomSplits{r}}
			last := [2]int{-1, -1} // the last call's first row and panel
			gemmUnits(ctx, m, n, k, vec.Panel, runFunc(func(r0, r1, p0, p1 int) {
				whole := r0%packedRows == 0 && (r1 == m || r1%packedRows == 0)
				if r0 < 0 || r1 > m || r0 >= r1 || p0 < 0 || p1 > np || p0 >= p1 || !whole || (r1-r0 > packedRows && (p0 != 0 || p1 != np)) {
					t.Fatalf("%dx%dx%d: run(%d, %d, %d, %d)", m, k, n, r0, r1, p0, p1)
				}
				if r0 < last[0] || r0 == last[0] && p0 <= last[1] {
					t.Fatalf("%dx%dx%d: run(%d, %d, %d, %d) after a call at row %d panel %d", m, k, n, r0, r1, p0, p1, last[0], last[1])
				}
				last = [2]int{r0, p0}
				for p := p0; p < p1; p++ {
					for i := r0; i < r1; i++ {
						seen[i*np+p]++
					}
				}
			}))
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("%dx%dx%d: row %d panel %d run %d times", m, k, n, i/np, i%np, c)
				}
			}
		}
		// One chunk of the whole loop is one call.
		var calls [][4]int
		gemmUnits(&kernels.Context{Pool: wholeLoop{}}, m, n, k, vec.Panel, runFunc(func(r0, r1, p0, p1 int) { calls = append(calls, [4]int{r0, r1, p0, p1}) }))
		if len(calls) != 1 || calls[0] != [4]int{0, m, 0, np} {
			t.Fatalf("%dx%dx%d: one chunk ran as %v", m, k, n, calls)
		}
	}
}

// wholeLoop runs For's loop as one chunk.
type wholeLoop struct{}

func (wholeLoop) For(n int, cost, start float64, fn func(lo, hi int)) { fn(0, n) }

// startRecorder records the start For is handed and runs the loop whole.
type startRecorder struct{ start *float64 }

func (s startRecorder) For(n int, cost, start float64, fn func(lo, hi int)) {
	*s.start = start
	fn(0, n)
}

// TestGemmUnitsStart: with one block of rows a chunk is a run of panels
// that re-reads all of A, so its start grows with m; with more, a chunk
// is a band of rows that reads only its rows of A and the panels of B, so
// its start is B's read and does not grow with m (a narrow head's
// likewise, its one panel of n columns).
func TestGemmUnitsStart(t *testing.T) {
	start := func(m, n, k, cols int) float64 {
		var s float64
		gemmUnits(&kernels.Context{Pool: startRecorder{&s}}, m, n, k, cols, runFunc(func(r0, r1, p0, p1 int) {}))
		return s
	}
	if a, b := start(16, 1024, 512, vec.Panel), start(64, 1024, 512, vec.Panel); b != 4*a {
		t.Errorf("one block of rows: start %v at 16 rows, %v at 64, want 4x", a, b)
	}
	np := (1024 + vec.Panel - 1) / vec.Panel
	if a, b, want := start(256, 1024, 512, vec.Panel), start(1024, 1024, 512, vec.Panel), float64(4*512*np*vec.Panel)/aBytesPerNs; a != b || a != want {
		t.Errorf("bands of rows: start %v at 256 rows, %v at 1024, want %v both", a, b, want)
	}
	if a, b := start(256, 10, 2048, 10), start(1024, 10, 2048, 10); a != b || a != 4*2048*10/aBytesPerNs {
		t.Errorf("one narrow panel: start %v at 256 rows, %v at 1024, want %v both", a, b, 4*2048*10/aBytesPerNs)
	}
}
