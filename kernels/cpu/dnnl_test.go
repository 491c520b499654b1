package cpu

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestFusedMatMulDNNL runs _FusedMatMul on oneDNN for every shape and
// activation (the kernel picks it only for some shapes, which the
// conformance suite's small cases do not reach) and compares it with the
// OpenBLAS path, which the suite holds to TF.
func TestFusedMatMulDNNL(t *testing.T) {
	if !dnnl.Available() {
		t.Skipf("no oneDNN: %s", dnnl.Loaded().Warning)
	}
	r := newRand(t)
	always := func(m, n, k int) bool { return true }
	for _, act := range []string{"", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "GeluExact", "GeluApproximate"} {
		for _, c := range []struct {
			m, k, n int64
			ta, tb  bool
		}{{1, 64, 33, false, false}, {16, 40, 7, true, false}, {5, 9, 70, false, true}, {20, 31, 3, true, true}} {
			ops := [][]byte{[]byte("BiasAdd")}
			if act != "" {
				ops = append(ops, []byte(act))
			}
			attrs := map[string]*tfpb.AttrValue{"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: ops}}},
				"num_args": aInt(1), "transpose_a": aBool(c.ta), "transpose_b": aBool(c.tb),
				"leakyrelu_alpha": {Value: &tfpb.AttrValue_F{F: 0.3}}}
			n := node("_FusedMatMul", attrs, []tensor.DType{f32, f32, f32}, f32)
			ep, err := parseEpilogue(n, "MatMul", false)
			if err != nil {
				t.Fatal(err)
			}
			as, bs := tensor.Shape{c.m, c.k}, tensor.Shape{c.k, c.n}
			if c.ta {
				as = tensor.Shape{c.k, c.m}
			}
			if c.tb {
				bs = tensor.Shape{c.n, c.k}
			}
			a, _ := randTensor(r, f32, as)
			b, _ := randTensor(r, f32, bs)
			bias, _ := randTensor(r, f32, tensor.Shape{c.n})
			prims := &dnnl.Cache[dnnl.MatMulDesc]{Node: n.Name}
			got := runCtx(t, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, c.ta, c.tb, ep, nil, prims, always) }, a, b, bias)
			want := runCtx(t, n, func(ctx *kernels.Context) error { return fusedMatMul(ctx, c.ta, c.tb, ep, nil, nil, nil) }, a, b, bias)
			// The two GEMMs sum in different orders: float32 rounding
			// grows with k (a sum of k products of normals).
			closeF32(t, act, got.F32(), want.F32(), 2e-6*float64(c.k))
		}
	}
}

// TestSoftmaxDNNLNaN checks that a row holding a NaN comes out all NaN on
// oneDNN's rows too, as TF's does, and the other rows untouched.
func TestSoftmaxDNNLNaN(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		x, _ := randTensor(r, f32, tensor.Shape{3, softmaxDNNLCols + 5})
		x.F32()[softmaxDNNLCols+5+7] = float32(math.NaN())
		n := node(op, nil, []tensor.DType{f32}, f32)
		prims := &dnnl.Cache[dnnl.SoftmaxDesc]{Node: n.Name}
		got := runCtx(t, n, func(ctx *kernels.Context) error { return softmax(ctx, op == "LogSoftmax", prims) }, x)
		want := runCtx(t, n, func(ctx *kernels.Context) error { return softmax(ctx, op == "LogSoftmax", nil) }, x)
		d := softmaxDNNLCols + 5
		for i, v := range got.F32() {
			if nan := i/d == 1; nan != math.IsNaN(float64(v)) {
				t.Fatalf("%s [%d] = %v: want NaN exactly on row 1", op, i, v)
			}
		}
		closeF32(t, op, got.F32()[:d], want.F32()[:d], 1e-5)
		closeF32(t, op, got.F32()[2*d:], want.F32()[2*d:], 1e-5)
	}
}

func runCtx(t *testing.T, n *graph.Node, f func(ctx *kernels.Context) error, in ...*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}, Alloc: poisoned}
	if err := f(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx.Outputs[0]
}

func closeF32(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestConvPoolSplitDNNL checks oneDNN's convolutions and poolings split
// over the intra-op pool (images of a batch, bands of output rows of one
// image: each band's input window and padding) against mstream's own
// kernels, over SAME and VALID (with a remainder row), EXPLICIT padding,
// strides and dilations, run whole (kernels.Serial) and split (the test
// pool cuts any range into up to four parts), with and without a
// constant filter, twice each (the second Run reuses the primitives);
// oneDNN must make every part (no fallback to the whole).
func TestConvPoolSplitDNNL(t *testing.T) {
	if !dnnl.Available() {
		t.Skipf("no oneDNN: %s", dnnl.Loaded().Warning)
	}
	r := newRand(t)
	defer noFallbacks(t)()
	runOn := func(p kernels.Parallelizer, n *graph.Node, f func(ctx *kernels.Context) error, in ...*tensor.Tensor) *tensor.Tensor {
		t.Helper()
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: p, Alloc: poisoned}
		if err := f(ctx); err != nil {
			t.Fatal(err)
		}
		return ctx.Outputs[0]
	}
	for _, c := range []struct {
		in, filter         tensor.Shape
		strides, dilations []int64
		padding            string
		explicit           []int64
	}{
		{tensor.Shape{1, 9, 8, 3}, tensor.Shape{3, 3, 3, 8}, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, "SAME", nil},
		{tensor.Shape{1, 11, 7, 4}, tensor.Shape{3, 2, 4, 16}, []int64{1, 2, 1, 1}, []int64{1, 1, 1, 1}, "SAME", nil},
		{tensor.Shape{1, 12, 9, 5}, tensor.Shape{3, 3, 5, 6}, []int64{1, 2, 2, 1}, []int64{1, 1, 1, 1}, "VALID", nil},
		{tensor.Shape{1, 13, 6, 2}, tensor.Shape{3, 3, 2, 4}, []int64{1, 1, 1, 1}, []int64{1, 2, 1, 1}, "SAME", nil},
		{tensor.Shape{1, 10, 6, 3}, tensor.Shape{2, 2, 3, 5}, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, "EXPLICIT", []int64{0, 0, 2, 1, 0, 1, 0, 0}},
		// Output rows 0 and 1 read padding alone: that band runs whole.
		{tensor.Shape{1, 2, 4, 3}, tensor.Shape{2, 2, 3, 4}, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, "EXPLICIT", []int64{0, 0, 3, 0, 0, 0, 0, 0}},
		{tensor.Shape{3, 8, 8, 16}, tensor.Shape{3, 3, 16, 32}, []int64{1, 1, 1, 1}, []int64{1, 1, 1, 1}, "SAME", nil},
		{tensor.Shape{5, 7, 7, 3}, tensor.Shape{1, 1, 3, 4}, []int64{1, 2, 2, 1}, []int64{1, 1, 1, 1}, "VALID", nil},
	} {
		attrs := map[string]*tfpb.AttrValue{"strides": aInts(c.strides...), "dilations": aInts(c.dilations...),
			"padding": aStr(c.padding), "data_format": aStr("NHWC")}
		if c.explicit != nil {
			attrs["explicit_paddings"] = aInts(c.explicit...)
		}
		n := node("Conv2D", attrs, []tensor.DType{f32, f32}, f32)
		a, err := ParseConv2DAttrs(n)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := randTensor(r, f32, c.in)
		w, _ := randTensor(r, f32, c.filter)
		want := runOn(pool{}, n, func(ctx *kernels.Context) error { return conv2D(ctx, a, nil) }, x, w)
		what := fmt.Sprintf("Conv2D %v * %v %s strides %v dilations %v", c.in, c.filter, c.padding, c.strides, c.dilations)
		for _, p := range []kernels.Parallelizer{kernels.Serial{}, pool{}} {
			for _, constFilter := range []bool{false, true} {
				prims := &dnnl.ConvCache{Node: n.Name}
				conv := func(ctx *kernels.Context) error {
					cp, oshape, err := Conv2DArgs(ctx, a)
					if err != nil {
						return err
					}
					o, err := ctx.Allocate(0, oshape)
					if err != nil {
						return err
					}
					if done, err := convDNNL(ctx, prims, cp, x.F32(), w.F32(), nil, false, constFilter, o.F32()); !done || err != nil {
						return fmt.Errorf("oneDNN ran it: %v (%v)", done, err)
					}
					return nil
				}
				for rep := 0; rep < 2; rep++ {
					got := runOn(p, n, conv, x, w)
					closeF32(t, fmt.Sprintf("%s on %T, const filter %v, run %d", what, p, constFilter, rep), got.F32(), want.F32(), 1e-5*float64(c.filter.NumElements()))
				}
			}
		}

		// The same geometry pooled (a window of the filter's size; the
		// average excludes padding, as TF's).
		if c.dilations[1] != 1 || c.padding == "EXPLICIT" {
			continue
		}
		for _, op := range []string{"MaxPool", "AvgPool"} {
			pn := node(op, map[string]*tfpb.AttrValue{"ksize": aInts(1, c.filter[0], c.filter[1], 1), "strides": aInts(c.strides...),
				"padding": aStr(c.padding), "data_format": aStr("NHWC")}, []tensor.DType{f32}, f32)
			pa, err := ParsePoolAttrs(pn, op, op == "MaxPool")
			if err != nil {
				t.Fatal(err)
			}
			want := runOn(pool{}, pn, func(ctx *kernels.Context) error { return poolOp(ctx, pa, op == "MaxPool", nil) }, x)
			for _, p := range []kernels.Parallelizer{kernels.Serial{}, pool{}} {
				prims := &dnnl.Cache[dnnl.PoolDesc]{Node: pn.Name}
				for rep := 0; rep < 2; rep++ {
					got := runOn(p, pn, func(ctx *kernels.Context) error { return poolOp(ctx, pa, op == "MaxPool", prims) }, x)
					closeF32(t, fmt.Sprintf("%s %v window %v %s on %T, run %d", op, c.in, c.filter[:2], c.padding, p, rep), got.F32(), want.F32(), 1e-6)
				}
			}
		}
	}
}

// TestConvMaxPoolDNNL checks _MstreamConv2DMaxPool's oneDNN path (each
// part convolves the rows its pooled rows read, then pools them: bands of
// one image, groups of images of a batch) against its own path (the convolution
// whole into a temporary, then the pool), run whole (kernels.Serial) and
// split (the test pool cuts any range into up to four parts), with and
// without a constant filter, twice each; oneDNN must make every part.
func TestConvMaxPoolDNNL(t *testing.T) {
	if !dnnl.Available() {
		t.Skipf("no oneDNN: %s", dnnl.Loaded().Warning)
	}
	r := newRand(t)
	defer noFallbacks(t)()
	for _, c := range []struct {
		in, filter tensor.Shape
		strides    []int64
		padding    string
		ksize      []int64 // the pool's window and strides (H, W)
		pstrides   []int64
		ppadding   string
		act        string
	}{
		{tensor.Shape{1, 16, 16, 3}, tensor.Shape{3, 3, 3, 32}, []int64{1, 1, 1, 1}, "SAME", []int64{2, 2}, []int64{2, 2}, "VALID", "Relu"},
		{tensor.Shape{3, 16, 16, 8}, tensor.Shape{3, 3, 8, 16}, []int64{1, 1, 1, 1}, "SAME", []int64{2, 2}, []int64{2, 2}, "VALID", "Relu"},
		// A VALID remainder: the convolution's last row is not read.
		{tensor.Shape{1, 11, 9, 4}, tensor.Shape{3, 3, 4, 8}, []int64{1, 1, 1, 1}, "SAME", []int64{2, 2}, []int64{2, 2}, "VALID", ""},
		{tensor.Shape{1, 13, 10, 5}, tensor.Shape{3, 2, 5, 6}, []int64{1, 2, 1, 1}, "VALID", []int64{3, 3}, []int64{2, 2}, "SAME", "Relu"},
		{tensor.Shape{2, 12, 7, 3}, tensor.Shape{2, 2, 3, 4}, []int64{1, 1, 1, 1}, "SAME", []int64{3, 2}, []int64{1, 2}, "SAME", ""},
		// 200 KB of convolution output an image: groups of two images
		// (groupBytes), the last of one.
		{tensor.Shape{5, 40, 40, 3}, tensor.Shape{3, 3, 3, 32}, []int64{1, 1, 1, 1}, "SAME", []int64{2, 2}, []int64{2, 2}, "VALID", "Relu"},
	} {
		ops := []string{"BiasAdd"}
		if c.act != "" {
			ops = append(ops, c.act)
		}
		b := make([][]byte, len(ops))
		for i, s := range ops {
			b[i] = []byte(s)
		}
		attrs := map[string]*tfpb.AttrValue{"strides": aInts(c.strides...), "padding": aStr(c.padding), "data_format": aStr("NHWC"),
			"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: b}}}, "num_args": aInt(1)}
		n := node("_FusedConv2D", attrs, []tensor.DType{f32, f32, f32}, f32)
		a, ep, err := parseFusedConv2D(n)
		if err != nil {
			t.Fatal(err)
		}
		pa := PoolAttrs{Ksize: []int64{1, c.ksize[0], c.ksize[1], 1}, Strides: []int64{1, c.pstrides[0], c.pstrides[1], 1}, Padding: c.ppadding}
		x, _ := randTensor(r, f32, c.in)
		w, _ := randTensor(r, f32, c.filter)
		bias, _ := randTensor(r, f32, tensor.Shape{c.filter[3]})
		run := func(p kernels.Parallelizer, cp *convPool, constFilter, wantDNNL bool) *tensor.Tensor {
			t.Helper()
			ctx := &kernels.Context{Node: n, Inputs: []*tensor.Tensor{x, w, bias}, Outputs: make([]*tensor.Tensor, 1), Pool: p, Alloc: poisoned}
			call, err := newFusedConvCall(ctx, a, ep)
			if err != nil {
				t.Fatal(err)
			}
			g, err := PoolParams(ctx, pa, call.p.OutShape(), true)
			if err != nil {
				t.Fatal(err)
			}
			o, err := ctx.Allocate(0, tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.OD)})
			if err != nil {
				t.Fatal(err)
			}
			if !wantDNNL {
				conv, _ := kernels.NewTensor(ctx, f32, call.p.OutShape())
				if err := call.run(ctx, nil, false, conv); err != nil {
					t.Fatal(err)
				}
				poolT(ctx, g, true, conv.F32(), o.F32())
				return o
			}
			if done, err := cp.runDNNL(ctx, call, g, constFilter, o.F32()); !done || err != nil {
				t.Fatalf("oneDNN ran it: %v (%v)", done, err)
			}
			return o
		}
		want := run(kernels.Serial{}, nil, false, false)
		for _, p := range []kernels.Parallelizer{kernels.Serial{}, pool{}} {
			for _, constFilter := range []bool{false, true} {
				cp := &convPool{conv: &dnnl.ConvCache{Node: "t"}, pool: &dnnl.Cache[dnnl.PoolDesc]{Node: "t"}}
				for rep := 0; rep < 2; rep++ {
					got := run(p, cp, constFilter, true)
					closeF32(t, fmt.Sprintf("%v * %v %s, pool %v/%v %s, %s on %T, const filter %v, run %d", c.in, c.filter, c.padding, c.ksize, c.pstrides, c.ppadding, c.act, p, constFilter, rep),
						got.F32(), want.F32(), 1e-5*float64(c.filter.NumElements()))
				}
			}
		}
	}
}

// noFallbacks returns a check, to defer, that oneDNN made every shape and
// part asked of it since.
func noFallbacks(t *testing.T) func() {
	fallbacks := dnnl.Fallbacks()
	return func() {
		if n := dnnl.Fallbacks() - fallbacks; n != 0 {
			t.Errorf("oneDNN could not make %d of the shapes or parts", n)
		}
	}
}

// sizedPool is the test pool (up to four parts of a range, at once) that
// says its size, as the session's intra-op pool does; it records the
// length of every range it is given.
type sizedPool struct {
	threads int
	mu      sync.Mutex
	ns      []int
}

func (p *sizedPool) Threads() int { return p.threads }

func (p *sizedPool) For(n int, cost, start float64, fn func(lo, hi int)) {
	p.mu.Lock()
	p.ns = append(p.ns, n)
	p.mu.Unlock()
	pool{}.For(n, cost, start, fn)
}

// TestConvBandsPerThread checks that oneDNN's convolutions, poolings and
// fused convolution-poolings of one image are cut into one band of output
// rows a thread of a pool that says its size (each band a primitive call
// with a fixed cost of its own), the bands uneven where the rows do not
// divide, and equal what one call over the whole image computes (run on
// kernels.Serial); a pool with more threads than rows gets a row each.
func TestConvBandsPerThread(t *testing.T) {
	if !dnnl.Available() {
		t.Skipf("no oneDNN: %s", dnnl.Loaded().Warning)
	}
	r := newRand(t)
	defer noFallbacks(t)()
	fused := [][]byte{[]byte("BiasAdd"), []byte("Relu")}
	convAttrs := func() map[string]*tfpb.AttrValue {
		return map[string]*tfpb.AttrValue{"strides": aInts(1, 1, 1, 1), "padding": aStr("SAME"), "data_format": aStr("NHWC"),
			"fused_ops": {Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{S: fused}}}, "num_args": aInt(1),
			"pool_ksize": aInts(1, 2, 2, 1), "pool_strides": aInts(1, 2, 2, 1), "pool_padding": aStr("VALID")}
	}
	for _, c := range []struct {
		op      string
		hw      int64 // the image's height and width
		threads int
		parts   int // the ranges the kernel gives the pool
	}{
		{"_FusedConv2D", 16, 2, 2},
		{"_FusedConv2D", 16, 3, 3},
		{"_FusedConv2D", 2, 3, 2},
		{"MaxPool", 16, 3, 3},
		{"_MstreamConv2DMaxPool", 16, 2, 2},
		{"_MstreamConv2DMaxPool", 16, 3, 3},
		{"_MstreamConv2DMaxPool", 4, 3, 2},
	} {
		x, _ := randTensor(r, f32, tensor.Shape{1, c.hw, c.hw, 8})
		w, _ := randTensor(r, f32, tensor.Shape{3, 3, 8, 16})
		bias, _ := randTensor(r, f32, tensor.Shape{16})
		in := []*tensor.Tensor{x, w, bias}
		var n *graph.Node
		if c.op == "MaxPool" {
			n = node(c.op, map[string]*tfpb.AttrValue{"ksize": aInts(1, 3, 3, 1), "strides": aInts(1, 1, 1, 1), "padding": aStr("SAME")}, []tensor.DType{f32}, f32)
			in = in[:1]
		} else {
			n = node(c.op, convAttrs(), []tensor.DType{f32, f32, f32}, f32)
			n.Attrs[constWeightsAttr] = aBool(true)
		}
		run := func(p kernels.Parallelizer) *tensor.Tensor {
			t.Helper()
			ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, 1), Pool: p, Alloc: poisoned}
			if err := cpuKernel(t, n).Compute(ctx); err != nil {
				t.Fatal(err)
			}
			return ctx.Outputs[0]
		}
		what := fmt.Sprintf("%s %dx%d on %d threads", c.op, c.hw, c.hw, c.threads)
		want := run(kernels.Serial{})
		p := &sizedPool{threads: c.threads}
		got := run(p)
		closeF32(t, what, got.F32(), want.F32(), 1e-5*float64(w.NumElements()))
		if len(p.ns) != 1 || p.ns[0] != c.parts {
			t.Errorf("%s: the pool was given ranges of %v, want one of %d bands", what, p.ns, c.parts)
		}
	}
}
