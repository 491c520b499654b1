package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Families of the MLP kernels: activations with a softmax axis, BiasAdd in
// both layouts, batched GEMM with broadcast batch dims, Cast between every
// pair of dtypes, and Fill.

func init() {
	Add("Sigmoid", UnaryFamily(UnarySpec{Op: "Sigmoid", Types: FloatTypes, Ref: func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, Lo: -20, Hi: 20}))
	Add("Tanh", UnaryFamily(UnarySpec{Op: "Tanh", Types: FloatTypes, Ref: math.Tanh, Lo: -12, Hi: 12}))
	Add("Softmax", rowwiseFamily("Softmax", softmaxRef))
	Add("BiasAdd", biasAddCases)
	Add("BatchMatMulV2", batchMatMulCases("BatchMatMulV2"))
	Add("BatchMatMulV3", batchMatMulCases("BatchMatMulV3"))
	Add("Cast", castCases)
	Add("Fill", fillCases)
	// The example families of cases_example.go leave these dtypes out.
	Add("Relu", UnaryFamily(UnarySpec{Op: "Relu", Types: []tensor.DType{tensor.Int16, tensor.Uint16, tensor.Uint32, tensor.Uint64}, NumPy: "np.maximum(a0, 0)"}))
	Add("MatMul", matMulMore)
}

// matMulMore covers MatMul's bfloat16 and int64 kernels.
func matMulMore(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range []tensor.DType{tensor.Bfloat16, tensor.Int64} {
		for _, d := range [][3]int64{{1, 1, 1}, {3, 5, 7}, {0, 4, 3}, {17, 33, 9}} {
			for _, tt := range [][2]bool{{false, false}, {true, true}} {
				sa, sb := tensor.Shape{d[0], d[1]}, tensor.Shape{d[1], d[2]}
				ea, eb := "a0", "a1"
				if tt[0] {
					sa, ea = tensor.Shape{d[1], d[0]}, "a0.T"
				}
				if tt[1] {
					sb, eb = tensor.Shape{d[2], d[1]}, "a1.T"
				}
				a, b := Rand(r, dt, sa), Rand(r, dt, sb)
				tol := 0.0
				if dt == tensor.Bfloat16 {
					tol = 5e-2
					ea, eb = ea+".astype(np.float64)", eb+".astype(np.float64)"
				}
				cs = append(cs, Case{Node: NodeFor("MatMul", Attrs{"transpose_a": ABool(tt[0]), "transpose_b": ABool(tt[1])}, []*tensor.Tensor{a, b}, nil),
					Inputs: []*tensor.Tensor{a, b}, NumPy: "np.matmul(" + ea + ", " + eb + ")", Tol: tol})
			}
		}
	}
	return cs
}

// rowwiseFamily draws inputs for an op over the last axis (Softmax,
// LogSoftmax): rank 1 to 4, empty rows and empty batches, a wide range of
// logits, a row holding -inf and a NaN, and the rank-0 error.
func rowwiseFamily(op string, ref func(row []float64) []float64) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range FloatTypes {
			for _, s := range []tensor.Shape{{1}, {7}, {3, 5}, {0, 4}, {4, 0}, {2, 3, 17}, {2, 2, 2, 9}, {8, 1000}} {
				a := RandRange(r, dt, s, -30, 30)
				want := rowsMap(a, ref)
				cs = append(cs, Case{Node: NodeFor(op, nil, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{want}})
			}
			a := FromF64(dt, tensor.Shape{3, 4}, []float64{math.Inf(-1), 1, 2, 3, math.NaN(), 0, 1, 2, 5, 5, 5, 5})
			cs = append(cs, Case{Node: NodeFor(op, nil, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{rowsMap(a, ref)}})
		}
		s := Rand(r, tensor.Float, tensor.Shape{})
		cs = append(cs, Case{Node: NodeForUnknown(op, nil, []*tensor.Tensor{s}, nil), Inputs: []*tensor.Tensor{s}, Err: status.InvalidArgument})
		return cs
	}
}

func rowsMap(a *tensor.Tensor, ref func([]float64) []float64) *tensor.Tensor {
	v := F64s(a)
	out := make([]float64, len(v))
	if d := len(a.Shape); d > 0 && a.Shape[d-1] > 0 {
		n := int(a.Shape[d-1])
		for i := 0; i < len(v); i += n {
			copy(out[i:], ref(v[i:i+n]))
		}
	}
	return FromF64(a.DType, a.Shape, out)
}

func softmaxRef(row []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, x)
	}
	out := make([]float64, len(row))
	var s float64
	for i, x := range row {
		out[i] = math.Exp(x - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func logSoftmaxRef(row []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range row {
		s += math.Exp(x - m)
	}
	out := make([]float64, len(row))
	for i, x := range row {
		out[i] = x - m - math.Log(s)
	}
	return out
}

func biasAddCases(r *rand.Rand) []Case {
	var cs []Case
	types := Allowed("BiasAdd", RealTypes)
	for _, dt := range types {
		for _, s := range []tensor.Shape{{1, 1}, {3, 5}, {0, 4}, {2, 3, 4}, {2, 4, 5, 3}, {1, 2, 3, 4, 5}, {64, 129}} {
			for _, nchw := range []bool{false, true} {
				c := s[len(s)-1]
				if nchw {
					c = s[1]
				}
				v, b := Rand(r, dt, s), Rand(r, dt, tensor.Shape{c})
				WithSpecials(r, v)
				bs := "a1"
				if nchw {
					bs = "a1.reshape([-1] + [1] * " + fmt.Sprint(len(s)-2) + ")"
				}
				format := "NHWC"
				if nchw {
					format = "NCHW"
				}
				cs = append(cs, Case{Node: NodeFor("BiasAdd", Attrs{"data_format": AStr(format)}, []*tensor.Tensor{v, b}, nil),
					Inputs: []*tensor.Tensor{v, b}, NumPy: "a0 + " + bs})
			}
		}
	}
	for _, p := range [][2]tensor.Shape{{{3}, {3}}, {{2, 3}, {4}}, {{2, 3}, {3, 1}}, {{}, {1}}} {
		v, b := Rand(r, tensor.Float, p[0]), Rand(r, tensor.Float, p[1])
		cs = append(cs, Case{Node: NodeForUnknown("BiasAdd", nil, []*tensor.Tensor{v, b}, nil), Inputs: []*tensor.Tensor{v, b}, Err: status.InvalidArgument})
	}
	return cs
}

func batchMatMulCases(op string) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		ta := "T"
		if op == "BatchMatMulV3" {
			ta = "Ta"
		}
		shapes := [][2]tensor.Shape{
			{{2, 3}, {3, 4}}, {{5, 2, 3}, {5, 3, 4}}, {{5, 2, 3}, {3, 4}}, {{2, 3}, {6, 3, 1}},
			{{2, 1, 4, 3}, {1, 3, 3, 2}}, {{0, 2, 3}, {3, 4}}, {{3, 0, 3}, {3, 3, 2}}, {{2, 3, 0}, {2, 0, 4}},
			{{4, 33, 17}, {4, 17, 9}}, {{1, 1}, {1, 1}},
		}
		for _, dt := range Allowed(op, []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64}, ta) {
			for _, s := range shapes {
				for _, adj := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					sa, sb := s[0].Clone(), s[1].Clone()
					if adj[0] {
						sa[len(sa)-1], sa[len(sa)-2] = sa[len(sa)-2], sa[len(sa)-1]
					}
					if adj[1] {
						sb[len(sb)-1], sb[len(sb)-2] = sb[len(sb)-2], sb[len(sb)-1]
					}
					a, b := Rand(r, dt, sa), Rand(r, dt, sb)
					attrs := Attrs{"adj_x": ABool(adj[0]), "adj_y": ABool(adj[1])}
					if op == "BatchMatMulV3" {
						attrs["Tout"] = AType(dt)
					}
					ea, eb := "a0.astype(np.float64)", "a1.astype(np.float64)"
					if !dt.IsFloat() {
						ea, eb = "a0", "a1"
					}
					if adj[0] {
						ea = "np.swapaxes(" + ea + ", -1, -2)"
					}
					if adj[1] {
						eb = "np.swapaxes(" + eb + ", -1, -2)"
					}
					tol := 0.0
					switch dt {
					case tensor.Float:
						tol = 1e-4
					case tensor.Half:
						tol = 1e-2
					case tensor.Bfloat16:
						tol = 5e-2
					}
					cs = append(cs, Case{Node: NodeFor(op, attrs, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b},
						NumPy: "np.matmul(" + ea + ", " + eb + ")", Tol: tol})
				}
			}
		}
		for _, s := range [][2]tensor.Shape{{{2, 3}, {4, 5}}, {{3}, {3, 2}}, {{2, 2, 3}, {3, 3, 4}}} {
			a, b := Rand(r, tensor.Float, s[0]), Rand(r, tensor.Float, s[1])
			attrs := Attrs{}
			if op == "BatchMatMulV3" {
				attrs["Tout"] = AType(tensor.Float)
			}
			cs = append(cs, Case{Node: NodeForUnknown(op, attrs, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Err: status.InvalidArgument})
		}
		return cs
	}
}

// castCases converts between every pair of numeric and bool dtypes with
// values every destination holds (conversions out of range are undefined
// in TF), plus float specials into floats and bool.
func castCases(r *rand.Rand) []Case {
	types := dtypes(FloatTypes, SignedInts, UnsignedInts, []tensor.DType{tensor.Bool})
	var cs []Case
	for _, src := range types {
		for _, dst := range types {
			for _, s := range []tensor.Shape{{}, {0}, {9}, {3, 70}} {
				a := RandRange(r, src, s, 0, 100)
				if src.IsFloat() && (dst.IsFloat() || dst == tensor.Bool) {
					a = RandRange(r, src, s, -100, 100)
					WithSpecials(r, a)
				}
				n := NodeFor("Cast", Attrs{"SrcT": AType(src), "DstT": AType(dst)}, []*tensor.Tensor{a}, nil)
				var want *tensor.Tensor
				if dst == tensor.Bool {
					want = Map(a, dst, func(v float64) float64 {
						if v != 0 {
							return 1
						}
						return 0
					})
				} else if src.IsFloat() && !dst.IsFloat() {
					want = Map(a, dst, math.Trunc)
				} else {
					want = Map(a, dst, func(v float64) float64 { return v })
				}
				cs = append(cs, Case{Node: n, Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{want}})
			}
		}
	}
	// Negative floats truncate toward zero into signed integers.
	a := FromF64(tensor.Float, tensor.Shape{4}, []float64{-2.7, -0.5, 0.5, 2.7})
	for _, dst := range SignedInts {
		cs = append(cs, Case{Node: NodeFor("Cast", Attrs{"SrcT": AType(tensor.Float), "DstT": AType(dst)}, []*tensor.Tensor{a}, nil),
			Inputs: []*tensor.Tensor{a}, Want: []*tensor.Tensor{FromF64(dst, tensor.Shape{4}, []float64{-2, 0, 0, 2})}})
	}
	// Strings cast to themselves only.
	s := Rand(r, tensor.String, tensor.Shape{3})
	cs = append(cs, Case{Node: NodeFor("Cast", Attrs{"SrcT": AType(tensor.String), "DstT": AType(tensor.String)}, []*tensor.Tensor{s}, nil),
		Inputs: []*tensor.Tensor{s}, Want: []*tensor.Tensor{s}})
	return cs
}

func fillCases(r *rand.Rand) []Case {
	var cs []Case
	types := dtypes(FloatTypes, SignedInts, UnsignedInts, []tensor.DType{tensor.Bool, tensor.String})
	for _, dt := range Allowed("Fill", types) {
		for _, dims := range [][]int64{{}, {0}, {3}, {2, 0, 4}, {2, 3, 5}} {
			for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
				d := intsOf(it, dims)
				v := Rand(r, dt, tensor.Shape{})
				want := tensor.New(dt, dims)
				for i := 0; i < int(want.NumElements()); i++ {
					if dt == tensor.String {
						want.Strs[i] = v.Strs[0]
					} else {
						SetF64(want, i, v.ElementF64(0))
					}
				}
				cs = append(cs, Case{Node: NodeFor("Fill", Attrs{"index_type": AType(it)}, []*tensor.Tensor{d, v}, nil), Inputs: []*tensor.Tensor{d, v}, Want: []*tensor.Tensor{want}})
			}
		}
	}
	bad := []struct{ d, v *tensor.Tensor }{
		{intsOf(tensor.Int32, []int64{2, -1}), Rand(r, tensor.Float, tensor.Shape{})},
		{intsOf(tensor.Int32, []int64{2}).Reshaped(tensor.Shape{1, 1}), Rand(r, tensor.Float, tensor.Shape{})},
		{intsOf(tensor.Int32, []int64{2}), Rand(r, tensor.Float, tensor.Shape{2})},
	}
	for _, b := range bad {
		cs = append(cs, Case{Node: NodeForUnknown("Fill", nil, []*tensor.Tensor{b.d, b.v}, nil), Inputs: []*tensor.Tensor{b.d, b.v}, Err: status.InvalidArgument})
	}
	return cs
}

// intsOf builds an int32 or int64 vector.
func intsOf(dt tensor.DType, v []int64) *tensor.Tensor {
	t := tensor.New(dt, tensor.Shape{int64(len(v))})
	for i, x := range v {
		if dt == tensor.Int32 {
			t.I32()[i] = int32(x)
		} else {
			t.I64()[i] = x
		}
	}
	return t
}
