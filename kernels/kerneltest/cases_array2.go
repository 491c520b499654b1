package kerneltest

import (
	"fmt"
	"math/rand"
	"strings"

	"mstream/status"
	"mstream/tensor"
)

// Families for the second set of array ops: ShapeN, Size, Rank, Concat,
// Split, SplitV, Unpack, Slice, Tile, Pad, PadV2, MirrorPad, ReverseV2,
// GatherNd, ScatterNd, OneHot, Range, BroadcastTo, BroadcastArgs, Where,
// Bitcast, MatrixBandPart, Unique, InvertPermutation.

func pick[T any](r *rand.Rand, v []T) T { return v[r.Intn(len(v))] }

var indexTypes = []tensor.DType{tensor.Int32, tensor.Int64}

// AllNumericTypes adds the wider unsigned types to NumericTypes, for ops TF
// registers on them.
var AllNumericTypes = append(append([]tensor.DType{}, NumericTypes...), tensor.Uint16, tensor.Uint32, tensor.Uint64)

func names(from, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("a%d", from+i)
	}
	return strings.Join(s, ",")
}

func pyInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// bad appends an error case built on unknown input shapes.
func bad(cs *[]Case, op string, attrs Attrs, in []*tensor.Tensor, lists map[int]int, code status.Code) {
	*cs = append(*cs, Case{Node: NodeForUnknown(op, attrs, in, lists), Inputs: in, Err: code})
}

func init() {
	Add("ShapeN", func(r *rand.Rand) []Case {
		var cs []Case
		for _, ot := range indexTypes {
			for k := 1; k <= 3; k++ {
				var in []*tensor.Tensor
				var exprs []string
				for i := 0; i < k; i++ {
					in = append(in, Rand(r, tensor.Float, pick(r, EdgeShapes)))
					exprs = append(exprs, fmt.Sprintf("np.array(a%d.shape, np.int64)", i))
				}
				cs = append(cs, Case{Node: NodeFor("ShapeN", Attrs{"out_type": AType(ot)}, in, map[int]int{0: k}), Inputs: in, NumPy: "(" + strings.Join(exprs, ",") + ",)"})
			}
		}
		return cs
	})
	Add("Size", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range EdgeShapes {
				a := Rand(r, dt, s)
				cs = append(cs, Case{Node: NodeFor("Size", Attrs{"out_type": AType(pick(r, indexTypes))}, ins(a), nil), Inputs: ins(a), NumPy: "np.array(a0.size)"})
			}
		}
		s := RandStrings(r, tensor.Shape{2, 3})
		cs = append(cs, Case{Node: NodeFor("Size", nil, ins(s), nil), Inputs: ins(s), Want: ins(IntScalar(tensor.Int32, 6))})
		return cs
	})
	Add("Rank", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range EdgeShapes {
				a := Rand(r, dt, s)
				cs = append(cs, Case{Node: NodeFor("Rank", nil, ins(a), nil), Inputs: ins(a), NumPy: "np.array(a0.ndim)"})
			}
		}
		return cs
	})
	Add("Concat", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, base := range []tensor.Shape{{3}, {2, 4}, {2, 0, 3}, {3, 1, 5}} {
				axis := r.Intn(2*len(base)) - len(base)
				ax := (axis + len(base)) % len(base)
				k := 2 + r.Intn(2)
				in := ins(IntScalar(tensor.Int32, int64(axis)))
				for i := 0; i < k; i++ {
					s := base.Clone()
					s[ax] = int64(r.Intn(4))
					in = append(in, Rand(r, dt, s))
				}
				cs = append(cs, Case{Node: NodeFor("Concat", nil, in, map[int]int{1: k}), Inputs: in,
					NumPy: fmt.Sprintf("np.concatenate([%s], axis=int(a0))", names(1, k))})
			}
		}
		a, b := Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{3, 3})
		bad(&cs, "Concat", nil, ins(IntScalar(tensor.Int32, 1), a, b), map[int]int{1: 2}, status.InvalidArgument)
		bad(&cs, "Concat", nil, ins(IntScalar(tensor.Int32, 2), a, a), map[int]int{1: 2}, status.InvalidArgument)
		return cs
	})
	Add("Split", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, base := range []tensor.Shape{{6}, {4, 6}, {2, 0, 3}, {3, 2, 4}, {0}} {
				for axis := -len(base); axis < len(base); axis++ {
					ax := (axis + len(base)) % len(base)
					var ks []int
					for k := 1; k <= 4; k++ {
						if base[ax]%int64(k) == 0 {
							ks = append(ks, k)
						}
					}
					k := pick(r, ks)
					a := Rand(r, dt, base)
					in := ins(IntScalar(tensor.Int32, int64(axis)), a)
					cs = append(cs, Case{Node: NodeFor("Split", Attrs{"num_split": AInt(int64(k))}, in, nil), Inputs: in,
						NumPy: fmt.Sprintf("tuple(np.split(a1, %d, axis=int(a0)))", k)})
				}
			}
		}
		// More outputs than a device moves in one launch; one-row outputs
		// big enough for a device copy of their own.
		for _, wide := range []struct {
			dt    tensor.DType
			shape tensor.Shape
			k     int
			axis  int
		}{{tensor.Uint8, tensor.Shape{60, 3}, 30, 0}, {tensor.Float, tensor.Shape{2, 34}, 17, 1}, {tensor.Float, tensor.Shape{40000}, 2, 0}} {
			a := Rand(r, wide.dt, wide.shape)
			in := ins(IntScalar(tensor.Int32, int64(wide.axis)), a)
			cs = append(cs, Case{Node: NodeFor("Split", Attrs{"num_split": AInt(int64(wide.k))}, in, nil), Inputs: in,
				NumPy: fmt.Sprintf("tuple(np.split(a1, %d, axis=int(a0)))", wide.k)})
		}
		s := RandStrings(r, tensor.Shape{4})
		in := ins(IntScalar(tensor.Int32, 0), s)
		cs = append(cs, Case{Node: NodeFor("Split", Attrs{"num_split": AInt(2)}, in, nil), Inputs: in,
			Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2}, Strs: s.Strs[:2]}, &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2}, Strs: s.Strs[2:]})})
		a := Rand(r, tensor.Float, tensor.Shape{3, 4})
		bad(&cs, "Split", Attrs{"num_split": AInt(2)}, ins(IntScalar(tensor.Int32, 0), a), nil, status.InvalidArgument)
		bad(&cs, "Split", Attrs{"num_split": AInt(2)}, ins(IntScalar(tensor.Int32, 2), a), nil, status.InvalidArgument)
		return cs
	})
	Add("SplitV", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, base := range []tensor.Shape{{7}, {4, 6}, {2, 0, 3}, {3, 5, 2}} {
				axis := r.Intn(2*len(base)) - len(base)
				ax := (axis + len(base)) % len(base)
				d := base[ax]
				k := 1 + r.Intn(4)
				sizes := make([]int64, k)
				left := d
				for i := 0; i < k-1; i++ {
					sizes[i] = r.Int63n(left + 1)
					left -= sizes[i]
				}
				sizes[k-1] = left
				cuts := make([]int64, 0, k)
				c := int64(0)
				for _, s := range sizes[:k-1] {
					c += s
					cuts = append(cuts, c)
				}
				given := append([]int64{}, sizes...)
				if r.Intn(2) == 0 {
					given[r.Intn(k)] = -1
				}
				a := Rand(r, dt, base)
				in := ins(a, IntVec(pick(r, indexTypes), given...), IntScalar(tensor.Int32, int64(axis)))
				cs = append(cs, Case{Node: NodeFor("SplitV", Attrs{"num_split": AInt(int64(k))}, in, nil), Inputs: in,
					NumPy: fmt.Sprintf("tuple(np.split(a0, %s, axis=int(a2)))", pyInts(cuts))})
			}
		}
		a := Rand(r, tensor.Float, tensor.Shape{5})
		for _, sz := range [][]int64{{2, 2}, {-1, -1}, {6, -1}, {-2, 7}} {
			bad(&cs, "SplitV", Attrs{"num_split": AInt(2)}, ins(a, IntVec(tensor.Int64, sz...), IntScalar(tensor.Int32, 0)), nil, status.InvalidArgument)
		}
		return cs
	})
	Add("Unpack", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range []tensor.Shape{{3}, {2, 4}, {1, 0, 2}, {3, 2, 5}} {
				axis := r.Intn(2*len(s)) - len(s)
				ax := (axis + len(s)) % len(s)
				a := Rand(r, dt, s)
				cs = append(cs, Case{Node: NodeFor("Unpack", Attrs{"num": AInt(s[ax]), "axis": AInt(int64(axis))}, ins(a), nil), Inputs: ins(a),
					NumPy: fmt.Sprintf("tuple(np.moveaxis(a0, %d, 0))", axis)})
			}
		}
		// DLRM's unstack: more outputs than a device moves in one launch.
		for _, wide := range []struct {
			s    tensor.Shape
			axis int
		}{{tensor.Shape{4, 26, 3}, 1}, {tensor.Shape{20, 2}, 0}} {
			a := Rand(r, tensor.Float, wide.s)
			cs = append(cs, Case{Node: NodeFor("Unpack", Attrs{"num": AInt(wide.s[wide.axis]), "axis": AInt(int64(wide.axis))}, ins(a), nil), Inputs: ins(a),
				NumPy: fmt.Sprintf("tuple(np.moveaxis(a0, %d, 0))", wide.axis)})
		}
		s := RandStrings(r, tensor.Shape{2, 1})
		cs = append(cs, Case{Node: NodeFor("Unpack", Attrs{"num": AInt(2)}, ins(s), nil), Inputs: ins(s),
			Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{1}, Strs: s.Strs[:1]}, &tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{1}, Strs: s.Strs[1:]})})
		a := Rand(r, tensor.Float, tensor.Shape{3, 2})
		bad(&cs, "Unpack", Attrs{"num": AInt(2)}, ins(a), nil, status.InvalidArgument)
		bad(&cs, "Unpack", Attrs{"num": AInt(2), "axis": AInt(2)}, ins(a), nil, status.InvalidArgument)
		return cs
	})
	Add("Slice", func(r *rand.Rand) []Case {
		var cs []Case
		for i := 0; i < 120; i++ {
			s := randShape(r, r.Intn(5), 0, 6)
			dt := pick(r, MoveTypes)
			a := Rand(r, dt, s)
			begin, size := make([]int64, len(s)), make([]int64, len(s))
			var items []string
			for d, n := range s {
				begin[d] = r.Int63n(n + 1)
				if r.Intn(4) == 0 {
					size[d] = -1
					items = append(items, fmt.Sprintf("slice(%d,None)", begin[d]))
				} else {
					size[d] = r.Int63n(n - begin[d] + 1)
					items = append(items, fmt.Sprintf("slice(%d,%d)", begin[d], begin[d]+size[d]))
				}
			}
			it := pick(r, indexTypes)
			in := ins(a, IntVec(it, begin...), IntVec(it, size...))
			expr := "a0[()]"
			if len(items) > 0 {
				expr = "a0[(" + strings.Join(items, ",") + ",)]"
			}
			cs = append(cs, Case{Node: NodeFor("Slice", nil, in, nil), Inputs: in, NumPy: expr})
		}
		a := Rand(r, tensor.Float, tensor.Shape{3, 4})
		for _, b := range [][2][]int64{{{0}, {1}}, {{4, 0}, {0, 1}}, {{-1, 0}, {1, 1}}, {{1, 1}, {3, 1}}, {{0, 0}, {-2, 1}}} {
			bad(&cs, "Slice", nil, ins(a, IntVec(tensor.Int32, b[0]...), IntVec(tensor.Int32, b[1]...)), nil, status.InvalidArgument)
		}
		return cs
	})
	Add("Tile", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range []tensor.Shape{{}, {3}, {2, 3}, {1, 0, 2}, {2, 1, 3}} {
				m := make([]int64, len(s))
				for i := range m {
					m[i] = r.Int63n(4)
					if i == 0 && r.Intn(3) > 0 {
						m[i] = 1 + r.Int63n(3)
					}
				}
				a := Rand(r, dt, s)
				mt := IntVec(pick(r, indexTypes), m...)
				cs = append(cs, Case{Node: NodeFor("Tile", nil, ins(a, mt), nil), Inputs: ins(a, mt), NumPy: "np.tile(a0, tuple(int(x) for x in a1)) if a0.ndim else a0"})
			}
		}
		s := RandStrings(r, tensor.Shape{2})
		m := IntVec(tensor.Int32, 2)
		cs = append(cs, Case{Node: NodeFor("Tile", nil, ins(s, m), nil), Inputs: ins(s, m),
			Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{4}, Strs: [][]byte{s.Strs[0], s.Strs[1], s.Strs[0], s.Strs[1]}})})
		a := Rand(r, tensor.Float, tensor.Shape{2, 3})
		bad(&cs, "Tile", nil, ins(a, IntVec(tensor.Int32, 2)), nil, status.InvalidArgument)
		bad(&cs, "Tile", nil, ins(a, IntVec(tensor.Int32, 2, -1)), nil, status.InvalidArgument)
		return cs
	})
	padCases := func(op string) Gen {
		return func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range MoveTypes {
				for _, s := range []tensor.Shape{{}, {3}, {2, 3}, {0, 2}, {2, 1, 3}} {
					p := make([]int64, 2*len(s))
					for i := range p {
						p[i] = r.Int63n(3)
					}
					a := Rand(r, dt, s)
					pt := tensor.New(pick(r, indexTypes), tensor.Shape{int64(len(s)), 2})
					for i, v := range p {
						SetF64(pt, i, float64(v))
					}
					in := ins(a, pt)
					expr := "np.pad(a0, a1.astype(np.int64)) if a0.ndim else a0"
					if op == "PadV2" {
						in = append(in, Rand(r, dt, tensor.Shape{}))
						expr = "np.pad(a0, a1.astype(np.int64), constant_values=a2) if a0.ndim else a0"
					}
					cs = append(cs, Case{Node: NodeFor(op, nil, in, nil), Inputs: in, NumPy: expr})
				}
			}
			a := Rand(r, tensor.Float, tensor.Shape{2, 3})
			for _, p := range []*tensor.Tensor{IntVec(tensor.Int32, 1, 1), tensor.FromI32(tensor.Shape{3, 2}, []int32{0, 0, 0, 0, 0, 0}), tensor.FromI32(tensor.Shape{2, 2}, []int32{0, -1, 0, 0})} {
				in := ins(a, p)
				if op == "PadV2" {
					in = append(in, tensor.ScalarF32(1))
				}
				bad(&cs, op, nil, in, nil, status.InvalidArgument)
			}
			return cs
		}
	}
	Add("Pad", padCases("Pad"))
	Add("PadV2", padCases("PadV2"))
	Add("MirrorPad", func(r *rand.Rand) []Case {
		var cs []Case
		for _, mode := range []string{"REFLECT", "SYMMETRIC"} {
			off := int64(0)
			if mode == "REFLECT" {
				off = 1
			}
			for _, dt := range MoveTypes {
				for _, s := range []tensor.Shape{{4}, {2, 3}, {3, 1, 4}, {5, 5}} {
					pt := tensor.New(pick(r, indexTypes), tensor.Shape{int64(len(s)), 2})
					for i := 0; i < 2*len(s); i++ {
						SetF64(pt, i, float64(r.Int63n(s[i/2]-off+1)))
					}
					a := Rand(r, dt, s)
					cs = append(cs, Case{Node: NodeFor("MirrorPad", Attrs{"mode": AStr(mode)}, ins(a, pt), nil), Inputs: ins(a, pt),
						NumPy: fmt.Sprintf("np.pad(a0, a1.astype(np.int64), mode=%q)", strings.ToLower(mode))})
				}
			}
			a := Rand(r, tensor.Float, tensor.Shape{3})
			bad(&cs, "MirrorPad", Attrs{"mode": AStr(mode)}, ins(a, tensor.FromI32(tensor.Shape{1, 2}, []int32{int32(4 - off), 0})), nil, status.InvalidArgument)
		}
		return cs
	})
	Add("ReverseV2", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range []tensor.Shape{{}, {5}, {2, 3}, {2, 0, 3}, {3, 4, 5}} {
				var axes []int64
				for d := range s {
					if r.Intn(2) == 0 {
						a := int64(d)
						if r.Intn(2) == 0 {
							a -= int64(len(s))
						}
						axes = append(axes, a)
					}
				}
				a := Rand(r, dt, s)
				at := IntVec(pick(r, indexTypes), axes...)
				cs = append(cs, Case{Node: NodeFor("ReverseV2", nil, ins(a, at), nil), Inputs: ins(a, at), NumPy: "np.flip(a0, axis=tuple(int(x) for x in a1))"})
			}
		}
		s := RandStrings(r, tensor.Shape{3})
		at := IntVec(tensor.Int32, 0)
		cs = append(cs, Case{Node: NodeFor("ReverseV2", nil, ins(s, at), nil), Inputs: ins(s, at),
			Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{3}, Strs: [][]byte{s.Strs[2], s.Strs[1], s.Strs[0]}})})
		a := Rand(r, tensor.Float, tensor.Shape{2, 3})
		bad(&cs, "ReverseV2", nil, ins(a, IntVec(tensor.Int32, 2)), nil, status.InvalidArgument)
		bad(&cs, "ReverseV2", nil, ins(a, IntVec(tensor.Int32, 1, -1)), nil, status.InvalidArgument)
		return cs
	})
	Add("GatherNd", gatherNdCases)
	Add("ScatterNd", scatterNdCases)
	Add("OneHot", oneHotCases)
	Add("Range", rangeCases)
	Add("BroadcastTo", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, c := range [][2]tensor.Shape{{{}, {3}}, {{}, {}}, {{3}, {2, 3}}, {{1, 3}, {4, 3}}, {{2, 1}, {2, 5}}, {{1}, {0}}, {{2, 1, 3}, {4, 2, 2, 3}}, {{3}, {3}}} {
				a := Rand(r, dt, c[0])
				sh := IntVec(pick(r, indexTypes), c[1]...)
				cs = append(cs, Case{Node: NodeFor("BroadcastTo", nil, ins(a, sh), nil), Inputs: ins(a, sh), NumPy: "np.broadcast_to(a0, tuple(int(x) for x in a1))"})
			}
		}
		a := Rand(r, tensor.Float, tensor.Shape{2, 3})
		bad(&cs, "BroadcastTo", nil, ins(a, IntVec(tensor.Int32, 3)), nil, status.InvalidArgument)
		bad(&cs, "BroadcastTo", nil, ins(a, IntVec(tensor.Int32, 4, 3)), nil, status.InvalidArgument)
		return cs
	})
	Add("BroadcastArgs", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range indexTypes {
			for _, c := range [][2][]int64{{{}, {3}}, {{2, 1}, {5}}, {{1}, {4, 1, 3}}, {{0, 1}, {1, 7}}, {{3, 4}, {3, 4}}} {
				in := ins(IntVec(dt, c[0]...), IntVec(dt, c[1]...))
				cs = append(cs, Case{Node: NodeFor("BroadcastArgs", Attrs{"T": AType(dt)}, in, nil), Inputs: in,
					NumPy: "np.array(np.broadcast_shapes(tuple(int(x) for x in a0), tuple(int(x) for x in a1)), np.int64)"})
			}
		}
		bad(&cs, "BroadcastArgs", nil, ins(IntVec(tensor.Int32, 2), IntVec(tensor.Int32, 3)), nil, status.InvalidArgument)
		return cs
	})
	Add("Where", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append([]tensor.DType{tensor.Bool}, NumericTypes...) {
			for _, s := range EdgeShapes {
				a := Rand(r, dt, s)
				if dt.IsFloat() && a.NumElements() > 2 {
					SetF64(a, 0, 0) // exact zeros among the values
				}
				cs = append(cs, Case{Node: NodeFor("Where", Attrs{"T": AType(dt)}, ins(a), nil), Inputs: ins(a), NumPy: "np.argwhere(a0)"})
			}
		}
		return cs
	})
	Add("Bitcast", bitcastCases)
	Add("MatrixBandPart", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, s := range []tensor.Shape{{3, 3}, {4, 6}, {2, 5, 3}, {0, 2, 2}, {2, 1, 1}} {
				m, n := s[len(s)-2], s[len(s)-1]
				lo, hi := r.Int63n(m+2)-1, r.Int63n(n+2)-1
				a := Rand(r, dt, s)
				it := pick(r, indexTypes)
				in := ins(a, IntScalar(it, lo), IntScalar(it, hi))
				cs = append(cs, Case{Node: NodeFor("MatrixBandPart", Attrs{"Tindex": AType(it)}, in, nil), Inputs: in,
					NumPy: "np.where(((int(a1) < 0) | (np.subtract.outer(np.arange(a0.shape[-2]), np.arange(a0.shape[-1])) <= int(a1))) & " +
						"((int(a2) < 0) | (np.subtract.outer(np.arange(a0.shape[-1]), np.arange(a0.shape[-2])).T <= int(a2))), a0, np.zeros((), a0.dtype))"})
			}
		}
		a := Rand(r, tensor.Float, tensor.Shape{2, 3})
		bad(&cs, "MatrixBandPart", nil, ins(a, IntScalar(tensor.Int64, 3), IntScalar(tensor.Int64, 0)), nil, status.InvalidArgument)
		bad(&cs, "MatrixBandPart", nil, ins(Rand(r, tensor.Float, tensor.Shape{3}), IntScalar(tensor.Int64, 0), IntScalar(tensor.Int64, 0)), nil, status.InvalidArgument)
		return cs
	})
	Add("Unique", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range MoveTypes {
			for _, n := range []int64{0, 1, 7, 40} {
				// Few distinct values so that repeats are common.
				a := RandRange(r, dt, tensor.Shape{n}, -3, 3)
				if dt.IsFloat() {
					a = Map(RandRange(r, tensor.Int32, tensor.Shape{n}, -3, 3), dt, func(v float64) float64 { return v / 2 })
				}
				cs = append(cs, Case{Node: NodeFor("Unique", Attrs{"out_idx": AType(pick(r, indexTypes))}, ins(a), nil), Inputs: ins(a),
					NumPy: "(lambda u, i, inv: (u[np.argsort(i)], np.argsort(np.argsort(i))[inv]))(*np.unique(a0, return_index=True, return_inverse=True))"})
			}
		}
		s := tensor.FromStrings(tensor.Shape{5}, []string{"b\x00", "a", "b\x00", "", "a"})
		cs = append(cs, Case{Node: NodeFor("Unique", nil, ins(s), nil), Inputs: ins(s),
			Want: ins(tensor.FromStrings(tensor.Shape{3}, []string{"b\x00", "a", ""}), tensor.FromI32(tensor.Shape{5}, []int32{0, 1, 0, 2, 1}))})
		bad(&cs, "Unique", nil, ins(Rand(r, tensor.Float, tensor.Shape{2, 2})), nil, status.InvalidArgument)
		return cs
	})
	Add("InvertPermutation", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range indexTypes {
			for _, n := range []int{0, 1, 5, 100} {
				p := r.Perm(n)
				v := make([]int64, n)
				for i, x := range p {
					v[i] = int64(x)
				}
				a := IntVec(dt, v...)
				cs = append(cs, Case{Node: NodeFor("InvertPermutation", Attrs{"T": AType(dt)}, ins(a), nil), Inputs: ins(a), NumPy: "np.argsort(a0)"})
			}
			for _, b := range [][]int64{{0, 0}, {0, 2}, {-1, 0}} {
				bad(&cs, "InvertPermutation", Attrs{"T": AType(dt)}, ins(IntVec(dt, b...)), nil, status.InvalidArgument)
			}
		}
		return cs
	})
}

func gatherNdCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, ps := range []tensor.Shape{{5}, {4, 3}, {2, 3, 4}} {
			p := Rand(r, dt, ps)
			for k := 0; k <= len(ps); k++ {
				for _, lead := range []tensor.Shape{{}, {3}, {2, 2}, {0}} {
					is := append(lead.Clone(), int64(k))
					it := tensor.New(pick(r, indexTypes), is)
					for i := 0; i < int(it.NumElements()); i++ {
						SetF64(it, i, float64(r.Int63n(ps[i%k])))
					}
					cs = append(cs, Case{Node: NodeFor("GatherNd", nil, ins(p, it), nil), Inputs: ins(p, it),
						NumPy: "a0[tuple(np.moveaxis(a1, -1, 0))] if a1.shape[-1] else np.broadcast_to(a0, a1.shape[:-1] + a0.shape)"})
				}
			}
		}
	}
	s := RandStrings(r, tensor.Shape{2, 2})
	it := tensor.FromI32(tensor.Shape{2, 2}, []int32{1, 0, 0, 1})
	cs = append(cs, Case{Node: NodeFor("GatherNd", nil, ins(s, it), nil), Inputs: ins(s, it),
		Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2}, Strs: [][]byte{s.Strs[2], s.Strs[1]}})})
	p := Rand(r, tensor.Float, tensor.Shape{2, 3})
	bi := tensor.FromI32(tensor.Shape{2, 2}, []int32{0, 0, 2, 0})
	cs = append(cs, Case{Node: NodeFor("GatherNd", nil, ins(p, bi), nil), Inputs: ins(p, bi), Err: status.InvalidArgument, ErrMsg: "indices[1] = [2, 0] does not index into param shape [2,3]"})
	bad(&cs, "GatherNd", nil, ins(p, tensor.FromI32(tensor.Shape{1, 3}, []int32{0, 0, 0})), nil, status.InvalidArgument)
	return cs
}

func scatterNdCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range AllNumericTypes {
		for _, shape := range []tensor.Shape{{6}, {4, 3}, {2, 3, 2}} {
			for k := 1; k <= len(shape); k++ {
				for _, lead := range []tensor.Shape{{}, {5}, {2, 3}, {0}} {
					is := append(lead.Clone(), int64(k))
					it := tensor.New(pick(r, indexTypes), is)
					for i := 0; i < int(it.NumElements()); i++ {
						SetF64(it, i, float64(r.Int63n(shape[i%k])))
					}
					u := Rand(r, dt, append(lead.Clone(), shape[k:]...))
					st := IntVec(it.DType, shape...)
					acc := "np.float64"
					if dt.IsInteger() {
						acc = "a1.dtype"
					}
					cs = append(cs, Case{Node: NodeFor("ScatterNd", nil, ins(it, u, st), nil), Inputs: ins(it, u, st),
						NumPy: fmt.Sprintf("(lambda o: (np.add.at(o, tuple(np.moveaxis(a0, -1, 0)), a1.astype(o.dtype)), o)[1])(np.zeros(tuple(int(x) for x in a2), %s))", acc)})
				}
			}
		}
	}
	it := tensor.FromI64(tensor.Shape{2, 1}, []int64{1, 4})
	in := ins(it, Rand(r, tensor.Float, tensor.Shape{2}), IntVec(tensor.Int64, 4))
	// TF's GPU kernel skips an out-of-range index instead (HostErr).
	cs = append(cs, Case{Node: NodeFor("ScatterNd", nil, in, nil), Inputs: in, Err: status.InvalidArgument, ErrMsg: "indices[1] = [4] does not index into shape [4]", HostErr: true})
	in = ins(it, Rand(r, tensor.Float, tensor.Shape{3}), IntVec(tensor.Int64, 4))
	bad(&cs, "ScatterNd", nil, in, nil, status.InvalidArgument)
	return cs
}

func oneHotCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range MoveTypes {
		for _, s := range []tensor.Shape{{}, {4}, {2, 3}, {0, 2}} {
			for _, axis := range []int64{-1, 0, int64(len(s))} {
				depth := r.Int63n(5)
				it := pick(r, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8})
				idx := RandRange(r, it, s, -1, float64(depth+1))
				ax := axis
				if ax < 0 {
					ax = int64(len(s))
				}
				rs := make([]int64, len(s)+1)
				for i := range rs {
					rs[i] = 1
				}
				rs[ax] = -1
				in := ins(idx, IntScalar(tensor.Int32, depth), Rand(r, dt, tensor.Shape{}), Rand(r, dt, tensor.Shape{}))
				cs = append(cs, Case{Node: NodeFor("OneHot", Attrs{"axis": AInt(axis)}, in, nil), Inputs: in,
					NumPy: fmt.Sprintf("np.where(np.expand_dims(a0.astype(np.int64), %d) == np.arange(int(a1)).reshape(%s), a2, a3)", ax, shapeTuple(rs))})
			}
		}
	}
	in := ins(IntVec(tensor.Int64, 0, 2), IntScalar(tensor.Int32, 3), RandStrings(r, tensor.Shape{}), RandStrings(r, tensor.Shape{}))
	on, off := in[2].Strs[0], in[3].Strs[0]
	cs = append(cs, Case{Node: NodeFor("OneHot", nil, in, nil), Inputs: in,
		Want: ins(&tensor.Tensor{DType: tensor.String, Shape: tensor.Shape{2, 3}, Strs: [][]byte{on, off, off, off, off, on}})})
	bad(&cs, "OneHot", nil, ins(IntVec(tensor.Int64, 0), IntScalar(tensor.Int32, -1), tensor.ScalarF32(1), tensor.ScalarF32(0)), nil, status.InvalidArgument)
	bad(&cs, "OneHot", Attrs{"axis": AInt(3)}, ins(IntVec(tensor.Int64, 0), IntScalar(tensor.Int32, 2), tensor.ScalarF32(1), tensor.ScalarF32(0)), nil, status.InvalidArgument)
	return cs
}

func rangeCases(r *rand.Rand) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64, tensor.Uint16, tensor.Uint32}
	for _, dt := range types {
		for i := 0; i < 8; i++ {
			var s, l, d float64
			if dt.IsFloat() {
				s, l, d = float64(r.Intn(20)-10)/4, float64(r.Intn(20)-10)/4, float64(r.Intn(8)+1)/8
			} else {
				s, l, d = float64(r.Intn(30)-10), float64(r.Intn(30)-10), float64(r.Intn(4)+1)
			}
			if dt == tensor.Uint16 || dt == tensor.Uint32 {
				s, l = float64(r.Intn(20)), float64(r.Intn(20))
			}
			if l < s {
				if dt == tensor.Uint16 || dt == tensor.Uint32 {
					s, l = l, s
				} else {
					d = -d
				}
			}
			in := ins(FromF64(dt, tensor.Shape{}, []float64{s}), FromF64(dt, tensor.Shape{}, []float64{l}), FromF64(dt, tensor.Shape{}, []float64{d}))
			cs = append(cs, Case{Node: NodeFor("Range", nil, in, nil), Inputs: in, NumPy: "np.arange(float(a0), float(a1), float(a2))"})
		}
	}
	for _, v := range [][3]float64{{0, 5, 0}, {5, 0, 1}, {0, 5, -1}} {
		in := ins(FromF64(tensor.Int32, nil, v[:1]), FromF64(tensor.Int32, nil, v[1:2]), FromF64(tensor.Int32, nil, v[2:]))
		bad(&cs, "Range", nil, in, nil, status.InvalidArgument)
	}
	return cs
}

func bitcastCases(r *rand.Rand) []Case {
	var cs []Case
	types := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	for _, from := range types {
		for _, to := range types {
			a, b := int64(from.Size()), int64(to.Size())
			s := tensor.Shape{3, 1 + r.Int63n(3)}
			if a < b {
				s = tensor.Shape{3, b / a}
			}
			x := Rand(r, from, s)
			// The reference is the input's bytes under the new dtype, in
			// the shape TF's rule gives.
			ws := s.Clone()
			switch {
			case a > b:
				ws = append(ws, a/b)
			case a < b:
				ws = ws[:1]
			}
			want := &tensor.Tensor{DType: to, Shape: ws, Buf: append([]byte(nil), x.Buf...)}
			cs = append(cs, Case{Node: NodeFor("Bitcast", Attrs{"type": AType(to)}, ins(x), nil), Inputs: ins(x), Check: func(out []*tensor.Tensor) error {
				if !out[0].Shape.Equal(want.Shape) || string(out[0].Buf) != string(want.Buf) {
					return fmt.Errorf("bitcast %v -> %v: got %v, want %v with the same bytes", from, to, out[0], want)
				}
				return nil
			}})
		}
	}
	bad(&cs, "Bitcast", Attrs{"type": AType(tensor.Int32)}, ins(Rand(r, tensor.Uint8, tensor.Shape{3})), nil, status.InvalidArgument)
	return cs
}
