package cpu

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/dnnl"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

func benchKernel(b *testing.B, n *graph.Node, bytes int64, in ...*tensor.Tensor) {
	k := cpuKernel(b, n)
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes))}
	b.SetBytes(bytes)
	for i := 0; i < b.N; i++ {
		if err := k.Compute(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddF32 measures the same-shape binary path (serial, no pool).
func BenchmarkAddF32(b *testing.B) {
	r := newRand(b)
	x, _ := randTensor(r, f32, tensor.Shape{1 << 20})
	y, _ := randTensor(r, f32, tensor.Shape{1 << 20})
	benchKernel(b, node("AddV2", nil, []tensor.DType{f32, f32}, f32), 12<<20, x, y)
}

// BenchmarkBiasAddF32 measures the row-broadcast path.
func BenchmarkBiasAddF32(b *testing.B) {
	r := newRand(b)
	x, _ := randTensor(r, f32, tensor.Shape{1024, 1024})
	y, _ := randTensor(r, f32, tensor.Shape{1024})
	benchKernel(b, node("BiasAdd", nil, []tensor.DType{f32, f32}, f32), 8<<20, x, y)
}

// BenchmarkEinsumAttention measures Keras MultiHeadAttention's score
// einsum at B=16, 4 heads of 32, 64 tokens: operands read in place through
// strides, the output written transposed.
func BenchmarkEinsumAttention(b *testing.B) {
	r := newRand(b)
	q, _ := randTensor(r, f32, tensor.Shape{16, 64, 4, 32})
	k, _ := randTensor(r, f32, tensor.Shape{16, 64, 4, 32})
	n := node("Einsum", map[string]*tfpb.AttrValue{"equation": {Value: &tfpb.AttrValue_S{S: []byte("aecd,abcd->acbe")}}, "N": aInt(2)}, []tensor.DType{f32, f32}, f32)
	benchKernel(b, n, 0, k, q)
}

// BenchmarkDNNL compares each kernel oneDNN serves with mstream's own code
// for it, on the bench models' shapes, with a pool that splits the work:
// go test ./kernels/cpu -run '^$' -bench DNNL. The choices in
// nn_conv_dnnl.go cite its numbers.
func BenchmarkDNNL(b *testing.B) {
	r := newRand(b)
	// As a session runs it (session/cpukernels.go): OpenBLAS on one
	// thread, its GEMMs split over the pool; its own threads would spin.
	blas.SetThreads(1)
	run := func(b *testing.B, n *graph.Node, f func(ctx *kernels.Context) error, in ...*tensor.Tensor) {
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}}
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			if err := f(ctx); err != nil {
				b.Fatal(err)
			}
		}
		// On a loaded machine wall time mostly measures waiting for a
		// core; the process's CPU time (oneDNN's OpenMP threads and
		// the pool's goroutines together) says what a call cost.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	}
	for _, s := range []tensor.Shape{{4096, 64}, {16, 1000}, {256, 512}} {
		x, _ := randTensor(r, f32, s)
		n := node("Softmax", nil, []tensor.DType{f32}, f32)
		prims := &dnnl.Cache[dnnl.SoftmaxDesc]{Node: "bench"}
		b.Run(fmt.Sprintf("Softmax/%v/onednn", s), func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error { return softmax(ctx, false, prims) }, x)
		})
		b.Run(fmt.Sprintf("Softmax/%v/own", s), func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error { return softmax(ctx, false, nil) }, x)
		})
	}
	for _, c := range []struct {
		shape    tensor.Shape
		format   string
		training bool
	}{{tensor.Shape{1, 1024, 128, 1}, "NCHW", true}, {tensor.Shape{1, 64, 128, 1}, "NCHW", true}, {tensor.Shape{16, 32, 32, 32}, "NHWC", false}, {tensor.Shape{16, 32, 32, 32}, "NHWC", true}} {
		x, _ := randTensor(r, f32, c.shape)
		ch := c.shape[1]
		if c.format == "NHWC" {
			ch = c.shape[3]
		}
		var st []*tensor.Tensor
		for range 4 {
			t, _ := randTensor(r, f32, tensor.Shape{ch})
			for i, v := range t.F32() {
				t.F32()[i] = v*v + 0.5
			}
			st = append(st, t)
		}
		n := node("FusedBatchNormV3", map[string]*tfpb.AttrValue{"data_format": aStr(c.format), "is_training": aBool(c.training)},
			[]tensor.DType{f32, f32, f32, f32, f32}, f32, f32, f32, f32, f32, f32)
		bn, err := ParseBatchNormAttrs(n)
		if err != nil {
			b.Fatal(err)
		}
		prims := &bnPrims{ln: &dnnl.Cache[dnnl.LayerNormDesc]{Node: "bench"}, bn: &dnnl.Cache[dnnl.BatchNormDesc]{Node: "bench"}}
		name := fmt.Sprintf("FusedBatchNorm/%v/%s/training=%v", c.shape, c.format, c.training)
		in := append([]*tensor.Tensor{x}, st...)
		b.Run(name+"/onednn", func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error { return fusedBatchNorm(ctx, bn, prims) }, in...)
		})
		b.Run(name+"/own", func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error { return fusedBatchNorm(ctx, bn, nil) }, in...)
		})
		if c.training && c.format == "NCHW" {
			// What optimize fuses Keras' LayerNorm into: the
			// normalisation and gamma/beta (which the FusedBatchNorm
			// form leaves to a Mul and an AddV2) in one pass.
			rows, cols := c.shape[1], c.shape[2]
			x2 := &tensor.Tensor{DType: f32, Shape: tensor.Shape{rows, cols}, Buf: x.Buf}
			g, _ := randTensor(r, f32, tensor.Shape{cols})
			be, _ := randTensor(r, f32, tensor.Shape{cols})
			ln := node("_MstreamLayerNorm", nil, []tensor.DType{f32, f32, f32}, f32)
			b.Run(fmt.Sprintf("LayerNorm/%v/mstream_layernorm", tensor.Shape{rows, cols}), func(b *testing.B) {
				run(b, ln, func(ctx *kernels.Context) error { return layerNorm(ctx, -1, false, 1e-3, false) }, x2, g, be)
			})
		}
	}
	for _, c := range [][3]int64{{1, 512, 1024}, {16, 512, 1024}, {256, 512, 1024}, {16, 1024, 1024}, {256, 1024, 1024}, {256, 1024, 512}, {256, 512, 256}, {16, 256, 1},
		{64, 128, 128}, {64, 128, 512}, {64, 512, 128}, {1024, 128, 128}, {1024, 128, 512}, {1024, 512, 128}, {16384, 128, 128}, {16384, 128, 512}, {16384, 512, 128}} {
		m, k, nn := c[0], c[1], c[2]
		a, _ := randTensor(r, f32, tensor.Shape{m, k})
		w, _ := randTensor(r, f32, tensor.Shape{k, nn})
		bias, _ := randTensor(r, f32, tensor.Shape{nn})
		n := node("_FusedMatMul", map[string]*tfpb.AttrValue{"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: [][]byte{[]byte("BiasAdd"), []byte("Relu")}}}}, "num_args": aInt(1)}, []tensor.DType{f32, f32, f32}, f32)
		ep, err := parseEpilogue(n, "MatMul", false)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("FusedMatMul/%dx%dx%d", m, k, nn)
		prims := &dnnl.Cache[dnnl.MatMulDesc]{Node: "bench"}
		b.Run(name+"/onednn", func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error {
				o, err := ctx.Allocate(0, tensor.Shape{m, nn})
				if err != nil {
					return err
				}
				_, err = runPrim(ctx, prims, dnnl.MatMulDesc{M: int(m), K: int(k), N: int(nn), Bias: true, Act: dnnl.ActRelu}, a.F32(), w.F32(), o.F32(), bias.F32())
				return err
			}, a, w, bias)
		})
		b.Run(name+"/openblas", func(b *testing.B) {
			run(b, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, false, false, ep, nil, nil, nil) }, a, w, bias)
		})
	}
}

// lonePool is the intra-op pool of two threads as its caller sees it
// when the worker never comes (busy with another Run, or not scheduled on
// a loaded machine): For cuts a loop as exec.Intra does (chunks worth
// 20 us each, one per thread) and the caller runs every chunk itself.
type lonePool struct{}

func (lonePool) Threads() int { return 2 }

func (lonePool) For(n int, cost, start float64, fn func(lo, hi int)) {
	chunks := int(min(float64(n)*cost/20000, float64(min(2, n))))
	if chunks <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	per := (n + chunks - 1) / chunks
	for lo := 0; lo < n; lo += per {
		fn(lo, min(lo+per, n))
	}
}

// cutPool runs a For in k equal parts (fewer for fewer elements), one
// after another on the caller: the parts the intra-op pool makes, without
// the pool, so that a benchmark sees what each part costs by itself.
type cutPool struct{ k int }

func (p cutPool) Threads() int { return p.k }

func (p cutPool) For(n int, cost, start float64, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	per := (n + min(p.k, n) - 1) / min(p.k, n)
	for lo := 0; lo < n; lo += per {
		fn(lo, min(lo+per, n))
	}
}

// BenchmarkConvSplit measures what splitting a oneDNN convolution over
// the intra-op pool costs in CPU: cnn's (bench/models) 3x3 convolutions
// with bias and ReLU, cut into 1, 2, 4 and 8 parts run one after another
// (cutPool), in CPU time per call: go test ./kernels/cpu -run '^$' -bench
// ConvSplit. At B=1 each part is a primitive call of its own band of rows,
// with the rows of the window it shares with the next band read twice.
// On the 2-core AMD EPYC host (Zen 4, AVX-512) at 59b5842, 1/2/4/8 parts:
// 32x32x3-32 18.6-19.8 / 20.2-20.9 / 23.2-24.5 / 28.8 us, 16x16x32-64
// 83-86 / 86-91 / 90-91 / 94-96, 8x8x64-128 77-83 / 80-89 / 85-90 /
// 92-108: a part costs 1.5-2 us of its own, a quarter of the first
// block's work when it is cut in four.
func BenchmarkConvSplit(b *testing.B) {
	r := newRand(b)
	for _, s := range []struct{ n, hw, c, o int }{{1, 32, 3, 32}, {1, 16, 32, 64}, {1, 8, 64, 128}, {16, 16, 32, 64}, {16, 8, 64, 128}} {
		x, _ := randTensor(r, f32, tensor.Shape{int64(s.n), int64(s.hw), int64(s.hw), int64(s.c)})
		w, _ := randTensor(r, f32, tensor.Shape{3, 3, int64(s.c), int64(s.o)})
		bias, _ := randTensor(r, f32, tensor.Shape{int64(s.o)})
		out := make([]float32, s.n*s.hw*s.hw*s.o)
		p := ConvParams{N: s.n, H: s.hw, W: s.hw, C: s.c, O: s.o, KH: 3, KW: 3, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1,
			PadTop: 1, PadLeft: 1, OutH: s.hw, OutW: s.hw, Groups: 1}
		for _, parts := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("B%d-%dx%dx%d-%d/parts%d", s.n, s.hw, s.hw, s.c, s.o, parts), func(b *testing.B) {
				ctx := &kernels.Context{Pool: cutPool{parts}}
				prims := &dnnl.ConvCache{Node: "bench"}
				conv := func() {
					if done, err := convDNNL(ctx, prims, p, x.F32(), w.F32(), bias.F32(), true, true, out); !done || err != nil {
						b.Fatalf("oneDNN ran it: %v (%v)", done, err)
					}
				}
				conv() // the primitives made, the filter packed
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					conv()
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
			})
		}
	}
}

// BenchmarkConvMaxPool measures cnn's (bench/models) blocks, a 3x3
// convolution with bias and ReLU then a 2x2 MaxPool, at B=1, 16 and 256
// on one thread (kernels.Serial), in CPU time per call: as two nodes
// (_FusedConv2D, then MaxPool over its whole output) and as one
// _MstreamConv2DMaxPool (each image pooled as soon as it is convolved):
// go test ./kernels/cpu -run '^$' -bench ConvMaxPool. Fused, per image, on
// the 2-core AMD EPYC host at 59b5842: the three blocks 21-22, 95-97 and
// 91-99 us at B=1; 20-23, 81-91 and 73-81 at B=16; 24-25, 85-92 and
// 75-86 at B=256: the batch gains nothing a image, the convolutions run
// at 100-120 GFLOP/s a core at every batch.
func BenchmarkConvMaxPool(b *testing.B) {
	r := newRand(b)
	for _, s := range []struct{ n, hw, c, o int }{{1, 32, 3, 32}, {1, 16, 32, 64}, {1, 8, 64, 128}, {16, 32, 3, 32}, {16, 16, 32, 64}, {16, 8, 64, 128}, {256, 32, 3, 32}, {256, 16, 32, 64}, {256, 8, 64, 128}} {
		x, _ := randTensor(r, f32, tensor.Shape{int64(s.n), int64(s.hw), int64(s.hw), int64(s.c)})
		w, _ := randTensor(r, f32, tensor.Shape{3, 3, int64(s.c), int64(s.o)})
		bias, _ := randTensor(r, f32, tensor.Shape{int64(s.o)})
		attrs := map[string]*tfpb.AttrValue{"strides": aInts(1, 1, 1, 1), "padding": aStr("SAME"), "data_format": aStr("NHWC"),
			"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: [][]byte{[]byte("BiasAdd"), []byte("Relu")}}}}, "num_args": aInt(1),
			"pool_ksize": aInts(1, 2, 2, 1), "pool_strides": aInts(1, 2, 2, 1), "pool_padding": aStr("VALID")}
		conv := node("_FusedConv2D", attrs, []tensor.DType{f32, f32, f32}, f32)
		fused := node("_MstreamConv2DMaxPool", attrs, []tensor.DType{f32, f32, f32}, f32)
		pool := node("MaxPool", map[string]*tfpb.AttrValue{"ksize": aInts(1, 2, 2, 1), "strides": aInts(1, 2, 2, 1), "padding": aStr("VALID")}, []tensor.DType{f32}, f32)
		conv.Attrs[constWeightsAttr], fused.Attrs[constWeightsAttr] = aBool(true), aBool(true)
		kc, kp, kf := cpuKernel(b, conv), cpuKernel(b, pool), cpuKernel(b, fused)
		alloc := reusedAlloc()
		run := func(name string, f func() error) {
			benchCPU(b, fmt.Sprintf("B%d-%dx%dx%d-%d/%s", s.n, s.hw, s.hw, s.c, s.o, name), 1, "cpu-us/op", f)
		}
		run("conv,pool", func() error {
			ctx := &kernels.Context{Node: conv, Inputs: []*tensor.Tensor{x, w, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: kernels.Serial{}, Alloc: alloc}
			if err := kc.Compute(ctx); err != nil {
				return err
			}
			pctx := &kernels.Context{Node: pool, Inputs: ctx.Outputs, Outputs: make([]*tensor.Tensor, 1), Pool: kernels.Serial{}, Alloc: alloc}
			return kp.Compute(pctx)
		})
		run("fused", func() error {
			ctx := &kernels.Context{Node: fused, Inputs: []*tensor.Tensor{x, w, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: kernels.Serial{}, Alloc: alloc}
			return kf.Compute(ctx)
		})
		for _, parts := range []int{2, 4} {
			if s.n > 1 {
				break
			}
			run(fmt.Sprintf("fused-parts%d", parts), func() error {
				ctx := &kernels.Context{Node: fused, Inputs: []*tensor.Tensor{x, w, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: cutPool{parts}, Alloc: alloc}
				return kf.Compute(ctx)
			})
		}
	}
}

// reusedAlloc is an allocator for kernels.Context.Alloc that makes each
// shape's tensor once and returns it again after: outputs come from a BFC
// allocator in a session, and a benchmark's kernels should not pay the Go
// heap instead.
func reusedAlloc() func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) {
	made := map[string]*tensor.Tensor{}
	return func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
		k := fmt.Sprint(dt, shape)
		if made[k] == nil {
			made[k] = tensor.New(dt, shape)
		}
		return made[k], nil
	}
}

// benchCPU runs f as sub-benchmark name, once before the clock starts
// (primitives made, filters packed), and reports the process's CPU time
// per call divided by per as unit.
func benchCPU(b *testing.B, name string, per int, unit string, f func() error) {
	b.Run(name, func(b *testing.B) {
		if err := f(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N*per), unit)
	})
}

// cpuTime is the process's CPU time so far, every thread's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDLRMSparse measures dlrm_small's sparse path at B=256
// (bench/gpu/gen): the Unpack of the [B,26] ids, one embedding GatherV2 of
// B rows of 64 from a 100k-row table, the Pack of the 27 vectors, the
// interaction's BatchMatMulV2 of the stack by itself and its GatherV2 of
// 351 of 729 columns.
func BenchmarkDLRMSparse(b *testing.B) {
	r := newRand(b)
	const batch, tables, dim, rows = 256, 26, 64, 100000
	i32 := tensor.Int32
	ids := tensor.New(i32, tensor.Shape{batch, tables})
	for i := range ids.I32() {
		ids.I32()[i] = int32(r.Intn(rows))
	}
	run := func(name string, n *graph.Node, in ...*tensor.Tensor) {
		b.Run(name, func(b *testing.B) {
			cpu0 := cpuTime()
			benchKernel(b, n, 0, in...)
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1000/float64(b.N), "cpu-us/op")
		})
	}
	outs := make([]tensor.DType, tables)
	for i := range outs {
		outs[i] = i32
	}
	run("Unpack", node("Unpack", map[string]*tfpb.AttrValue{"num": aInt(tables), "axis": aInt(1)}, []tensor.DType{i32}, outs...), ids)
	table, _ := randTensor(r, f32, tensor.Shape{rows, dim})
	col := tensor.New(i32, tensor.Shape{batch})
	for i := range col.I32() {
		col.I32()[i] = ids.I32()[i*tables]
	}
	gather := node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(0)}, []tensor.DType{f32, i32, i32}, f32)
	run("GatherV2/embedding", gather, table, col, tensor.ScalarI32(0))
	vecs := make([]*tensor.Tensor, tables+1)
	ins := make([]tensor.DType, tables+1)
	for i := range vecs {
		vecs[i], _ = randTensor(r, f32, tensor.Shape{batch, dim})
		ins[i] = f32
	}
	run("Pack", node("Pack", map[string]*tfpb.AttrValue{"N": aInt(tables + 1), "axis": aInt(1)}, ins, f32), vecs...)
	stack, _ := randTensor(r, f32, tensor.Shape{batch, tables + 1, dim})
	run("BatchMatMulV2/interaction", node("BatchMatMulV2", map[string]*tfpb.AttrValue{"adj_y": aBool(true)}, []tensor.DType{f32, f32}, f32), stack, stack)
	flat, _ := randTensor(r, f32, tensor.Shape{batch, (tables + 1) * (tables + 1)})
	var tri []int32
	for i := 0; i <= tables; i++ {
		for j := 0; j < i; j++ {
			tri = append(tri, int32(i*(tables+1)+j))
		}
	}
	lower := tensor.New(i32, tensor.Shape{int64(len(tri))})
	copy(lower.I32(), tri)
	run("GatherV2/interaction", gather, flat, lower, tensor.ScalarI32(1))
}

// BenchmarkDLRMEmbedding measures dlrm_small's 26 embedding GatherV2s at
// B=256 over tables as large as the model's (26 x 100k rows of 64 floats,
// 666 MB: one table alone would sit in the L3 cache), each op reading the
// next table with ids drawn afresh (a set of ids used again would find
// its rows in the cache), on 4 KiB pages and on the transparent huge pages that the
// host allocator's regions ask for (hostmem.AdviseHuge).
func BenchmarkDLRMEmbedding(b *testing.B) {
	const batch, tables, dim, rows = 256, 26, 64, 100000
	for _, huge := range []bool{false, true} {
		name := "pages=4KiB"
		if huge {
			name = "pages=huge"
		}
		b.Run(name, func(b *testing.B) {
			r := newRand(b)
			buf := hostmem.Alloc(tables * rows * dim * 4)
			if huge {
				hostmem.AdviseHuge(buf)
			}
			all := hostmem.View[float32](buf)
			for i := range all {
				all[i] = float32(i)
			}
			tab := make([]*tensor.Tensor, tables)
			for k := range tab {
				tab[k] = &tensor.Tensor{DType: f32, Shape: tensor.Shape{rows, dim}, Buf: buf[k*rows*dim*4 : (k+1)*rows*dim*4]}
			}
			ids := make([]*tensor.Tensor, 4099) // prime: every table sees every set
			for k := range ids {
				ids[k] = tensor.New(tensor.Int32, tensor.Shape{batch})
				for i := range ids[k].I32() {
					ids[k].I32()[i] = int32(r.Intn(rows))
				}
			}
			n := node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(0)}, []tensor.DType{f32, tensor.Int32, tensor.Int32}, f32)
			k := cpuKernel(b, n)
			ctx := &kernels.Context{Node: n, Inputs: make([]*tensor.Tensor, 3), Outputs: make([]*tensor.Tensor, 1)}
			axis := tensor.ScalarI32(0)
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				ctx.Inputs[0], ctx.Inputs[1], ctx.Inputs[2] = tab[i%tables], ids[i%len(ids)], axis
				if err := k.Compute(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1000/float64(b.N), "cpu-us/op")
		})
	}
}

// kernelCall builds n's CPU kernel as a plan does and returns one call of
// it on in, its output in one buffer of shape out kept across calls, as a
// session's allocator keeps them.
func kernelCall(b *testing.B, n *graph.Node, out tensor.Shape, in ...*tensor.Tensor) func() error {
	k := cpuKernel(b, n)
	o := tensor.New(n.OutTypes[0], out)
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, 1),
		Alloc: func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) { return o, nil }}
	return func() error { return k.Compute(ctx) }
}

// measureCPU runs calls, in order, b.N times on one thread and reports
// the process's CPU time per round (on a loaded machine wall time mostly
// measures waiting for a core).
func measureCPU(b *testing.B, calls ...func() error) {
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		for _, call := range calls {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAddLayerNorm measures a transformer's residual connection and
// LayerNormalization (bench/models' transformer at B=1, 16 and 256: rows
// of 128) as the AddV2 and _MstreamLayerNorm kernels run them and as the one
// _MstreamAddLayerNorm that package optimize fuses them into, in CPU time
// per call: go test ./kernels/cpu -run '^$' -bench AddLayerNorm -count 5.
func BenchmarkAddLayerNorm(b *testing.B) {
	r := newRand(b)
	for _, rows := range []int64{64, 1024, 16384} {
		shape := tensor.Shape{rows, 128}
		x, _ := randTensor(r, f32, shape)
		y, _ := randTensor(r, f32, shape)
		g, _ := randTensor(r, f32, tensor.Shape{128})
		be, _ := randTensor(r, f32, tensor.Shape{128})
		b.Run(fmt.Sprintf("%v/AddV2+LayerNorm", shape), func(b *testing.B) {
			sum := tensor.New(f32, shape)
			add := node("AddV2", nil, []tensor.DType{f32, f32}, f32)
			k := cpuKernel(b, add)
			actx := &kernels.Context{Node: add, Inputs: []*tensor.Tensor{x, y}, Outputs: make([]*tensor.Tensor, 1),
				Alloc: func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) { return sum, nil }}
			measureCPU(b, func() error { return k.Compute(actx) },
				kernelCall(b, node("_MstreamLayerNorm", nil, []tensor.DType{f32, f32, f32}, f32), shape, sum, g, be))
		})
		b.Run(fmt.Sprintf("%v/AddLayerNorm", shape), func(b *testing.B) {
			measureCPU(b, kernelCall(b, node("_MstreamAddLayerNorm", nil, []tensor.DType{f32, f32, f32, f32}, f32), shape, x, y, g, be))
		})
	}
}

// BenchmarkPackedQKV measures a transformer's q, k and v projections
// (bench/models' transformer: 128 wide, at B=1, 16 and 256 rows of 64
// tokens) as three _FusedMatMul of 128 columns and as the one of 384
// that package optimize merges them into, weights packed once, in CPU
// time per call: go test ./kernels/cpu -run '^$' -bench 'PackedQKV$' -count 5.
// BenchmarkPackedQKVEinsum does the same in Keras' form (bench/cpu/
// models.py's keras_encoder: MultiHeadAttention's EinsumDense, 4 heads
// of 32, at B=1, 16 and 256): three _MstreamEinsumBias of weights [128, 4, 32] and the one
// of [128, 12, 32].
func BenchmarkPackedQKV(b *testing.B) {
	r := newRand(b)
	for _, m := range []int64{64, 1024, 16384} {
		x, _ := randTensor(r, f32, tensor.Shape{m, 128})
		for _, parts := range []int64{3, 1} {
			n := 384 / parts
			var calls []func() error
			for i := int64(0); i < parts; i++ {
				w, _ := randTensor(r, f32, tensor.Shape{128, n})
				bias, _ := randTensor(r, f32, tensor.Shape{n})
				calls = append(calls, kernelCall(b, fusedMatMulNode("", false), tensor.Shape{m, n}, x, w, bias))
			}
			b.Run(fmt.Sprintf("%dx128x%dx%d", m, n, parts), func(b *testing.B) { measureCPU(b, calls...) })
		}
	}
}

func BenchmarkPackedQKVEinsum(b *testing.B) {
	r := newRand(b)
	for _, bs := range []int64{1, 16, 256} {
		x, _ := randTensor(r, f32, tensor.Shape{bs, 64, 128})
		for _, parts := range []int64{3, 1} {
			h := 12 / parts
			var calls []func() error
			for i := int64(0); i < parts; i++ {
				w, _ := randTensor(r, f32, tensor.Shape{128, h, 32})
				bias, _ := randTensor(r, f32, tensor.Shape{h, 32})
				n := node("_MstreamEinsumBias", map[string]*tfpb.AttrValue{"equation": {Value: &tfpb.AttrValue_S{S: []byte("abc,cde->abde")}},
					constWeightsAttr: aBool(true)}, []tensor.DType{f32, f32, f32}, f32)
				calls = append(calls, kernelCall(b, n, tensor.Shape{bs, 64, h, 32}, x, w, bias))
			}
			b.Run(fmt.Sprintf("B%d/h%dx%d", bs, h, parts), func(b *testing.B) { measureCPU(b, calls...) })
		}
	}
}

// BenchmarkAttention measures _MstreamAttention on one thread as the
// transformers of bench/ run it (4 heads of 32, 64 tokens, the query
// scaled, at B=1 and B=16), in CPU time per call, for the cost per
// (batch, head) the kernel gives the pool's splitter:
// go test ./kernels/cpu -run '^$' -bench 'Attention$' -count 5.
func BenchmarkAttention(b *testing.B) {
	r := newRand(b)
	for _, bs := range []int64{1, 16} {
		shape := tensor.Shape{bs, 64, 4, 32}
		q, _ := randTensor(r, f32, shape)
		k, _ := randTensor(r, f32, shape)
		v, _ := randTensor(r, f32, shape)
		n := node("_MstreamAttention", map[string]*tfpb.AttrValue{"scale": {Value: &tfpb.AttrValue_F{F: 0.18}}, "scale_q": aBool(true)}, []tensor.DType{f32, f32, f32}, f32)
		b.Run(fmt.Sprintf("B%d", bs), func(b *testing.B) { measureCPU(b, kernelCall(b, n, shape, q, k, v)) })
	}
}

// BenchmarkConvPoolStack measures cnn's (bench/models) three blocks, each
// a _MstreamConv2DMaxPool (3x3 convolution with bias and ReLU, 2x2
// MaxPool), on one thread (kernels.Serial), in CPU time per image: layer
// by layer over the whole batch, as the executor runs them (each block's
// output, 4-8 MB at B=256, read by the next from L3 or memory), and
// depth first, a group of g images taken through all three blocks before
// the next (what a kernel of the whole stack would do: each group's
// blocks in one part of one parallel region, its intermediates in the
// core's L2): go test ./kernels/cpu -run '^$' -bench ConvPoolStack.
// On the 2-core AMD EPYC host (Zen 4, 1 MB L2 a core, 32 MB L3) at
// 9e5a94b, load 8, three runs: B=16 layers 185-194 us an image,
// depth first in groups of 8 / 4 / 2 / 1 186-192 / 186-188 / 196-201 /
// 204-211; B=256 layers 185-204, groups of 8 / 4 / 2 / 1 180-200 /
// 182-193 / 190-193 / 204-217. The convolutions are bound by their
// arithmetic, and the intermediates of a whole batch fit L3: taking
// groups through the stack saves no CPU, and groups under four images
// cost more (smaller primitive calls). What a stack kernel would save is
// the barriers between the blocks' parallel regions, not cache misses.
func BenchmarkConvPoolStack(b *testing.B) {
	r := newRand(b)
	attrs := map[string]*tfpb.AttrValue{"strides": aInts(1, 1, 1, 1), "padding": aStr("SAME"), "data_format": aStr("NHWC"),
		"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: [][]byte{[]byte("BiasAdd"), []byte("Relu")}}}}, "num_args": aInt(1),
		"pool_ksize": aInts(1, 2, 2, 1), "pool_strides": aInts(1, 2, 2, 1), "pool_padding": aStr("VALID")}
	type block struct {
		k       kernels.Kernel
		n       *graph.Node
		w, bias *tensor.Tensor
	}
	var blocks []block
	for _, s := range []struct{ c, o int64 }{{3, 32}, {32, 64}, {64, 128}} {
		n := node("_MstreamConv2DMaxPool", attrs, []tensor.DType{f32, f32, f32}, f32)
		n.Attrs[constWeightsAttr] = aBool(true)
		w, _ := randTensor(r, f32, tensor.Shape{3, 3, s.c, s.o})
		bias, _ := randTensor(r, f32, tensor.Shape{s.o})
		blocks = append(blocks, block{cpuKernel(b, n), n, w, bias})
	}
	for _, batch := range []int{16, 256} {
		x, _ := randTensor(r, f32, tensor.Shape{int64(batch), 32, 32, 3})
		alloc := reusedAlloc()
		var views []tensor.Header
		stack := func(in *tensor.Tensor) error {
			for _, bl := range blocks {
				ctx := &kernels.Context{Node: bl.n, Inputs: []*tensor.Tensor{in, bl.w, bl.bias}, Outputs: make([]*tensor.Tensor, 1), Pool: kernels.Serial{}, Alloc: alloc}
				if err := bl.k.Compute(ctx); err != nil {
					return err
				}
				in = ctx.Outputs[0]
			}
			return nil
		}
		for _, g := range []int{batch, 1, 2, 4, 8} {
			name := fmt.Sprintf("B%d/layers", batch)
			if g < batch {
				name = fmt.Sprintf("B%d/depth-first-%d", batch, g)
			}
			views = make([]tensor.Header, batch/g)
			imgBytes := 32 * 32 * 3 * 4
			run := func() error {
				for i := range views {
					if err := stack(views[i].Set(f32, tensor.Shape{int64(g), 32, 32, 3}, x.Buf[i*g*imgBytes:(i+1)*g*imgBytes])); err != nil {
						return err
					}
				}
				return nil
			}
			benchCPU(b, name, batch, "cpu-us/image", run)
		}
	}
}

// BenchmarkSpaceBatch measures the dilated convolution's rearrangements
// on a DeepLab-like feature map (serial): SpaceToBatchND with block 2 and
// "same" padding of a 3x3 rate-2 kernel, the BatchToSpaceND back, and the
// pixel shuffle's DepthToSpace. The TF line of each is bench/cpu's
// peer: tf.raw_ops on one intra-op thread over the same shapes.
func BenchmarkSpaceBatch(b *testing.B) {
	r := newRand(b)
	i32 := tensor.Int32
	x, _ := randTensor(r, f32, tensor.Shape{1, 64, 64, 64})
	block := tensor.FromI32(tensor.Shape{2}, []int32{2, 2})
	pads := tensor.FromI32(tensor.Shape{2, 2}, []int32{2, 2, 2, 2})
	y, _ := randTensor(r, f32, tensor.Shape{4, 34, 34, 64})
	bytes := 2 * x.NumElements() * 4
	// The output buffer is reused, as a session's allocator reuses it, so
	// the kernel's own time is measured rather than page faults.
	run := func(b *testing.B, n *graph.Node, in ...*tensor.Tensor) {
		k := cpuKernel(b, n)
		var buf *tensor.Tensor
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, 1),
			Alloc: func(dt tensor.DType, s tensor.Shape) (*tensor.Tensor, error) {
				if buf == nil {
					buf = tensor.New(dt, s)
				}
				return buf.Reshaped(s), nil
			}}
		b.SetBytes(bytes)
		for i := 0; i < b.N; i++ {
			if err := k.Compute(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("SpaceToBatchND", func(b *testing.B) {
		run(b, node("SpaceToBatchND", nil, []tensor.DType{f32, i32, i32}, f32), x, block, pads)
	})
	b.Run("BatchToSpaceND", func(b *testing.B) {
		run(b, node("BatchToSpaceND", nil, []tensor.DType{f32, i32, i32}, f32), y, block, pads)
	})
	b.Run("DepthToSpace", func(b *testing.B) {
		run(b, node("DepthToSpace", map[string]*tfpb.AttrValue{"block_size": aInt(2)}, []tensor.DType{f32}, f32), x)
	})
}
