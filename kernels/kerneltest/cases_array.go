package kerneltest

import (
	"fmt"
	"math/rand"
	"strings"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// Families for the graph-plumbing and data-movement ops that every frozen
// graph contains: Const, Placeholder and the forwarding ops, Reshape, Shape,
// ExpandDims, Squeeze, ConcatV2, GatherV2, Pack, Transpose, StridedSlice.
// References are NumPy expressions, except for strings (NumPy has no form
// for TF_STRING here), where the expected bytes are assembled in Go.

// MoveTypes are the dtypes a data-movement op must carry bit-exactly.
var MoveTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16,
	tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Bool}

// IntVec returns a rank-1 integer tensor (shapes, axes, indices).
func IntVec(dt tensor.DType, v ...int64) *tensor.Tensor {
	t := tensor.New(dt, tensor.Shape{int64(len(v))})
	for i, x := range v {
		SetF64(t, i, float64(x))
	}
	return t
}

// IntScalar returns a scalar int32 or int64 tensor.
func IntScalar(dt tensor.DType, v int64) *tensor.Tensor {
	t := tensor.New(dt, tensor.Shape{})
	SetF64(t, 0, float64(v))
	return t
}

// RandStrings returns a string tensor of random bytes, embedded NULs
// included, never all empty.
func RandStrings(r *rand.Rand, shape tensor.Shape) *tensor.Tensor {
	t := tensor.New(tensor.String, shape)
	for i := range t.Strs {
		b := make([]byte, 1+r.Intn(9))
		for j := range b {
			b[j] = byte(r.Intn(256))
		}
		if len(b) > 2 {
			b[1] = 0
		}
		t.Strs[i] = b
	}
	return t
}

// RandIndex returns an integer tensor of indices uniform in [0, n).
func RandIndex(r *rand.Rand, dt tensor.DType, shape tensor.Shape, n int64) *tensor.Tensor {
	t := tensor.New(dt, shape)
	for i := range int(t.NumElements()) {
		SetF64(t, i, float64(r.Int63n(n)))
	}
	return t
}

// ATensor is an attr holding a tensor (Const's value).
func ATensor(t *tensor.Tensor) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Tensor{Tensor: tensor.ToProto(t)}}
}

func ins(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }

func shapeTuple(s tensor.Shape) string {
	var b strings.Builder
	b.WriteString("(")
	for _, d := range s {
		fmt.Fprintf(&b, "%d,", d)
	}
	b.WriteString(")")
	return b.String()
}

// randShape draws a shape of the given rank with dims in [lo, hi].
func randShape(r *rand.Rand, rank int, lo, hi int) tensor.Shape {
	s := make(tensor.Shape, rank)
	for i := range s {
		s[i] = int64(lo + r.Intn(hi-lo+1))
	}
	return s
}

func init() {
	Add("Const", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append(append([]tensor.DType{}, MoveTypes...), tensor.Uint16, tensor.Uint32, tensor.Uint64) {
			for _, s := range EdgeShapes {
				v := Rand(r, dt, s)
				cs = append(cs, Case{
					Node: NodeFor("Const", Attrs{"dtype": AType(dt), "value": ATensor(v)}, nil, nil),
					Want: ins(v),
				})
			}
		}
		for _, s := range []tensor.Shape{{}, {0}, {5}, {2, 3}} {
			v := RandStrings(r, s)
			cs = append(cs, Case{Node: NodeFor("Const", Attrs{"dtype": AType(tensor.String), "value": ATensor(v)}, nil, nil), Want: ins(v)})
		}
		return cs
	})
	Add("Placeholder", func(r *rand.Rand) []Case {
		// A Placeholder kernel only runs when nothing fed it: TF's kernel
		// fails with INVALID_ARGUMENT "You must feed a value for
		// placeholder tensor ...".
		var cs []Case
		for _, dt := range []tensor.DType{tensor.Float, tensor.Int32, tensor.String, tensor.Bool} {
			cs = append(cs, Case{Node: NodeFor("Placeholder", Attrs{"dtype": AType(dt), "shape": AShape(tensor.Shape{2})}, nil, nil),
				Err: status.InvalidArgument, ErrMsg: "You must feed a value for placeholder tensor"})
		}
		return cs
	})
	forward := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				for _, s := range EdgeShapes {
					a := Rand(r, dt, s)
					cs = append(cs, Case{Node: NodeFor(op, nil, ins(a), nil), Inputs: ins(a), Want: ins(a)})
				}
			}
			a := RandStrings(r, tensor.Shape{3, 2})
			cs = append(cs, Case{Node: NodeFor(op, nil, ins(a), nil), Inputs: ins(a), Want: ins(a)})
			return cs
		}
	}
	Add("Identity", forward("Identity"))
	Add("StopGradient", forward("StopGradient"))
	Add("PlaceholderWithDefault", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range EdgeShapes {
				a := Rand(r, dt, s)
				n := NodeFor("PlaceholderWithDefault", Attrs{"dtype": AType(dt), "shape": AShape(s)}, ins(a), nil)
				cs = append(cs, Case{Node: n, Inputs: ins(a), Want: ins(a)})
			}
		}
		a := RandStrings(r, tensor.Shape{4})
		cs = append(cs, Case{Node: NodeFor("PlaceholderWithDefault", Attrs{"dtype": AType(tensor.String), "shape": AShape(tensor.Shape{4})}, ins(a), nil), Inputs: ins(a), Want: ins(a)})
		return cs
	})
	Add("IdentityN", func(r *rand.Rand) []Case {
		var cs []Case
		for k := 1; k <= 4; k++ {
			var in []*tensor.Tensor
			var types []tensor.DType
			for i := 0; i < k; i++ {
				dt := MoveTypes[r.Intn(len(MoveTypes))]
				in = append(in, Rand(r, dt, EdgeShapes[r.Intn(len(EdgeShapes))]))
				types = append(types, dt)
			}
			if k == 4 {
				in[3] = RandStrings(r, tensor.Shape{2})
				types[3] = tensor.String
			}
			cs = append(cs, Case{Node: NodeFor("IdentityN", Attrs{"T": ATypes(types...)}, in, map[int]int{0: k}), Inputs: in, Want: in})
		}
		return cs
	})
	Add("NoOp", func(r *rand.Rand) []Case {
		return []Case{{Node: NodeFor("NoOp", nil, nil, nil), Want: []*tensor.Tensor{}}}
	})
	Add("Reshape", reshapeCases)
	Add("Shape", shapeCases)
	Add("ExpandDims", expandDimsCases)
	Add("Squeeze", squeezeCases)
	Add("ConcatV2", concatCases)
	Add("GatherV2", gatherCases)
	Add("Pack", packCases)
	Add("Transpose", transposeCases)
	Add("StridedSlice", stridedSliceCases)
}

func reshapeCases(r *rand.Rand) []Case {
	var cs []Case
	targets := func(s tensor.Shape) [][]int64 {
		n := s.NumElements()
		out := [][]int64{{n}, {-1}, {1, n}, {n, 1, -1}}
		if n%2 == 0 && n > 0 {
			out = append(out, []int64{2, -1}, []int64{-1, 2, 1})
		}
		if n == 1 {
			out = append(out, []int64{})
		}
		return out
	}
	for _, dt := range MoveTypes {
		for _, s := range EdgeShapes {
			a := Rand(r, dt, s)
			if s.NumElements() == 0 {
				continue // NumPy cannot infer -1 here; TF's rule is below
			}
			for _, tgt := range targets(s) {
				for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
					sh := IntVec(it, tgt...)
					cs = append(cs, Case{Node: NodeFor("Reshape", nil, ins(a, sh), nil), Inputs: ins(a, sh), NumPy: "a0.reshape(tuple(int(x) for x in a1))"})
				}
			}
		}
	}
	// Zero-sized inputs: TF leaves zero dims out of the product on both
	// sides, so -1 is inferred from the nonzero dims.
	for _, z := range []struct {
		in       tensor.Shape
		tgt, out []int64
	}{
		{tensor.Shape{0}, []int64{-1}, []int64{0}},
		{tensor.Shape{0}, []int64{3, -1}, []int64{3, 0}},
		{tensor.Shape{0}, []int64{0, 5}, []int64{0, 5}},
		{tensor.Shape{2, 0, 3}, []int64{0, -1}, []int64{0, 6}},
		{tensor.Shape{2, 0, 3}, []int64{-1, 0}, []int64{6, 0}},
		{tensor.Shape{2, 0, 3}, []int64{3, 0, 2}, []int64{3, 0, 2}},
		{tensor.Shape{2, 0, 3}, []int64{4, -1}, []int64{4, 0}},
		{tensor.Shape{2, 0, 3}, []int64{-1}, []int64{0}},
	} {
		for _, dt := range []tensor.DType{tensor.Float, tensor.Bool} {
			a, sh := Rand(r, dt, z.in), IntVec(tensor.Int64, z.tgt...)
			cs = append(cs, Case{Node: NodeFor("Reshape", nil, ins(a, sh), nil), Inputs: ins(a, sh), Want: ins(tensor.New(dt, z.out))})
		}
	}
	// A scalar shape argument is TF's legacy form of a one-element vector.
	v := Rand(r, tensor.Int32, tensor.Shape{1, 3})
	cs = append(cs, Case{Node: NodeForUnknown("Reshape", nil, ins(v, IntScalar(tensor.Int32, 3)), nil), Inputs: ins(v, IntScalar(tensor.Int32, 3)), Want: ins(v.Reshaped(tensor.Shape{3}))})
	s := RandStrings(r, tensor.Shape{2, 3})
	cs = append(cs, Case{Node: NodeFor("Reshape", nil, ins(s, IntVec(tensor.Int32, 3, -1)), nil), Inputs: ins(s, IntVec(tensor.Int32, 3, -1)),
		Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{3, 2}, Strs: s.Strs})})
	a := Rand(r, tensor.Float, tensor.Shape{2, 3})
	for _, bad := range [][]int64{{4}, {-1, -1}, {-2, 3}, {4, -1}, {7, 1}} {
		sh := IntVec(tensor.Int32, bad...)
		cs = append(cs, Case{Node: NodeForUnknown("Reshape", nil, ins(a, sh), nil), Inputs: ins(a, sh), Err: status.InvalidArgument})
	}
	// Shape argument of rank 2 is rejected.
	sh := tensor.FromI32(tensor.Shape{1, 2}, []int32{3, 2})
	cs = append(cs, Case{Node: NodeForUnknown("Reshape", nil, ins(a, sh), nil), Inputs: ins(a, sh), Err: status.InvalidArgument})
	return cs
}

func shapeCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range append(append([]tensor.DType{}, MoveTypes...), tensor.String) {
		for _, s := range EdgeShapes {
			var a *tensor.Tensor
			if dt == tensor.String {
				a = RandStrings(r, s)
			} else {
				a = Rand(r, dt, s)
			}
			for _, ot := range []tensor.DType{tensor.Int32, tensor.Int64} {
				want := tensor.New(ot, tensor.Shape{int64(len(s))})
				for i, d := range s {
					SetF64(want, i, float64(d))
				}
				cs = append(cs, Case{Node: NodeFor("Shape", Attrs{"out_type": AType(ot)}, ins(a), nil), Inputs: ins(a), Want: ins(want)})
			}
		}
	}
	return cs
}

func expandDimsCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, s := range EdgeShapes {
			a := Rand(r, dt, s)
			rk := int64(len(s))
			for _, d := range []int64{0, rk, -1, -rk - 1, rk / 2} {
				for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
					dim := IntScalar(it, d)
					cs = append(cs, Case{Node: NodeFor("ExpandDims", nil, ins(a, dim), nil), Inputs: ins(a, dim), NumPy: "np.expand_dims(a0, int(a1))"})
				}
			}
		}
	}
	// A one-element vector is accepted as the dim, as TF does.
	a := Rand(r, tensor.Float, tensor.Shape{3})
	cs = append(cs, Case{Node: NodeFor("ExpandDims", nil, ins(a, IntVec(tensor.Int32, 1)), nil), Inputs: ins(a, IntVec(tensor.Int32, 1)), NumPy: "np.expand_dims(a0, int(a1[0]))"})
	s := RandStrings(r, tensor.Shape{3})
	cs = append(cs, Case{Node: NodeFor("ExpandDims", nil, ins(s, IntScalar(tensor.Int32, 0)), nil), Inputs: ins(s, IntScalar(tensor.Int32, 0)),
		Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{1, 3}, Strs: s.Strs})})
	for _, d := range []int64{2, -3, 7} {
		dim := IntScalar(tensor.Int32, d)
		cs = append(cs, Case{Node: NodeForUnknown("ExpandDims", nil, ins(a, dim), nil), Inputs: ins(a, dim), Err: status.InvalidArgument})
	}
	return cs
}

func squeezeCases(r *rand.Rand) []Case {
	var cs []Case
	shapes := []tensor.Shape{{}, {1}, {1, 1}, {3, 1, 4}, {1, 5, 1, 1}, {0, 1}, {7}, {2, 1, 0}}
	for _, dt := range MoveTypes {
		for _, s := range shapes {
			a := Rand(r, dt, s)
			cs = append(cs, Case{Node: NodeFor("Squeeze", nil, ins(a), nil), Inputs: ins(a), NumPy: "np.squeeze(a0)"})
			var ones []int64
			for i, d := range s {
				if d == 1 {
					ones = append(ones, int64(i))
				}
			}
			if len(ones) > 0 {
				// One named dim, given negative half the time.
				d := ones[r.Intn(len(ones))]
				if r.Intn(2) == 0 {
					d -= int64(len(s))
				}
				cs = append(cs, Case{Node: NodeFor("Squeeze", Attrs{"squeeze_dims": AInts(d)}, ins(a), nil), Inputs: ins(a),
					NumPy: fmt.Sprintf("np.squeeze(a0, axis=%d)", d)})
			}
		}
	}
	a := Rand(r, tensor.Float, tensor.Shape{3, 1, 4})
	for _, d := range []int64{0, 2, 3, -4} {
		cs = append(cs, Case{Node: NodeForUnknown("Squeeze", Attrs{"squeeze_dims": AInts(d)}, ins(a), nil), Inputs: ins(a), Err: status.InvalidArgument})
	}
	return cs
}

func concatCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, base := range []tensor.Shape{{4}, {2, 3}, {3, 0, 2}, {1, 1, 1}, {5, 7, 3}, {0}} {
			for axis := -len(base); axis < len(base); axis++ {
				ax := axis
				if ax < 0 {
					ax += len(base)
				}
				k := 2 + r.Intn(2)
				var in []*tensor.Tensor
				var names []string
				for i := 0; i < k; i++ {
					s := base.Clone()
					s[ax] = int64(r.Intn(4))
					in = append(in, Rand(r, dt, s))
					names = append(names, fmt.Sprintf("a%d", i))
				}
				axT := IntScalar([]tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)], int64(axis))
				in = append(in, axT)
				cs = append(cs, Case{Node: NodeFor("ConcatV2", nil, in, map[int]int{0: k}), Inputs: in,
					NumPy: fmt.Sprintf("np.concatenate([%s], axis=int(a%d))", strings.Join(names, ","), k)})
			}
		}
	}
	// Many inputs (a device moves up to 16 a launch), and one-row inputs
	// big enough for a device copy of their own beside small ones.
	for _, wide := range []struct {
		dt     tensor.DType
		shapes []tensor.Shape
		axis   int
	}{
		{tensor.Float, repeatShape(tensor.Shape{3, 4}, 18), 1},
		{tensor.Uint8, repeatShape(tensor.Shape{2, 5}, 35), 0},
		{tensor.Float, []tensor.Shape{{20000}, {5}, {17000}, {3}}, 0},
	} {
		var in []*tensor.Tensor
		var names []string
		for i, sh := range wide.shapes {
			in = append(in, Rand(r, wide.dt, sh))
			names = append(names, fmt.Sprintf("a%d", i))
		}
		k := len(in)
		in = append(in, IntScalar(tensor.Int32, int64(wide.axis)))
		cs = append(cs, Case{Node: NodeFor("ConcatV2", nil, in, map[int]int{0: k}), Inputs: in,
			NumPy: fmt.Sprintf("np.concatenate([%s], axis=int(a%d))", strings.Join(names, ","), k)})
	}
	// Strings: concatenation along axis 0 appends the elements.
	x, y := RandStrings(r, tensor.Shape{2, 2}), RandStrings(r, tensor.Shape{1, 2})
	w := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{3, 2}, Strs: append(append([][]byte{}, x.Strs...), y.Strs...)}
	cs = append(cs, Case{Node: NodeFor("ConcatV2", nil, ins(x, y, IntScalar(tensor.Int32, 0)), map[int]int{0: 2}), Inputs: ins(x, y, IntScalar(tensor.Int32, 0)), Want: ins(w)})
	// Errors: scalar inputs, rank mismatch, dim mismatch, axis out of range.
	a, b := Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{2, 4})
	for _, bad := range []struct {
		in []*tensor.Tensor
	}{
		{ins(tensor.ScalarF32(1), tensor.ScalarF32(2), IntScalar(tensor.Int32, 0))},
		{ins(a, Rand(r, tensor.Float, tensor.Shape{2, 3, 1}), IntScalar(tensor.Int32, 0))},
		{ins(a, b, IntScalar(tensor.Int32, 0))},
		{ins(a, b, IntScalar(tensor.Int32, 2))},
		{ins(a, b, IntScalar(tensor.Int32, -3))},
	} {
		cs = append(cs, Case{Node: NodeForUnknown("ConcatV2", nil, bad.in, map[int]int{0: 2}), Inputs: bad.in, Err: status.InvalidArgument})
	}
	return cs
}

func gatherCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		// {3, 17}: rows from gatherRowMin elements up take the kernels' row copy, shorter ones a typed loop.
		for _, ps := range []tensor.Shape{{5}, {4, 3}, {2, 3, 4}, {1, 7}, {6, 0}, {3, 17}} {
			p := Rand(r, dt, ps)
			for axis := -len(ps); axis < len(ps); axis++ {
				ax := axis
				if ax < 0 {
					ax += len(ps)
				}
				lim := ps[ax]
				if lim == 0 {
					continue
				}
				// {2, 5}: from the kernels' gatherPrefetchMin rows a row copy prefetches.
				for _, is := range []tensor.Shape{{}, {3}, {2, 2}, {0}, {2, 5}} {
					it := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
					idx := RandIndex(r, it, is, lim)
					in := ins(p, idx, IntScalar(tensor.Int32, int64(axis)))
					cs = append(cs, Case{Node: NodeFor("GatherV2", nil, in, nil), Inputs: in, NumPy: "np.take(a0, a1, axis=int(a2))"})
				}
			}
		}
	}
	// batch_dims: params [B, N, D], indices [B, K] gathers per batch row.
	for _, dt := range []tensor.DType{tensor.Float, tensor.Int64, tensor.Bool} {
		p := Rand(r, dt, tensor.Shape{3, 5, 2})
		idx := RandIndex(r, tensor.Int32, tensor.Shape{3, 4}, 5)
		for _, bd := range []int64{1, -1} {
			in := ins(p, idx, IntScalar(tensor.Int32, 1))
			cs = append(cs, Case{Node: NodeFor("GatherV2", Attrs{"batch_dims": AInt(bd)}, in, nil), Inputs: in,
				NumPy: "np.stack([np.take(a0[b], a1[b], axis=0) for b in range(a0.shape[0])])"})
		}
		// batch_dims=1, axis=2: params [B, N, D], indices [B, K] -> [B, N, K].
		idx2 := RandIndex(r, tensor.Int64, tensor.Shape{3, 3}, 2)
		in := ins(p, idx2, IntScalar(tensor.Int64, 2))
		cs = append(cs, Case{Node: NodeFor("GatherV2", Attrs{"batch_dims": AInt(1)}, in, nil), Inputs: in,
			NumPy: "np.stack([np.take(a0[b], a1[b], axis=1) for b in range(a0.shape[0])])"})
	}
	// int16 indices, which TF's Tindices allows too, on each path: an
	// element loop, a row copy, prefetched rows, batch_dims.
	for _, c := range []struct {
		ps, is tensor.Shape
		bd     int64
	}{{tensor.Shape{7, 3}, tensor.Shape{4}, 0}, {tensor.Shape{5, 17}, tensor.Shape{2, 2}, 0}, {tensor.Shape{30, 20}, tensor.Shape{12}, 0}, {tensor.Shape{3, 5, 2}, tensor.Shape{3, 4}, 1}} {
		p := Rand(r, tensor.Float, c.ps)
		idx := RandIndex(r, tensor.Int16, c.is, c.ps[c.bd])
		in := ins(p, idx, IntScalar(tensor.Int32, c.bd))
		numpy := "np.take(a0, a1, axis=0)"
		if c.bd == 1 {
			numpy = "np.stack([np.take(a0[b], a1[b], axis=0) for b in range(a0.shape[0])])"
		}
		cs = append(cs, Case{Node: NodeFor("GatherV2", Attrs{"batch_dims": AInt(c.bd)}, in, nil), Inputs: in, NumPy: numpy})
	}
	s := RandStrings(r, tensor.Shape{4})
	idx := IntVec(tensor.Int32, 3, 0, 3, 1)
	cs = append(cs, Case{Node: NodeFor("GatherV2", nil, ins(s, idx, IntScalar(tensor.Int32, 0)), nil), Inputs: ins(s, idx, IntScalar(tensor.Int32, 0)),
		Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{4}, Strs: [][]byte{s.Strs[3], s.Strs[0], s.Strs[3], s.Strs[1]}})})
	// An index out of range is INVALID_ARGUMENT naming the index.
	p := Rand(r, tensor.Float, tensor.Shape{5, 2})
	for _, bad := range []struct {
		idx *tensor.Tensor
		msg string
	}{
		{IntVec(tensor.Int32, 0, 1, 5), "indices[2] = 5 is not in [0, 5)"},
		{tensor.FromI64(tensor.Shape{2, 2}, []int64{0, 1, -1, 2}), "indices[1,0] = -1 is not in [0, 5)"},
		{IntScalar(tensor.Int32, 9), "indices = 9 is not in [0, 5)"},
		{IntVec(tensor.Int16, 1, -2, 0), "indices[1] = -2 is not in [0, 5)"},
	} {
		in := ins(p, bad.idx, IntScalar(tensor.Int32, 0))
		cs = append(cs, Case{Node: NodeFor("GatherV2", nil, in, nil), Inputs: in, Err: status.InvalidArgument, ErrMsg: bad.msg})
	}
	in := ins(p, IntVec(tensor.Int32, 0), IntScalar(tensor.Int32, 2))
	cs = append(cs, Case{Node: NodeForUnknown("GatherV2", nil, in, nil), Inputs: in, Err: status.InvalidArgument})
	in = ins(p, tensor.FromI32(tensor.Shape{4, 1}, []int32{0, 0, 0, 0}), IntScalar(tensor.Int32, 1))
	cs = append(cs, Case{Node: NodeForUnknown("GatherV2", Attrs{"batch_dims": AInt(1)}, in, nil), Inputs: in, Err: status.InvalidArgument})
	return cs
}

func packCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, s := range []tensor.Shape{{}, {3}, {2, 4}, {0, 2}, {1, 3, 1}} {
			for axis := -len(s) - 1; axis <= len(s); axis++ {
				k := 1 + r.Intn(3)
				var in []*tensor.Tensor
				var names []string
				for i := 0; i < k; i++ {
					in = append(in, Rand(r, dt, s))
					names = append(names, fmt.Sprintf("a%d", i))
				}
				cs = append(cs, Case{Node: NodeFor("Pack", Attrs{"axis": AInt(int64(axis))}, in, map[int]int{0: k}), Inputs: in,
					NumPy: fmt.Sprintf("np.stack([%s], axis=%d)", strings.Join(names, ","), axis)})
			}
		}
	}
	// DLRM's stack of its embeddings: more inputs than a device moves in
	// one launch.
	for _, wide := range []struct {
		dt    tensor.DType
		shape tensor.Shape
		k     int
		axis  int
	}{{tensor.Float, tensor.Shape{16, 8}, 26, 1}, {tensor.Int8, tensor.Shape{3}, 40, 0}} {
		var in []*tensor.Tensor
		var names []string
		for i := 0; i < wide.k; i++ {
			in = append(in, Rand(r, wide.dt, wide.shape))
			names = append(names, fmt.Sprintf("a%d", i))
		}
		cs = append(cs, Case{Node: NodeFor("Pack", Attrs{"axis": AInt(int64(wide.axis))}, in, map[int]int{0: wide.k}), Inputs: in,
			NumPy: fmt.Sprintf("np.stack([%s], axis=%d)", strings.Join(names, ","), wide.axis)})
	}
	x, y := RandStrings(r, tensor.Shape{2}), RandStrings(r, tensor.Shape{2})
	w := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2, 2}, Strs: [][]byte{x.Strs[0], y.Strs[0], x.Strs[1], y.Strs[1]}}
	cs = append(cs, Case{Node: NodeFor("Pack", Attrs{"axis": AInt(1)}, ins(x, y), map[int]int{0: 2}), Inputs: ins(x, y), Want: ins(w)})
	a, b := Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{3, 2})
	cs = append(cs, Case{Node: NodeForUnknown("Pack", nil, ins(a, b), map[int]int{0: 2}), Inputs: ins(a, b), Err: status.InvalidArgument})
	return cs
}

// repeatShape is n copies of s.
func repeatShape(s tensor.Shape, n int) []tensor.Shape {
	out := make([]tensor.Shape, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func transposeCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, s := range []tensor.Shape{{}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 4, 5}, {33, 65}, {1, 7, 1}} {
			a := Rand(r, dt, s)
			perm := r.Perm(len(s))
			p := make([]int64, len(perm))
			for i, v := range perm {
				p[i] = int64(v)
			}
			pt := IntVec([]tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)], p...)
			cs = append(cs, Case{Node: NodeFor("Transpose", nil, ins(a, pt), nil), Inputs: ins(a, pt), NumPy: "np.transpose(a0, [int(x) for x in a1])"})
		}
	}
	s := RandStrings(r, tensor.Shape{2, 3})
	w := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{3, 2}, Strs: [][]byte{s.Strs[0], s.Strs[3], s.Strs[1], s.Strs[4], s.Strs[2], s.Strs[5]}}
	perm := IntVec(tensor.Int32, 1, 0)
	cs = append(cs, Case{Node: NodeFor("Transpose", nil, ins(s, perm), nil), Inputs: ins(s, perm), Want: ins(w)})
	a := Rand(r, tensor.Float, tensor.Shape{2, 3})
	for _, bad := range [][]int64{{0}, {0, 0}, {0, 2}, {-1, 0}, {0, 1, 2}} {
		p := IntVec(tensor.Int32, bad...)
		cs = append(cs, Case{Node: NodeForUnknown("Transpose", nil, ins(a, p), nil), Inputs: ins(a, p), Err: status.InvalidArgument})
	}
	return cs
}

// stridedSliceCases draws random slice specs (every mask, negative and
// out-of-range bounds, negative strides) and checks them against the same
// index written as a NumPy subscript.
func stridedSliceCases(r *rand.Rand) []Case {
	var cs []Case
	const (
		kSlice = iota
		kShrink
		kNew
		kEllipsis
	)
	for i := 0; i < 300; i++ {
		rank := r.Intn(5)
		s := randShape(r, rank, 0, 5)
		if i%7 == 0 {
			s = randShape(r, rank, 1, 9)
		}
		dt := MoveTypes[r.Intn(len(MoveTypes))]
		a := Rand(r, dt, s)
		// Draw the kinds of the entries first, then map each real entry to
		// the input dim it addresses (as TF's dense spec and NumPy do).
		n := r.Intn(rank + 2)
		kinds := make([]int, n)
		ell := -1
		real := 0
		for k := range kinds {
			switch x := r.Intn(12); {
			case x == 0 && ell < 0:
				kinds[k], ell = kEllipsis, k
			case x == 1:
				kinds[k] = kNew
			case x < 5:
				kinds[k] = kShrink
				real++
			default:
				kinds[k] = kSlice
				real++
			}
		}
		if real > rank {
			continue
		}
		dimOf := make([]int, n)
		d := 0
		for k := range kinds {
			if k == ell {
				d = rank - (real - d)
			}
			dimOf[k] = d
			if kinds[k] == kSlice || kinds[k] == kShrink {
				d++
			}
		}
		var begin, end, stride []int64
		var bm, em, elm, nam, sam int64
		var items []string
		for k, kind := range kinds {
			bit := int64(1) << k
			b, e, st := int64(r.Intn(13)-6), int64(r.Intn(13)-6), int64(r.Intn(7)-3)
			if st == 0 {
				st = 1
			}
			if kind == kShrink && s[dimOf[k]] == 0 {
				kind = kSlice
			}
			switch kind {
			case kEllipsis:
				elm |= bit
				items = append(items, "Ellipsis")
			case kNew:
				nam |= bit
				items = append(items, "None")
			case kShrink:
				dd := s[dimOf[k]]
				b = int64(r.Intn(int(dd)))
				if r.Intn(2) == 0 {
					b -= dd
				}
				sam |= bit
				st = 1
				items = append(items, fmt.Sprintf("%d", b))
			default:
				bs, es := fmt.Sprint(b), fmt.Sprint(e)
				if r.Intn(3) == 0 {
					bm |= bit
					bs = "None"
				}
				if r.Intn(3) == 0 {
					em |= bit
					es = "None"
				}
				items = append(items, fmt.Sprintf("slice(%s,%s,%d)", bs, es, st))
			}
			begin, end, stride = append(begin, b), append(end, e), append(stride, st)
		}
		expr := "a0[()]"
		if len(items) > 0 {
			expr = "a0[(" + strings.Join(items, ",") + ",)]"
		}
		it := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
		in := ins(a, IntVec(it, begin...), IntVec(it, end...), IntVec(it, stride...))
		attrs := Attrs{"begin_mask": AInt(bm), "end_mask": AInt(em), "ellipsis_mask": AInt(elm), "new_axis_mask": AInt(nam), "shrink_axis_mask": AInt(sam)}
		cs = append(cs, Case{Node: NodeFor("StridedSlice", attrs, in, nil), Inputs: in, NumPy: expr})
	}
	// Strings: a reversed vector.
	s := RandStrings(r, tensor.Shape{4})
	in := ins(s, IntVec(tensor.Int32, -1), IntVec(tensor.Int32, 0), IntVec(tensor.Int32, -2))
	w := &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2}, Strs: [][]byte{s.Strs[3], s.Strs[1]}}
	cs = append(cs, Case{Node: NodeFor("StridedSlice", nil, in, nil), Inputs: in, Want: ins(w)})
	// Errors: zero stride, two ellipses, shrink out of range, too many
	// indices, mismatched lengths.
	a := Rand(r, tensor.Float, tensor.Shape{3, 4})
	v := func(x ...int64) *tensor.Tensor { return IntVec(tensor.Int32, x...) }
	for _, bad := range []struct {
		in    []*tensor.Tensor
		attrs Attrs
	}{
		{ins(a, v(0), v(2), v(0)), nil},
		{ins(a, v(0, 0), v(1, 1), v(1, 1)), Attrs{"ellipsis_mask": AInt(3)}},
		{ins(a, v(5), v(6), v(1)), Attrs{"shrink_axis_mask": AInt(1)}},
		{ins(a, v(-4), v(0), v(1)), Attrs{"shrink_axis_mask": AInt(1)}},
		{ins(a, v(0, 0, 0), v(1, 1, 1), v(1, 1, 1)), nil},
		{ins(a, v(0, 0), v(1), v(1, 1)), nil},
	} {
		cs = append(cs, Case{Node: NodeForUnknown("StridedSlice", bad.attrs, bad.in, nil), Inputs: bad.in, Err: status.InvalidArgument})
	}
	return cs
}
