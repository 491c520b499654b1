package kerneltest

import (
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Reductions are checked against a walker that visits every input element
// by full index arithmetic and folds it into its output slot: float64 for
// floats, int64 (wrapped to the dtype at the end) for integers.

type reduceCase struct {
	shape tensor.Shape
	axes  []int64
}

var reduceShapes = []reduceCase{
	{tensor.Shape{}, nil}, {tensor.Shape{5}, []int64{0}}, {tensor.Shape{5}, []int64{-1}}, {tensor.Shape{5}, nil},
	{tensor.Shape{3, 4}, []int64{0}}, {tensor.Shape{3, 4}, []int64{1}}, {tensor.Shape{3, 4}, []int64{0, 1}}, {tensor.Shape{3, 4}, []int64{-1, 0}},
	{tensor.Shape{2, 3, 4}, []int64{1}}, {tensor.Shape{2, 3, 4}, []int64{0, 2}}, {tensor.Shape{2, 3, 4}, []int64{-1, -2}}, {tensor.Shape{2, 3, 4}, []int64{0, 1, 2}},
	{tensor.Shape{2, 0, 3}, []int64{1}}, {tensor.Shape{2, 0, 3}, []int64{0}}, {tensor.Shape{2, 0, 3}, []int64{0, 2}},
	{tensor.Shape{4, 1, 9}, []int64{1}}, {tensor.Shape{4, 1, 9}, []int64{0, 2}},
	{tensor.Shape{64, 257}, []int64{1}}, {tensor.Shape{64, 257}, []int64{0}},
	{tensor.Shape{2, 5, 6, 3}, []int64{1, 2}}, {tensor.Shape{2, 5, 6, 3}, []int64{0, 2}}, {tensor.Shape{2, 5, 6, 3}, []int64{3}},
	{tensor.Shape{3000}, []int64{0}}, {tensor.Shape{2, 1, 3, 1, 2}, []int64{0, 3, 4}}, {tensor.Shape{140000}, []int64{0}},
}

// ReduceSpec describes a reduction family.
type ReduceSpec struct {
	Op    string
	Types []tensor.DType
	// Lo, Hi bound random inputs (default -3, 3).
	Lo, Hi float64
	// Fold reduces the values of one output slot (floats as float64,
	// integers as int64 in fi).
	Fold  func(v []float64) float64
	FoldI func(v []int64, dt tensor.DType) int64
	Tol   float64
}

// ReduceFamily covers every dtype, shape and axis set above, keep_dims
// both ways, int32 and int64 axes (and a scalar axis), IEEE specials in
// floats, and the out-of-range and duplicate axis errors.
func ReduceFamily(s ReduceSpec) Gen {
	return func(r *rand.Rand) []Case {
		lo, hi := s.Lo, s.Hi
		if lo == 0 && hi == 0 {
			lo, hi = -3, 3
		}
		var cs []Case
		for _, dt := range Allowed(s.Op, s.Types) {
			for _, rc := range reduceShapes {
				for _, keep := range []bool{false, true} {
					a := RandRange(r, dt, rc.shape, lo, hi)
					if dt.IsInteger() {
						a = Rand(r, dt, rc.shape) // products wrap, as they do in TF
					}
					WithSpecials(r, a)
					it := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
					ax := intsOf(it, rc.axes)
					if len(rc.axes) == 1 && r.Intn(2) == 0 {
						ax = ax.Reshaped(tensor.Shape{})
					}
					want := reduceRef(a, rc.axes, keep, s)
					cs = append(cs, Case{Node: NodeFor(s.Op, Attrs{"keep_dims": ABool(keep), "Tidx": AType(it)}, []*tensor.Tensor{a, ax}, nil),
						Inputs: []*tensor.Tensor{a, ax}, Want: []*tensor.Tensor{want}, Tol: s.tol(dt)})
				}
			}
		}
		dt := Allowed(s.Op, s.Types)[0]
		for _, bad := range [][]int64{{2}, {-3}, {0, 0}, {1, -1}} {
			a, ax := Rand(r, dt, tensor.Shape{2, 3}), intsOf(tensor.Int32, bad)
			cs = append(cs, Case{Node: NodeForUnknown(s.Op, nil, []*tensor.Tensor{a, ax}, nil), Inputs: []*tensor.Tensor{a, ax}, Err: status.InvalidArgument})
		}
		return cs
	}
}

// reduceRef folds every output slot's values with the spec's fold.
func reduceRef(a *tensor.Tensor, axes []int64, keep bool, s ReduceSpec) *tensor.Tensor {
	r := len(a.Shape)
	red := make([]bool, r)
	for _, x := range axes {
		if x < 0 {
			x += int64(r)
		}
		red[x] = true
	}
	var out tensor.Shape
	var kept []int
	for i, d := range a.Shape {
		switch {
		case !red[i]:
			out = append(out, d)
			kept = append(kept, i)
		case keep:
			out = append(out, 1)
		}
	}
	nOut := int(out.NumElements())
	groups := make([][]int, nOut)
	idx := make([]int64, r)
	for i := 0; i < int(a.NumElements()); i++ {
		rem := int64(i)
		for d := r - 1; d >= 0; d-- {
			idx[d] = rem % a.Shape[d]
			rem /= a.Shape[d]
		}
		o := int64(0)
		for _, d := range kept {
			o = o*a.Shape[d] + idx[d]
		}
		groups[o] = append(groups[o], i)
	}
	want := tensor.New(s.outType(a.DType), out)
	for o, g := range groups {
		if a.DType.IsFloat() || a.DType == tensor.Bool {
			v := make([]float64, len(g))
			for k, i := range g {
				v[k] = a.ElementF64(i)
			}
			SetF64(want, o, s.Fold(v))
			continue
		}
		v := make([]int64, len(g))
		for k, i := range g {
			v[k] = elementI64(a, i)
		}
		x := s.FoldI(v, a.DType)
		wrapInto(want, o, x)
	}
	return want
}

func (s ReduceSpec) outType(dt tensor.DType) tensor.DType { return dt }

// tol loosens float tolerances for sums (the kernel may add in another
// order); integers stay exact.
func (s ReduceSpec) tol(dt tensor.DType) float64 {
	if !dt.IsFloat() {
		return 0
	}
	return max(s.Tol, Tol(dt))
}

// elementI64 reads an integer element exactly (uint64 bit pattern kept).
func elementI64(t *tensor.Tensor, i int) int64 {
	switch t.DType {
	case tensor.Int32:
		return int64(t.I32()[i])
	case tensor.Int64:
		return t.I64()[i]
	case tensor.Int16:
		return int64(t.I16()[i])
	case tensor.Int8:
		return int64(t.I8()[i])
	case tensor.Uint8:
		return int64(t.U8()[i])
	case tensor.Uint16:
		return int64(t.U16()[i])
	case tensor.Uint32:
		return int64(t.U32()[i])
	case tensor.Uint64:
		return int64(t.U64()[i])
	}
	panic("kerneltest: elementI64 on " + t.DType.String())
}

func wrapInto(t *tensor.Tensor, i int, x int64) {
	w := wrapInts([]int64{x}, t.DType, tensor.Shape{1})
	copy(t.Buf[i*t.DType.Size():], w.Buf)
}

func isUnsigned(dt tensor.DType) bool { return dt.IsInteger() && !signed(dt) }

func init() {
	sum := func(v []float64) float64 {
		var s float64
		for _, x := range v {
			s += x
		}
		return s
	}
	sumI := func(v []int64, _ tensor.DType) int64 {
		var s int64
		for _, x := range v {
			s += x
		}
		return s
	}
	Add("Sum", ReduceFamily(ReduceSpec{Op: "Sum", Types: RealTypes, Fold: sum, FoldI: sumI, Tol: 1e-4}))
	Add("Mean", ReduceFamily(ReduceSpec{Op: "Mean", Types: RealTypes, Fold: func(v []float64) float64 {
		return sum(v) / float64(len(v)) // 0/0 is NaN, TF's identity for an empty float mean
	}, FoldI: func(v []int64, dt tensor.DType) int64 {
		// TF sums narrow integers in 64 bits, divides (truncating) and
		// casts back; int64 and uint64 sum in their own type. An empty
		// mean is 0, the reducer's identity.
		if len(v) == 0 {
			return 0
		}
		s := sumI(v, dt)
		if isUnsigned(dt) {
			return int64(uint64(s) / uint64(len(v)))
		}
		return s / int64(len(v))
	}, Tol: 1e-4}))
	Add("Prod", ReduceFamily(ReduceSpec{Op: "Prod", Types: RealTypes, Lo: -1.6, Hi: 1.6, Fold: func(v []float64) float64 {
		p := 1.0
		for _, x := range v {
			p *= x
		}
		return p
	}, FoldI: func(v []int64, _ tensor.DType) int64 {
		p := int64(1)
		for _, x := range v {
			p *= x
		}
		return p
	}, Tol: 1e-4}))
	Add("Max", ReduceFamily(ReduceSpec{Op: "Max", Types: RealTypes, Fold: func(v []float64) float64 {
		m := math.Inf(-1)
		for _, x := range v {
			if x != x {
				return x
			}
			m = math.Max(m, x)
		}
		return m
	}, FoldI: func(v []int64, dt tensor.DType) int64 {
		m := lowest(dt)
		for _, x := range v {
			if lessI(m, x, dt) {
				m = x
			}
		}
		return m
	}}))
	Add("Min", ReduceFamily(ReduceSpec{Op: "Min", Types: RealTypes, Fold: func(v []float64) float64 {
		m := math.Inf(1)
		for _, x := range v {
			if x != x {
				return x
			}
			m = math.Min(m, x)
		}
		return m
	}, FoldI: func(v []int64, dt tensor.DType) int64 {
		m := highest(dt)
		for _, x := range v {
			if lessI(x, m, dt) {
				m = x
			}
		}
		return m
	}}))
	all := func(v []float64) float64 {
		for _, x := range v {
			if x == 0 {
				return 0
			}
		}
		return 1
	}
	anyf := func(v []float64) float64 {
		for _, x := range v {
			if x != 0 {
				return 1
			}
		}
		return 0
	}
	Add("All", ReduceFamily(ReduceSpec{Op: "All", Types: []tensor.DType{tensor.Bool}, Fold: all}))
	Add("Any", ReduceFamily(ReduceSpec{Op: "Any", Types: []tensor.DType{tensor.Bool}, Fold: anyf}))
	Add("ArgMax", argFamily("ArgMax"))
	Add("ArgMin", argFamily("ArgMin"))
}

// lessI compares integer values stored as int64 (uint64 by bit pattern).
func lessI(a, b int64, dt tensor.DType) bool {
	if dt == tensor.Uint64 {
		return uint64(a) < uint64(b)
	}
	return a < b
}

func lowest(dt tensor.DType) int64 {
	switch dt {
	case tensor.Int8:
		return math.MinInt8
	case tensor.Int16:
		return math.MinInt16
	case tensor.Int32:
		return math.MinInt32
	case tensor.Int64:
		return math.MinInt64
	}
	return 0
}

func highest(dt tensor.DType) int64 {
	switch dt {
	case tensor.Int8:
		return math.MaxInt8
	case tensor.Int16:
		return math.MaxInt16
	case tensor.Int32:
		return math.MaxInt32
	case tensor.Int64:
		return math.MaxInt64
	case tensor.Uint8:
		return math.MaxUint8
	case tensor.Uint16:
		return math.MaxUint16
	case tensor.Uint32:
		return math.MaxUint32
	}
	return -1 // uint64 max as a bit pattern
}

// argFamily checks ArgMax/ArgMin over one axis with every output type the
// op allows. Ties take the first index (integer inputs from a narrow range
// tie often). NaN inputs are not drawn: TF leaves the
// index of a NaN unspecified (it depends on Eigen's evaluation order).
func argFamily(op string) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		shapes := []reduceCase{
			{tensor.Shape{5}, []int64{0}}, {tensor.Shape{3, 4}, []int64{1}}, {tensor.Shape{3, 4}, []int64{-2}},
			{tensor.Shape{2, 3, 4}, []int64{1}}, {tensor.Shape{0, 3}, []int64{1}}, {tensor.Shape{4, 1, 9}, []int64{2}},
			{tensor.Shape{64, 257}, []int64{1}}, {tensor.Shape{64, 257}, []int64{0}}, {tensor.Shape{1}, []int64{0}},
		}
		types := Allowed(op, dtypes(RealTypes, []tensor.DType{tensor.Bool}))
		outs := Allowed(op, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Int16, tensor.Uint16}, "output_type")
		for _, dt := range types {
			for _, sc := range shapes {
				a := RandRange(r, dt, sc.shape, -4, 4)
				ot := outs[r.Intn(len(outs))]
				it := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
				ax := intsOf(it, sc.axes).Reshaped(tensor.Shape{})
				want := argRef(a, int(sc.axes[0]), op == "ArgMax", ot)
				cs = append(cs, Case{Node: NodeFor(op, Attrs{"output_type": AType(ot), "Tidx": AType(it)}, []*tensor.Tensor{a, ax}, nil),
					Inputs: []*tensor.Tensor{a, ax}, Want: []*tensor.Tensor{want}})
			}
		}
		// An empty reduced axis, an axis out of range, a non-scalar axis.
		bad := []struct {
			s  tensor.Shape
			ax *tensor.Tensor
		}{
			{tensor.Shape{3, 0}, intsOf(tensor.Int32, []int64{1}).Reshaped(tensor.Shape{})},
			{tensor.Shape{3, 4}, intsOf(tensor.Int32, []int64{2}).Reshaped(tensor.Shape{})},
			{tensor.Shape{3, 4}, intsOf(tensor.Int64, []int64{-3}).Reshaped(tensor.Shape{})},
			{tensor.Shape{3, 4}, intsOf(tensor.Int32, []int64{0, 1})},
			{tensor.Shape{}, intsOf(tensor.Int32, []int64{0}).Reshaped(tensor.Shape{})},
		}
		for _, b := range bad {
			a := Rand(r, tensor.Float, b.s)
			cs = append(cs, Case{Node: NodeForUnknown(op, Attrs{"Tidx": AType(b.ax.DType)}, []*tensor.Tensor{a, b.ax}, nil), Inputs: []*tensor.Tensor{a, b.ax}, Err: status.InvalidArgument})
		}
		return cs
	}
}

func argRef(a *tensor.Tensor, axis int, isMax bool, ot tensor.DType) *tensor.Tensor {
	r := len(a.Shape)
	if axis < 0 {
		axis += r
	}
	var out tensor.Shape
	for i, d := range a.Shape {
		if i != axis {
			out = append(out, d)
		}
	}
	outer, n, inner := int64(1), a.Shape[axis], int64(1)
	for i := 0; i < axis; i++ {
		outer *= a.Shape[i]
	}
	for i := axis + 1; i < r; i++ {
		inner *= a.Shape[i]
	}
	want := tensor.New(ot, out)
	for o := int64(0); o < outer; o++ {
		for j := int64(0); j < inner; j++ {
			best, bi := 0.0, int64(0)
			for k := int64(0); k < n; k++ {
				v := a.ElementF64(int((o*n+k)*inner + j))
				if k == 0 || (isMax && v > best) || (!isMax && v < best) {
					best, bi = v, k
				}
			}
			SetF64(want, int(o*inner+j), float64(bi))
		}
	}
	return want
}
