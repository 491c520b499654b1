package cpu

import (
	"math/rand"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// FuzzShapeOps drives the shape and attribute validation of the second
// kernel set (array, NN, scan, einsum, random ops) with random ranks,
// dims, index values and attrs, on nodes built by hand so that nothing
// the OpDef would reject is filtered out first. Every call must give an
// error or well-formed outputs, never a panic. Values that decide output
// sizes stay small, so a bug shows as a panic, not as an allocation that
// exhausts memory.
func FuzzShapeOps(f *testing.F) {
	for i := int64(0); i < 300; i++ {
		f.Add(i, uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed int64, which uint8) {
		r := rand.New(rand.NewSource(seed))
		n, in := fuzzCase(r, int(which)%len(fuzzOps))
		runFuzz(t, n, in)
	})
}

func runFuzz(t *testing.T, n *graph.Node, in []*tensor.Tensor) {
	t.Helper()
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		return // a dtype the op has no kernel for, or attrs its kernel refuses
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}}
	if err := k.Compute(ctx); err == nil {
		for i, o := range ctx.Outputs {
			if o == nil || o.Check() != nil {
				t.Fatalf("%s: bad output %d: %v", n.Op, i, o)
			}
		}
	}
}

var fuzzOps = []string{"ShapeN", "Concat", "Split", "SplitV", "Unpack", "Slice", "Tile", "Pad", "PadV2", "MirrorPad",
	"ReverseV2", "BroadcastTo", "BroadcastArgs", "GatherNd", "ScatterNd", "OneHot", "Range", "Where", "Bitcast",
	"MatrixBandPart", "Unique", "InvertPermutation", "Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput",
	"MaxPool", "MaxPoolV2", "AvgPool", "FusedBatchNormV3", "LRN", "ResizeBilinear", "ResizeNearestNeighbor",
	"Cumsum", "TopKV2", "Einsum", "RandomUniform", "RandomUniformInt", "GatherV2", "Reshape", "StridedSlice"}

func fuzzCase(r *rand.Rand, which int) (*graph.Node, []*tensor.Tensor) {
	op := fuzzOps[which]
	shape := func(maxRank, maxDim int) tensor.Shape {
		s := make(tensor.Shape, r.Intn(maxRank+1))
		for i := range s {
			s[i] = int64(r.Intn(maxDim + 1))
		}
		return s
	}
	x := func(s tensor.Shape) *tensor.Tensor { t, _ := randTensor(r, f32, s); return t }
	// small: values that decide sizes; idx: values that only index.
	small := func() int64 { return int64(r.Intn(9) - 2) }
	idx := func() int64 {
		switch r.Intn(10) {
		case 0:
			return 1 << 40
		case 1:
			return -1 << 40
		case 2:
			return 1<<31 - 1
		}
		return int64(r.Intn(13) - 6)
	}
	vec := func(n int, f func() int64) *tensor.Tensor {
		v := make([]int64, n)
		for i := range v {
			v[i] = f()
		}
		if r.Intn(2) == 0 {
			v32 := make([]int32, n)
			for i, e := range v {
				v32[i] = int32(e)
			}
			return tensor.FromI32(tensor.Shape{int64(n)}, v32)
		}
		return ints(v...)
	}
	scalar := func(f func() int64) *tensor.Tensor { return vec(1, f).Reshaped(nil) }
	anyInt := func(f func() int64) *tensor.Tensor {
		if r.Intn(4) == 0 {
			s := tensor.Shape{1, 2}[:r.Intn(3)]
			return vec(int(s.NumElements()), f).Reshaped(s)
		}
		if r.Intn(2) == 0 {
			return scalar(f)
		}
		return vec(r.Intn(5), f)
	}
	list4 := func(f func() int64) *tfpb.AttrValue {
		n := 4
		if r.Intn(8) == 0 {
			n = r.Intn(6)
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = f()
		}
		return aInts(v...)
	}
	a := map[string]*tfpb.AttrValue{}
	in := []*tensor.Tensor{}
	types := []tensor.DType{}
	out := []tensor.DType{f32}
	add := func(t *tensor.Tensor) {
		in = append(in, t)
		types = append(types, t.DType)
	}
	switch op {
	case "ShapeN":
		for i := 0; i < 1+r.Intn(3); i++ {
			add(x(shape(3, 3)))
		}
		out = nil
		for range in {
			out = append(out, i32)
		}
		a["out_type"] = aType(i32)
	case "Concat":
		add(anyInt(idx))
		for i := 0; i < 1+r.Intn(3); i++ {
			add(x(shape(3, 3)))
		}
	case "Split":
		add(anyInt(idx))
		add(x(shape(3, 4)))
		k := r.Intn(4)
		a["num_split"] = aInt(int64(k))
		out = make([]tensor.DType, k)
		for i := range out {
			out[i] = f32
		}
	case "SplitV":
		add(x(shape(3, 4)))
		k := r.Intn(4)
		add(vec(r.Intn(4), small))
		add(anyInt(idx))
		a["num_split"] = aInt(int64(k))
		out = make([]tensor.DType, k)
		for i := range out {
			out[i] = f32
		}
	case "Unpack":
		add(x(shape(3, 3)))
		k := r.Intn(4)
		a["num"], a["axis"] = aInt(int64(k)), aInt(idx())
		out = make([]tensor.DType, k)
		for i := range out {
			out[i] = f32
		}
	case "Slice":
		s := shape(3, 4)
		add(x(s))
		add(vec(len(s)+r.Intn(2)-r.Intn(2)*min(1, len(s)), idx))
		add(vec(len(s), small))
	case "Tile":
		s := shape(3, 3)
		add(x(s))
		add(vec(len(s)+r.Intn(2), small))
	case "Pad", "PadV2", "MirrorPad":
		s := shape(3, 3)
		add(x(s))
		rows := len(s) + r.Intn(2)
		p := make([]int32, 2*rows)
		for i := range p {
			p[i] = int32(small())
		}
		add(tensor.FromI32(tensor.Shape{int64(rows), 2}[:1+r.Intn(2)], p[:rows*(1+r.Intn(2))]))
		if op == "PadV2" {
			add(x(shape(1, 1)))
		}
		if op == "MirrorPad" {
			a["mode"] = aStr([]string{"REFLECT", "SYMMETRIC", "bogus"}[r.Intn(3)])
		}
	case "ReverseV2":
		add(x(shape(3, 3)))
		add(anyInt(idx))
	case "BroadcastTo":
		add(x(shape(3, 3)))
		add(vec(r.Intn(4), small))
	case "BroadcastArgs":
		add(vec(r.Intn(4), small))
		add(anyInt(small))
		in[1] = castInt(in[1], types[0])
		types[1] = types[0]
		out = []tensor.DType{types[0]}
		a["T"] = aType(types[0])
	case "GatherNd":
		add(x(shape(3, 3)))
		add(vec(r.Intn(4), idx).Reshaped(nil))
		if r.Intn(2) == 0 {
			k := r.Intn(3)
			v := make([]int64, 2*k)
			for i := range v {
				v[i] = idx()
			}
			in[1] = tensor.FromI64(tensor.Shape{2, int64(k)}, v)
		} else if in[1].NumElements() != 1 {
			in[1] = in[1].Reshaped(tensor.Shape{in[1].NumElements()})
		}
		types[1] = in[1].DType
		a["Tparams"], a["Tindices"] = aType(f32), aType(in[1].DType)
	case "ScatterNd":
		k := r.Intn(3)
		v := make([]int64, 2*k)
		for i := range v {
			v[i] = idx()
		}
		add(tensor.FromI64(tensor.Shape{2, int64(k)}, v))
		add(x(shape(3, 3)))
		add(vec(r.Intn(4), small))
		types[2] = i64
		in[2] = castInt(in[2], i64)
	case "OneHot":
		add(anyInt(idx))
		add(scalar(small))
		add(x(shape(1, 1)))
		add(x(shape(1, 1)))
		a["axis"] = aInt(int64(r.Intn(5) - 2))
	case "Range":
		add(scalar(small))
		add(scalar(small))
		add(scalar(small))
		types = []tensor.DType{in[0].DType, in[0].DType, in[0].DType}
		for i := range in {
			in[i] = castInt(in[i], in[0].DType)
		}
		a["Tidx"] = aType(in[0].DType)
		out = []tensor.DType{in[0].DType}
	case "Where":
		add(x(shape(4, 3)))
		out = []tensor.DType{i64}
	case "Bitcast":
		s := shape(3, 4)
		add(x(s))
		to := []tensor.DType{f32, i64, tensor.Uint8, tensor.Int16, tensor.Bool, tensor.String}[r.Intn(6)]
		a["type"] = aType(to)
		out = []tensor.DType{to}
	case "MatrixBandPart":
		add(x(shape(4, 3)))
		add(anyInt(idx))
		add(anyInt(idx))
	case "Unique":
		add(x(shape(2, 5)))
		out = []tensor.DType{f32, i32}
		a["out_idx"] = aType(i32)
	case "InvertPermutation":
		add(anyInt(idx))
		a["T"] = aType(in[0].DType)
		out = []tensor.DType{in[0].DType}
		types[0] = in[0].DType
	case "Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput":
		xs := shape(5, 5)
		fs := shape(5, 3)
		a["strides"], a["dilations"] = list4(small), list4(small)
		a["padding"] = aStr([]string{"SAME", "VALID", "EXPLICIT", "bad"}[r.Intn(4)])
		if r.Intn(2) == 0 {
			p := make([]int64, 8)
			for i := range p {
				p[i] = small()
			}
			a["explicit_paddings"] = aInts(p[:r.Intn(9)]...)
		}
		a["data_format"] = aStr([]string{"NHWC", "NCHW", "NHWC", "HWNC"}[r.Intn(4)])
		if r.Intn(2) == 0 {
			// Mostly valid: rank 4, matching depths, sane attrs, so the
			// arithmetic past validation is exercised too.
			c := int64(1 + r.Intn(3))
			xs = tensor.Shape{int64(r.Intn(3)), int64(r.Intn(6)), int64(r.Intn(6)), c * int64(1+r.Intn(2))}
			fs = tensor.Shape{int64(1 + r.Intn(3)), int64(1 + r.Intn(3)), c, int64(r.Intn(4))}
			st, dl := int64(1+r.Intn(3)), int64(1+r.Intn(2))
			a["strides"], a["dilations"] = aInts(1, st, st, 1), aInts(1, dl, 1, 1)
			a["data_format"] = aStr("NHWC")
			a["padding"] = aStr([]string{"SAME", "VALID", "EXPLICIT"}[r.Intn(3)])
			a["explicit_paddings"] = aInts(0, 0, small(), small(), small(), small(), 0, 0)
			if a["padding"].GetS()[0] != 'E' {
				delete(a, "explicit_paddings")
			}
		}
		if op == "Conv2DBackpropInput" {
			a["T"] = aType(f32)
			dy := xs
			sizes := vec([]int{4, 4, 2, 3}[r.Intn(4)], small)
			if len(xs) == 4 && len(fs) == 4 && r.Intn(2) == 0 {
				// The dy shape the forward convolution would give.
				a["dilations"] = aInts(1, 1, 1, 1)
				st := a["strides"].GetList().GetI()
				dy = tensor.Shape{xs[0], 0, 0, fs[3]}
				for i := 1; i <= 2 && len(st) == 4; i++ {
					if st[i] > 0 {
						dy[i] = (xs[i] + st[i] - 1) / st[i]
						if string(a["padding"].GetS()) == "VALID" {
							dy[i] = max(0, (xs[i]-fs[i-1]+st[i])/st[i])
						}
					}
				}
				sizes = ints(xs...)
			}
			add(sizes)
			add(x(fs))
			add(x(dy))
		} else {
			add(x(xs))
			add(x(fs))
		}
	case "MaxPool", "AvgPool", "MaxPoolV2":
		sane := r.Intn(2) == 0
		pos := func() int64 { return int64(1 + r.Intn(3)) }
		if sane {
			add(x(tensor.Shape{int64(r.Intn(3)), int64(r.Intn(6)), int64(r.Intn(6)), int64(r.Intn(4))}))
		} else {
			add(x(shape(5, 5)))
		}
		k, st := list4(small), list4(small)
		if sane {
			d := int64(1)
			if r.Intn(4) == 0 {
				d = pos()
			}
			k, st = aInts(1, pos(), pos(), d), aInts(1, pos(), pos(), d)
		}
		if op == "MaxPoolV2" {
			add(ints(k.GetList().GetI()...))
			add(ints(st.GetList().GetI()...))
			a["padding"] = aStr([]string{"SAME", "VALID"}[r.Intn(2)])
		} else {
			a["ksize"], a["strides"] = k, st
			a["padding"] = aStr([]string{"SAME", "VALID", "EXPLICIT"}[r.Intn(3)])
		}
		if r.Intn(2) == 0 {
			a["explicit_paddings"] = aInts(0, 0, small(), small(), small(), small(), 0, 0)
		}
		a["data_format"] = aStr("NHWC")
		if !sane && r.Intn(2) == 0 {
			a["data_format"] = aStr("NCHW")
		}
	case "FusedBatchNormV3":
		xs := shape(5, 3)
		add(x(xs))
		c := int64(r.Intn(4))
		if len(xs) > 0 && r.Intn(2) == 0 {
			c = xs[len(xs)-1]
		}
		for i := 0; i < 4; i++ {
			if r.Intn(4) == 0 {
				add(x(shape(2, 3)))
			} else {
				add(x(tensor.Shape{c}))
			}
		}
		a["is_training"] = aBool(r.Intn(2) == 0)
		a["data_format"] = aStr([]string{"NHWC", "NCHW", "NDHWC", "NCDHW", "x"}[r.Intn(5)])
		a["U"] = aType(f32)
		a["exponential_avg_factor"] = &tfpb.AttrValue{Value: &tfpb.AttrValue_F{F: float32(r.Intn(3)) / 2}}
		out = []tensor.DType{f32, f32, f32, f32, f32, f32}
	case "LRN":
		add(x(shape(5, 4)))
		a["depth_radius"] = aInt(idx())
	case "ResizeBilinear", "ResizeNearestNeighbor":
		if r.Intn(2) == 0 {
			add(x(tensor.Shape{int64(r.Intn(3)), int64(r.Intn(4)), int64(r.Intn(4)), int64(r.Intn(3))}))
			add(vec(2, small))
		} else {
			add(x(shape(5, 3)))
			add(anyInt(small))
		}
		in[1] = castInt(in[1], i32)
		types[1] = i32
		a["align_corners"], a["half_pixel_centers"] = aBool(r.Intn(2) == 0), aBool(r.Intn(2) == 0)
	case "Cumsum":
		add(x(shape(3, 4)))
		add(anyInt(idx))
		a["exclusive"], a["reverse"] = aBool(r.Intn(2) == 0), aBool(r.Intn(2) == 0)
	case "TopKV2":
		add(x(shape(3, 4)))
		add(anyInt(small))
		out = []tensor.DType{f32, i32}
		a["index_type"] = aType(i32)
	case "Einsum":
		eqs := []string{"ij,jk->ik", "...ij,...jk->...ik", "ii->i", "ij->", "i,j->ij", "ab,bc->ca", "ijk", "i...->...", "bad", "ij,jk,kl->il", "a.b->a", "aa,aa->a"}
		eq := eqs[r.Intn(len(eqs))]
		a["equation"] = aStr(eq)
		for i := 0; i < 1+r.Intn(2); i++ {
			add(x(shape(4, 3)))
		}
	case "RandomUniform", "RandomUniformInt":
		add(anyInt(small))
		a["seed"], a["seed2"] = aInt(idx()), aInt(idx())
		a["dtype"] = aType(f32)
		if op == "RandomUniformInt" {
			add(scalar(idx))
			add(anyInt(idx))
			in[1], in[2] = castInt(in[1], i64), castInt(in[2], i64)
			types[1], types[2] = i64, i64
			a["Tout"] = aType(i64)
			out = []tensor.DType{i64}
		}
		a["T"] = aType(types[0])
	case "GatherV2":
		add(x(shape(3, 4)))
		add(anyInt(idx))
		add(anyInt(idx))
		a["batch_dims"] = aInt(int64(r.Intn(7) - 3))
		a["Tparams"] = aType(f32)
	case "Reshape":
		add(x(shape(3, 4)))
		add(anyInt(small))
	case "StridedSlice":
		add(x(shape(4, 4)))
		k := r.Intn(5)
		add(vec(k, idx))
		add(vec(k, idx))
		add(vec(k, small))
		for _, m := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
			a[m] = aInt(int64(r.Intn(32)))
		}
	}
	if _, ok := a["T"]; !ok && len(types) > 0 {
		a["T"] = aType(types[0])
		if op == "Concat" || op == "Split" {
			a["T"] = aType(f32)
		}
	}
	return node(op, a, types, out...), in
}

// castInt converts an integer tensor to dt (int32 or int64).
func castInt(t *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	v, _ := t.Int64s()
	o := tensor.New(dt, t.Shape)
	for i, e := range v {
		if dt == i32 {
			o.I32()[i] = int32(e)
		} else {
			o.I64()[i] = e
		}
	}
	return o
}
