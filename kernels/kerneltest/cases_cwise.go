package kerneltest

import (
	"math"
	"math/rand"

	"mstream/graph"
	"mstream/status"
	"mstream/tensor"
)

// Dtype sets as TF 2.15 registers them on CPU.
var (
	// SignedInts are the signed integer types.
	SignedInts = []tensor.DType{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64}
	// UnsignedInts are the unsigned integer types.
	UnsignedInts = []tensor.DType{tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	// RealTypes is TF_CALL_REAL_NUMBER_TYPES: floats and every integer.
	RealTypes = dtypes(FloatTypes, SignedInts, UnsignedInts)
	// FloatAndSigned is floats plus the signed integers.
	FloatAndSigned = dtypes(FloatTypes, SignedInts)
)

func dtypes(sets ...[]tensor.DType) []tensor.DType {
	var out []tensor.DType
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// BroadcastPairs are input shape pairs for binary elementwise ops: equal
// shapes, a scalar on either side, size-1 dims on either side, rank
// mismatch both ways, empty results, and a larger row broadcast.
var BroadcastPairs = [][2]tensor.Shape{
	{{}, {}}, {{1}, {1}}, {{7}, {7}}, {{3, 5}, {3, 5}}, {{0}, {0}}, {{257}, {257}},
	{{}, {3, 5}}, {{4, 1, 9}, {}}, {{1}, {7}}, {{7}, {1}}, {{}, {0}},
	{{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}}, {{2, 1, 3}, {1, 5, 1}},
	{{0, 3}, {3}}, {{1}, {0}}, {{2, 0, 3}, {2, 1, 3}}, {{33, 65}, {65}}, {{33, 1}, {33, 65}},
	{{2, 1, 3, 1}, {4, 1, 5}},
}

// IncompatiblePairs cannot broadcast.
var IncompatiblePairs = [][2]tensor.Shape{{{3}, {4}}, {{2, 3}, {3, 2}}, {{5, 2, 3}, {4, 3}}}

// WithSpecials overwrites about one element in eight of a floating tensor
// (at least one when it has four or more) with NaN, +-Inf, +-0 or a large
// value, so every float family also checks IEEE special values. Other
// dtypes are returned unchanged.
func WithSpecials(r *rand.Rand, t *tensor.Tensor) *tensor.Tensor {
	if !t.DType.IsFloat() {
		return t
	}
	n := int(t.NumElements())
	if n < 4 {
		if n > 0 && r.Intn(4) == 0 {
			SetF64(t, r.Intn(n), specials[r.Intn(len(specials))])
		}
		return t
	}
	k := max(1, n/8)
	for i := 0; i < k; i++ {
		SetF64(t, r.Intn(n), specials[r.Intn(len(specials))])
	}
	return t
}

var specials = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 60000, -60000}

// NonZero replaces zeros in t with 1 (divisors of integer division).
func NonZero(t *tensor.Tensor) *tensor.Tensor {
	for i := 0; i < int(t.NumElements()); i++ {
		if t.ElementF64(i) == 0 {
			SetF64(t, i, 1)
		}
	}
	return t
}

// UnarySpec describes a unary elementwise family.
type UnarySpec struct {
	Op    string
	Types []tensor.DType
	// NumPy is the reference over a0 (at the input dtype's precision);
	// Ref, when set instead, is float64 Go math per element.
	NumPy string
	Ref   func(float64) float64
	// Lo, Hi bound random inputs (default -3, 3).
	Lo, Hi float64
	// NoSpecials skips NaN/Inf inputs (for ops where TF leaves them
	// unspecified).
	NoSpecials bool
	Attrs      Attrs
	// Tol maps a dtype to its tolerance (0: the dtype default).
	Tol func(tensor.DType) float64
	// Out is the output dtype when it differs from the input's.
	Out tensor.DType
}

// UnaryFamily draws every dtype over EdgeShapes plus one large input.
func UnaryFamily(s UnarySpec) Gen {
	return func(r *rand.Rand) []Case {
		lo, hi := s.Lo, s.Hi
		if lo == 0 && hi == 0 {
			lo, hi = -3, 3
		}
		var cs []Case
		for _, dt := range Allowed(s.Op, s.Types) {
			shapes := append(append([]tensor.Shape{}, EdgeShapes...), tensor.Shape{3, 1111})
			for _, sh := range shapes {
				a := RandRange(r, dt, sh, lo, hi)
				if !s.NoSpecials {
					WithSpecials(r, a)
				}
				c := Case{Node: NodeFor(s.Op, s.Attrs, []*tensor.Tensor{a}, nil), Inputs: []*tensor.Tensor{a}}
				if s.Tol != nil {
					c.Tol = s.Tol(dt)
				}
				if s.Ref != nil {
					out := dt
					if s.Out != tensor.Invalid {
						out = s.Out
					}
					c.Want = []*tensor.Tensor{Map(a, out, s.Ref)}
				} else {
					c.NumPy = s.NumPy
				}
				cs = append(cs, c)
			}
		}
		return cs
	}
}

// BinarySpec describes a binary elementwise family with broadcasting.
type BinarySpec struct {
	Op    string
	Types []tensor.DType
	// NumPy is the reference over a0, a1 at the inputs' precision.
	NumPy  string
	Lo, Hi float64
	// NonZeroB keeps integer divisors away from zero (the zero case is an
	// error case of its own).
	NonZeroB bool
	// NonNegB keeps integer right operands >= 0 (integer Pow).
	NonNegB    bool
	NoSpecials bool
	Attrs      Attrs
	Tol        func(tensor.DType) float64
}

// BinaryFamily draws every dtype over BroadcastPairs, with IEEE specials
// in float inputs, and the incompatible-shape errors.
func BinaryFamily(s BinarySpec) Gen {
	return func(r *rand.Rand) []Case {
		lo, hi := s.Lo, s.Hi
		if lo == 0 && hi == 0 {
			lo, hi = -3, 3
		}
		var cs []Case
		types := Allowed(s.Op, s.Types)
		if len(types) == 0 {
			return nil // the OpDef allows none of these dtypes
		}
		for _, dt := range types {
			for _, p := range BroadcastPairs {
				a, b := RandRange(r, dt, p[0], lo, hi), RandRange(r, dt, p[1], lo, hi)
				if !s.NoSpecials {
					WithSpecials(r, a)
					WithSpecials(r, b)
				}
				if s.NonZeroB && !dt.IsFloat() {
					NonZero(b)
				}
				if s.NonNegB && !dt.IsFloat() {
					b = Map(b, dt, math.Abs)
				}
				c := Case{Node: NodeFor(s.Op, s.Attrs, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, NumPy: s.NumPy}
				if s.Tol != nil {
					c.Tol = s.Tol(dt)
				}
				cs = append(cs, c)
			}
		}
		dt := types[0]
		for _, p := range IncompatiblePairs {
			a, b := Rand(r, dt, p[0]), Rand(r, dt, p[1])
			cs = append(cs, Case{Node: NodeForUnknown(s.Op, s.Attrs, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Err: status.InvalidArgument})
		}
		return cs
	}
}

func init() {
	addTypes := dtypes(FloatTypes, SignedInts, UnsignedInts)
	Add("Add", BinaryFamily(BinarySpec{Op: "Add", Types: addTypes, NumPy: "a0 + a1"}), stringAdd)
	Add("AddV2", BinaryFamily(BinarySpec{Op: "AddV2", Types: addTypes, NumPy: "a0 + a1"}))
	Add("Sub", BinaryFamily(BinarySpec{Op: "Sub", Types: addTypes, NumPy: "a0 - a1"}))
	Add("Mul", BinaryFamily(BinarySpec{Op: "Mul", Types: addTypes, NumPy: "a0 * a1"}))
	Add("RealDiv", BinaryFamily(BinarySpec{Op: "RealDiv", Types: FloatTypes, NumPy: "a0 / a1"}))
	Add("Maximum", BinaryFamily(BinarySpec{Op: "Maximum", Types: RealTypes, NumPy: "np.maximum(a0, a1)"}))
	Add("Minimum", BinaryFamily(BinarySpec{Op: "Minimum", Types: RealTypes, NumPy: "np.minimum(a0, a1)"}))
}

// stringAdd concatenates strings elementwise with broadcasting, embedded
// NULs kept.
func stringAdd(r *rand.Rand) []Case {
	var cs []Case
	for _, p := range [][2]tensor.Shape{{{}, {}}, {{3}, {3}}, {{}, {4}}, {{2, 1}, {1, 3}}, {{0}, {}}} {
		a, b := Rand(r, tensor.String, p[0]), Rand(r, tensor.String, p[1])
		if len(a.Strs) > 0 {
			a.Strs[0] = append([]byte("x\x00"), a.Strs[0]...)
		}
		out := tensor.New(tensor.String, bcastShape(p[0], p[1]))
		forEachBroadcast(p[0], p[1], func(o, i, j int) { out.Strs[o] = append(append([]byte{}, a.Strs[i]...), b.Strs[j]...) })
		cs = append(cs, Case{Node: NodeFor("Add", nil, []*tensor.Tensor{a, b}, nil), Inputs: []*tensor.Tensor{a, b}, Want: []*tensor.Tensor{out}})
	}
	return cs
}

// bcastShape is NumPy broadcasting of two compatible shapes.
func bcastShape(a, b tensor.Shape) tensor.Shape {
	n := max(len(a), len(b))
	out := make(tensor.Shape, n)
	for i := range out {
		x, y := int64(1), int64(1)
		if k := len(a) - n + i; k >= 0 {
			x = a[k]
		}
		if k := len(b) - n + i; k >= 0 {
			y = b[k]
		}
		out[i] = x
		if x == 1 {
			out[i] = y
		}
	}
	return out
}

// forEachBroadcast calls f with each output flat index and the flat indices of
// a and b it reads: a reference walk by full index arithmetic.
func forEachBroadcast(a, b tensor.Shape, f func(o, i, j int)) {
	out := bcastShape(a, b)
	n := int(out.NumElements())
	idx := make([]int64, len(out))
	for o := 0; o < n; o++ {
		rem := int64(o)
		for d := len(out) - 1; d >= 0; d-- {
			idx[d] = rem % out[d]
			rem /= out[d]
		}
		f(o, bcastIndex(idx, a), bcastIndex(idx, b))
	}
}

// bcastIndex maps an output index to the flat index of a broadcast input.
func bcastIndex(idx []int64, s tensor.Shape) int {
	off := len(idx) - len(s)
	k := int64(0)
	for d, n := range s {
		v := idx[off+d]
		if n == 1 {
			v = 0
		}
		k = k*n + v
	}
	return int(k)
}

// Allowed filters types to those the OpDef of op allows for its type attr
// (T unless given), so a family can name a broad set and stay valid for
// ops whose OpDef is narrower.
func Allowed(op string, types []tensor.DType, attr ...string) []tensor.DType {
	name := "T"
	if len(attr) > 0 {
		name = attr[0]
	}
	def := graph.LookupOpDef(op)
	if def == nil {
		panic("kerneltest: unknown op " + op)
	}
	for _, a := range def.Attr {
		if a.Name != name || a.AllowedValues == nil || a.AllowedValues.GetList() == nil {
			continue
		}
		ok := map[tensor.DType]bool{}
		for _, t := range a.AllowedValues.GetList().Type {
			ok[tensor.DType(t)] = true
		}
		var out []tensor.DType
		for _, t := range types {
			if ok[t] {
				out = append(out, t)
			}
		}
		return out
	}
	return types
}
