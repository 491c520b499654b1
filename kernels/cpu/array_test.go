package cpu

import (
	"fmt"
	"math"
	"testing"

	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

var (
	f32 = tensor.Float
	i32 = tensor.Int32
	i64 = tensor.Int64
)

func ints(v ...int64) *tensor.Tensor { return tensor.FromI64(tensor.Shape{int64(len(v))}, v) }

func TestPlaceholderMustFeed(t *testing.T) {
	n := node("Placeholder", map[string]*tfpb.AttrValue{"dtype": aType(f32)}, nil, f32)
	_, err := run(t, n)
	wantErr(t, err, n, "You must feed a value for placeholder tensor 'n_placeholder' with dtype float")
}

func TestReshape(t *testing.T) {
	r := newRand(t)
	x, ref := randTensor(r, f32, tensor.Shape{2, 3, 4})
	n := node("Reshape", nil, []tensor.DType{f32, i64}, f32)
	for _, c := range []struct {
		shape []int64
		want  tensor.Shape
	}{{[]int64{-1}, tensor.Shape{24}}, {[]int64{4, -1, 2}, tensor.Shape{4, 3, 2}}, {[]int64{24}, tensor.Shape{24}}} {
		out := mustRun(t, n, x, ints(c.shape...))[0]
		check(t, "reshape", out, c.want, ref, 0)
	}
	_, err := run(t, n, x, ints(5, -1))
	wantErr(t, err, n, "24 values")
	_, err = run(t, n, x, ints(-1, -1))
	wantErr(t, err, n, "Only one input size may be -1")
	// TF leaves zero dims out of both products, so -1 is inferred from the
	// input's nonzero dims: [0,3] -> [-1,0] is [3,0].
	out := mustRun(t, n, tensor.New(f32, tensor.Shape{0, 3}), ints(-1, 0))[0]
	if !out.Shape.Equal(tensor.Shape{3, 0}) {
		t.Errorf("empty reshape: %v", out.Shape)
	}
}

func TestShapeExpandSqueeze(t *testing.T) {
	x := tensor.New(f32, tensor.Shape{2, 1, 3})
	s := mustRun(t, node("Shape", map[string]*tfpb.AttrValue{"out_type": aType(i32)}, []tensor.DType{f32}, i32), x)[0]
	if v := s.I32(); len(v) != 3 || v[0] != 2 || v[1] != 1 || v[2] != 3 {
		t.Errorf("Shape = %v", v)
	}
	e := mustRun(t, node("ExpandDims", nil, []tensor.DType{f32, i32}, f32), x, tensor.ScalarI32(-1))[0]
	if !e.Shape.Equal(tensor.Shape{2, 1, 3, 1}) {
		t.Errorf("ExpandDims: %v", e.Shape)
	}
	sq := mustRun(t, node("Squeeze", nil, []tensor.DType{f32}, f32), x)[0]
	if !sq.Shape.Equal(tensor.Shape{2, 3}) {
		t.Errorf("Squeeze: %v", sq.Shape)
	}
	n := node("Squeeze", map[string]*tfpb.AttrValue{"squeeze_dims": aInts(0)}, []tensor.DType{f32}, f32)
	_, err := run(t, n, x)
	wantErr(t, err, n, "Can not squeeze dim[0]")
	n = node("Squeeze", map[string]*tfpb.AttrValue{"squeeze_dims": aInts(-2)}, []tensor.DType{f32}, f32)
	if sq := mustRun(t, n, x)[0]; !sq.Shape.Equal(tensor.Shape{2, 3}) {
		t.Errorf("Squeeze(-2): %v", sq.Shape)
	}
}

func TestConcatPack(t *testing.T) {
	r := newRand(t)
	a, ra := randTensor(r, f32, tensor.Shape{2, 3})
	b, rb := randTensor(r, f32, tensor.Shape{2, 1})
	n := node("ConcatV2", nil, []tensor.DType{f32, f32, i32}, f32)
	out := mustRun(t, n, a, b, tensor.ScalarI32(-1))[0]
	want := []float64{ra[0], ra[1], ra[2], rb[0], ra[3], ra[4], ra[5], rb[1]}
	check(t, "concat", out, tensor.Shape{2, 4}, want, 0)
	_, err := run(t, n, a, b, tensor.ScalarI32(0))
	wantErr(t, err, n, "Dimension 1")
	_, err = run(t, n, a, b, tensor.ScalarI32(2))
	wantErr(t, err, n, "axis 2")

	c, rc := randTensor(r, f32, tensor.Shape{2, 3})
	p := node("Pack", map[string]*tfpb.AttrValue{"axis": aInt(1)}, []tensor.DType{f32, f32}, f32)
	out = mustRun(t, p, a, c)[0]
	want = nil
	for i := 0; i < 2; i++ {
		want = append(want, ra[i*3:i*3+3]...)
		want = append(want, rc[i*3:i*3+3]...)
	}
	check(t, "pack", out, tensor.Shape{2, 2, 3}, want, 0)
	_, err = run(t, p, a, b)
	wantErr(t, err, p, "Shapes of all inputs must match")
}

func TestGather(t *testing.T) {
	r := newRand(t)
	params, ref := randTensor(r, f32, tensor.Shape{5, 3})
	n := node("GatherV2", map[string]*tfpb.AttrValue{"Tparams": aType(f32)}, []tensor.DType{f32, i32, i32}, f32)
	idx := tensor.FromI32(tensor.Shape{2, 2}, []int32{4, 0, 2, 2})
	out := mustRun(t, n, params, idx, tensor.ScalarI32(0))[0]
	var want []float64
	for _, i := range []int{4, 0, 2, 2} {
		want = append(want, ref[i*3:i*3+3]...)
	}
	check(t, "gather", out, tensor.Shape{2, 2, 3}, want, 0)
	out = mustRun(t, n, params, tensor.FromI32(tensor.Shape{2}, []int32{2, 0}), tensor.ScalarI32(-1))[0]
	want = nil
	for i := 0; i < 5; i++ {
		want = append(want, ref[i*3+2], ref[i*3])
	}
	check(t, "gather axis 1", out, tensor.Shape{5, 2}, want, 0)
	_, err := run(t, n, params, tensor.FromI32(tensor.Shape{4}, []int32{0, 1, 2, 7}), tensor.ScalarI32(0))
	wantErr(t, err, n, "indices[3] = 7 is not in [0, 5)")
	// batch_dims=1: params [2,3], indices [2,2] -> out [2,2].
	nb := node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(1)}, []tensor.DType{f32, i32, i32}, f32)
	p2, r2 := randTensor(r, f32, tensor.Shape{2, 3})
	out = mustRun(t, nb, p2, tensor.FromI32(tensor.Shape{2, 2}, []int32{2, 1, 0, 0}), tensor.ScalarI32(1))[0]
	check(t, "gather batch_dims", out, tensor.Shape{2, 2}, []float64{r2[2], r2[1], r2[3], r2[3]}, 0)
	// Strings.
	s := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{3}, Strs: [][]byte{[]byte("a"), []byte("b\x00c"), []byte("")}}
	ns := node("GatherV2", nil, []tensor.DType{tensor.String, i32, i32}, tensor.String)
	so := mustRun(t, ns, s, tensor.FromI32(tensor.Shape{2}, []int32{1, 1}), tensor.ScalarI32(0))[0]
	if string(so.Strs[0]) != "b\x00c" || string(so.Strs[1]) != "b\x00c" {
		t.Errorf("string gather: %q", so.Strs)
	}
}

func TestTranspose(t *testing.T) {
	r := newRand(t)
	x, ref := randTensor(r, tensor.Double, tensor.Shape{2, 3, 4})
	n := node("Transpose", nil, []tensor.DType{tensor.Double, i32}, tensor.Double)
	out := mustRun(t, n, x, tensor.FromI32(tensor.Shape{3}, []int32{2, 0, 1}))[0]
	var want []float64
	for k := 0; k < 4; k++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				want = append(want, ref[i*12+j*4+k])
			}
		}
	}
	check(t, "transpose", out, tensor.Shape{4, 2, 3}, want, 0)
	_, err := run(t, n, x, tensor.FromI32(tensor.Shape{3}, []int32{0, 0, 1}))
	wantErr(t, err, n, "duplicated")
	_, err = run(t, n, x, tensor.FromI32(tensor.Shape{3}, []int32{0, 3, 1}))
	wantErr(t, err, n, "out of range")
}

// TestTransposeForwards: a perm that keeps the order of the dims larger
// than 1 forwards its input reshaped, as TF's TransposeOp does (identity
// perms, Keras' Tensordot over the last axis), and the values are still
// the transposition's; any other perm copies.
func TestTransposeForwards(t *testing.T) {
	r := newRand(t)
	n := node("Transpose", nil, []tensor.DType{tensor.Float, i32}, tensor.Float)
	for _, c := range []struct {
		shape    tensor.Shape
		perm     []int32
		forwards bool
	}{
		{tensor.Shape{2, 3, 4}, []int32{0, 1, 2}, true},
		{tensor.Shape{2, 1, 4}, []int32{1, 0, 2}, true},
		{tensor.Shape{1, 3, 1, 4}, []int32{2, 1, 3, 0}, true},
		{tensor.Shape{5}, []int32{0}, true},
		{tensor.Shape{2, 3, 4}, []int32{0, 2, 1}, false},
		{tensor.Shape{2, 1, 4}, []int32{2, 1, 0}, false},
	} {
		x, ref := randTensor(r, tensor.Float, c.shape)
		out := mustRun(t, n, x, tensor.FromI32(tensor.Shape{int64(len(c.perm))}, c.perm))[0]
		st := strides(c.shape)
		shape := make(tensor.Shape, len(c.perm))
		for i, p := range c.perm {
			shape[i] = c.shape[p]
		}
		want := make([]float64, len(ref))
		for i := range want {
			off, rest := int64(0), int64(i)
			for d := len(shape) - 1; d >= 0; d-- {
				off += rest % shape[d] * st[c.perm[d]]
				rest /= shape[d]
			}
			want[i] = ref[off]
		}
		check(t, fmt.Sprint("transpose ", c.shape, c.perm), out, shape, want, 0)
		if shared := &out.Buf[0] == &x.Buf[0]; shared != c.forwards {
			t.Errorf("%v by %v: output shares the input's buffer: %v, want %v", c.shape, c.perm, shared, c.forwards)
		}
	}
}

func TestFill(t *testing.T) {
	n := node("Fill", nil, []tensor.DType{i32, f32}, f32)
	out := mustRun(t, n, tensor.FromI32(tensor.Shape{2}, []int32{2, 3}), tensor.ScalarF32(1.5))[0]
	check(t, "fill", out, tensor.Shape{2, 3}, []float64{1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, 0)
	_, err := run(t, n, tensor.FromI32(tensor.Shape{2}, []int32{2, -3}), tensor.ScalarF32(1.5))
	wantErr(t, err, n, "dims")
}

func TestReduce(t *testing.T) {
	r := newRand(t)
	for _, dt := range numericTypes {
		x, ref := randTensor(r, dt, tensor.Shape{3, 4, 5})
		for _, c := range []struct {
			axes []int64
			keep bool
		}{{[]int64{1}, false}, {[]int64{-1}, true}, {[]int64{0, 2}, false}, {nil, false}, {[]int64{0, 1, 2}, true}, {[]int64{0}, false}} {
			for _, op := range []string{"Sum", "Mean"} {
				n := node(op, map[string]*tfpb.AttrValue{"keep_dims": aBool(c.keep)}, []tensor.DType{dt, i64}, dt)
				out := mustRun(t, n, x, ints(c.axes...))[0]
				red := [3]bool{}
				for _, a := range c.axes {
					red[(a+3)%3] = true
				}
				var shape tensor.Shape
				dims := []int64{3, 4, 5}
				for i, d := range dims {
					if !red[i] {
						shape = append(shape, d)
					} else if c.keep {
						shape = append(shape, 1)
					}
				}
				want := make([]float64, shape.NumElements())
				cnt := make([]float64, len(want))
				for i := 0; i < 3; i++ {
					for j := 0; j < 4; j++ {
						for k := 0; k < 5; k++ {
							idx := []int{i, j, k}
							o := 0
							for d := 0; d < 3; d++ {
								if !red[d] {
									o = o*int(dims[d]) + idx[d]
								}
							}
							want[o] += ref[i*20+j*5+k]
							cnt[o]++
						}
					}
				}
				if !dt.IsFloat() {
					for i := range want {
						s := int64(roundTo(dt, want[i]))
						if op == "Mean" {
							// TF sums narrow integers in 64 bits, then divides.
							s = int64(want[i]) / int64(cnt[i])
						}
						want[i] = roundTo(dt, float64(s))
					}
				} else if op == "Mean" {
					for i := range want {
						want[i] /= cnt[i]
					}
				}
				check(t, op, out, shape, want, 10)
			}
		}
	}
	n := node("Mean", nil, []tensor.DType{f32, i32}, f32)
	out := mustRun(t, n, tensor.New(f32, tensor.Shape{0, 2}), tensor.ScalarI32(0))[0]
	if v := out.F32(); len(v) != 2 || !math.IsNaN(float64(v[0])) {
		t.Errorf("Mean of nothing = %v, want NaN", v)
	}
	out = mustRun(t, node("Sum", nil, []tensor.DType{f32, i32}, f32), tensor.New(f32, tensor.Shape{0, 2}), tensor.ScalarI32(0))[0]
	if v := out.F32(); len(v) != 2 || v[0] != 0 {
		t.Errorf("Sum of nothing = %v, want 0", v)
	}
	_, err := run(t, n, tensor.New(f32, tensor.Shape{2}), tensor.ScalarI32(1))
	wantErr(t, err, n, "Invalid reduction dimension")
}

func TestCast(t *testing.T) {
	types := append(append([]tensor.DType{}, numericTypes...), tensor.Bool)
	r := newRand(t)
	for _, src := range numericTypes {
		x, ref := randTensor(r, src, tensor.Shape{17})
		for _, dst := range types {
			n := node("Cast", map[string]*tfpb.AttrValue{"SrcT": aType(src), "DstT": aType(dst)}, []tensor.DType{src}, dst)
			out := mustRun(t, n, x)[0]
			want := make([]float64, len(ref))
			for i, v := range ref {
				switch {
				case dst == tensor.Bool:
					want[i] = 0
					if v != 0 {
						want[i] = 1
					}
				case dst.IsFloat():
					want[i] = roundTo(dst, v)
				default:
					want[i] = roundTo(dst, math.Trunc(v))
					if v < 0 && (dst == tensor.Uint8 || dst == tensor.Uint16 || dst == tensor.Uint32 || dst == tensor.Uint64) && src.IsFloat() {
						want[i] = math.NaN() // implementation-defined in C++; not compared
					}
				}
			}
			for i := range want {
				if math.IsNaN(want[i]) {
					want[i] = out.ElementF64(i)
				}
			}
			check(t, "cast "+src.String()+"->"+dst.String(), out, tensor.Shape{17}, want, 0)
		}
	}
}

func TestStridedSlice(t *testing.T) {
	r := newRand(t)
	x, ref := randTensor(r, f32, tensor.Shape{4, 5, 6})
	at := func(i, j, k int) float64 { return ref[i*30+j*6+k] }
	type c struct {
		b, e, s             []int64
		bm, em, ell, na, sh int64
		shape               tensor.Shape
		f                   func(o []int) (int, int, int)
	}
	cases := []c{
		// x[1:3]
		{[]int64{1}, []int64{3}, []int64{1}, 0, 0, 0, 0, 0, tensor.Shape{2, 5, 6}, func(o []int) (int, int, int) { return o[0] + 1, o[1], o[2] }},
		// x[::-1, 2, ::2]
		{[]int64{0, 2, 0}, []int64{0, 3, 0}, []int64{-1, 1, 2}, 5, 5, 0, 0, 2, tensor.Shape{4, 3}, func(o []int) (int, int, int) { return 3 - o[0], 2, 2 * o[1] }},
		// x[..., -1]
		{[]int64{0, -1}, []int64{0, 0}, []int64{1, 1}, 0, 0, 1, 0, 2, tensor.Shape{4, 5}, func(o []int) (int, int, int) { return o[0], o[1], 5 }},
		// x[tf.newaxis, 1:, ..., 1:-1:3]
		{[]int64{0, 1, 0, 1}, []int64{0, 0, 0, -1}, []int64{1, 1, 1, 3}, 0, 2, 4, 1, 0, tensor.Shape{1, 3, 5, 2}, func(o []int) (int, int, int) { return o[1] + 1, o[2], 1 + 3*o[3] }},
		// x[10:20] (clamped, empty)
		{[]int64{10}, []int64{20}, []int64{1}, 0, 0, 0, 0, 0, tensor.Shape{0, 5, 6}, nil},
		// x[-100:100:-2] -> from 3 down, stride -2
		{[]int64{100}, []int64{-100}, []int64{-2}, 0, 0, 0, 0, 0, tensor.Shape{2, 5, 6}, func(o []int) (int, int, int) { return 3 - 2*o[0], o[1], o[2] }},
	}
	for ci, cs := range cases {
		n := node("StridedSlice", map[string]*tfpb.AttrValue{"Index": aType(i64), "begin_mask": aInt(cs.bm), "end_mask": aInt(cs.em),
			"ellipsis_mask": aInt(cs.ell), "new_axis_mask": aInt(cs.na), "shrink_axis_mask": aInt(cs.sh)}, []tensor.DType{f32, i64, i64, i64}, f32)
		out := mustRun(t, n, x, ints(cs.b...), ints(cs.e...), ints(cs.s...))[0]
		want := make([]float64, cs.shape.NumElements())
		st := strides(cs.shape)
		for k := range want {
			o := make([]int, len(cs.shape))
			for d := range o {
				o[d] = int(int64(k) / st[d] % cs.shape[d])
			}
			want[k] = at(cs.f(o))
		}
		check(t, "strided slice case "+string(rune('0'+ci)), out, cs.shape, want, 0)
	}
	n := node("StridedSlice", map[string]*tfpb.AttrValue{"shrink_axis_mask": aInt(1)}, []tensor.DType{f32, i64, i64, i64}, f32)
	_, err := run(t, n, x, ints(4), ints(5), ints(1))
	wantErr(t, err, n, "slice index 4 of dimension 0 out of bounds")
	_, err = run(t, n, x, ints(0), ints(1), ints(0))
	wantErr(t, err, n, "strides[0] must be non-zero")
	n = node("StridedSlice", map[string]*tfpb.AttrValue{"ellipsis_mask": aInt(3)}, []tensor.DType{f32, i64, i64, i64}, f32)
	_, err = run(t, n, x, ints(0, 0), ints(1, 1), ints(1, 1))
	wantErr(t, err, n, "Multiple ellipses")
	_ = status.OK
}

// TestGatherAllocations checks that GatherV2 allocates nothing (its
// output comes from the context's allocator, its output's shape from
// gather's stack through Allocate's copy), with indices of each dtype TF
// allows, read in place, few rows and enough to take vec.GatherRows (a
// slice that reaches C escapes), and 256 of them: int32 indices widened
// into a stack buffer of 64 went to the heap past it, so DLRM's 26
// lookups each allocated one a Run at B=256.
func TestGatherAllocations(t *testing.T) {
	r := newRand(t)
	table, _ := randTensor(r, f32, tensor.Shape{100, 64})
	for _, n := range []int{1, 3, gatherPrefetchMin, 40, 256} {
		for _, it := range []tensor.DType{tensor.Int16, i32, i64} {
			idx := tensor.New(it, tensor.Shape{int64(n)})
			for j := 0; j < n; j++ {
				switch it {
				case tensor.Int16:
					idx.I16()[j] = int16(r.Intn(100))
				case i32:
					idx.I32()[j] = int32(r.Intn(100))
				default:
					idx.I64()[j] = int64(r.Intn(100))
				}
			}
			nd := node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(0)}, []tensor.DType{f32, it, i32}, f32)
			k := cpuKernel(t, nd)
			out := tensor.New(f32, tensor.Shape{int64(n), 64})
			ctx := &kernels.Context{Node: nd, Inputs: []*tensor.Tensor{table, idx, tensor.ScalarI32(0)}, Outputs: make([]*tensor.Tensor, 1),
				Alloc: func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) { return out, nil }}
			if a := testing.AllocsPerRun(20, func() {
				if err := k.Compute(ctx); err != nil {
					t.Fatal(err)
				}
			}); a > 0 {
				t.Errorf("GatherV2 of %d rows by %v indices makes %v allocations, want none", n, it, a)
			}
		}
	}
}

// TestConcatAllocations checks that ConcatV2 allocates nothing but its
// output (from the context's allocator): its axis is read in place and
// its output's shape made on concat's stack, each of which was an
// allocation a Run (model_test's concat of four feeds).
func TestConcatAllocations(t *testing.T) {
	r := newRand(t)
	for _, at := range []tensor.DType{i32, i64} {
		a, _ := randTensor(r, f32, tensor.Shape{2, 13})
		b, _ := randTensor(r, f32, tensor.Shape{2, 16})
		nd := node("ConcatV2", map[string]*tfpb.AttrValue{"N": aInt(2), "Tidx": aType(at)}, []tensor.DType{f32, f32, at}, f32)
		k := cpuKernel(t, nd)
		axis := tensor.ScalarI32(1)
		if at == i64 {
			axis = tensor.ScalarI64(1)
		}
		out := tensor.New(f32, tensor.Shape{2, 29})
		ctx := &kernels.Context{Node: nd, Inputs: []*tensor.Tensor{a, b, axis}, Outputs: make([]*tensor.Tensor, 1),
			Alloc: func(tensor.DType, tensor.Shape) (*tensor.Tensor, error) { return out, nil }}
		if a := testing.AllocsPerRun(20, func() {
			if err := k.Compute(ctx); err != nil {
				t.Fatal(err)
			}
		}); a > 0 {
			t.Errorf("ConcatV2 with a %v axis makes %v allocations, want none", at, a)
		}
	}
}
