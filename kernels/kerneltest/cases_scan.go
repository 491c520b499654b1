package kerneltest

import (
	"fmt"
	"math/rand"
	"sort"

	"mstream/status"
	"mstream/tensor"
)

// Cumsum, Cumprod and TopKV2. Scans are checked against NumPy's cumsum and
// cumprod with exclusive/reverse expressed by flipping and shifting;
// TopKV2 against a stable sort in Go (larger value first, then lower
// index), which is the order TF's CPU kernel gives.

func init() {
	for _, op := range []string{"Cumsum", "Cumprod"} {
		prod := op == "Cumprod"
		op := op
		Add(op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range AllNumericTypes {
				for _, s := range []tensor.Shape{{5}, {3, 4}, {2, 0, 3}, {2, 3, 4}, {1}, {40, 3}} {
					for _, ex := range []bool{false, true} {
						for _, rev := range []bool{false, true} {
							ax := r.Intn(2*len(s)) - len(s)
							lo, hi := -3.0, 3.0
							if prod {
								lo, hi = -1.5, 1.5 // keep products in range
								if dt.IsInteger() {
									lo, hi = -1, 2
								}
							}
							x := RandRange(r, dt, s, lo, hi)
							at := IntScalar(pick(r, indexTypes), int64(ax))
							want := refScan(F64s(x), s, ax, prod, ex, rev)
							cs = append(cs, Case{Name: fmt.Sprintf("%s %v %v axis=%d exclusive=%v reverse=%v", op, dt, s, ax, ex, rev),
								Node: NodeFor(op, Attrs{"exclusive": ABool(ex), "reverse": ABool(rev)}, ins(x, at), nil), Inputs: ins(x, at),
								Want: ins(FromF64(dt, s, want)), Tol: 4 * Tol(dt)})
						}
					}
				}
			}
			x := Rand(r, tensor.Float, tensor.Shape{2, 3})
			bad(&cs, op, nil, ins(x, IntScalar(tensor.Int32, 2)), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(x, IntVec(tensor.Int32, 0)), nil, status.InvalidArgument)
			bad(&cs, op, nil, ins(tensor.ScalarF32(1), IntScalar(tensor.Int32, 0)), nil, status.InvalidArgument)
			return cs
		})
	}
	Add("TopKV2", topKCases)
}

// refScan is the running sum or product along axis, in float64: element
// i of a line is the combination of elements [0, i] (exclusive: [0, i)),
// counted from the end when reversed.
func refScan(x []float64, s tensor.Shape, axis int, prod, exclusive, reverse bool) []float64 {
	if axis < 0 {
		axis += len(s)
	}
	outer, inner := 1, 1
	for _, d := range s[:axis] {
		outer *= int(d)
	}
	for _, d := range s[axis+1:] {
		inner *= int(d)
	}
	n := int(s[axis])
	out := make([]float64, len(x))
	for p := 0; p < outer; p++ {
		for q := 0; q < inner; q++ {
			at := func(i int) int { return (p*n+i)*inner + q }
			for i := 0; i < n; i++ {
				acc := 0.0
				if prod {
					acc = 1
				}
				for j := 0; j < n; j++ {
					in := j <= i
					if reverse {
						in = j >= i
					}
					if exclusive && j == i {
						in = false
					}
					if in {
						if prod {
							acc *= x[at(j)]
						} else {
							acc += x[at(j)]
						}
					}
				}
				out[at(i)] = acc
			}
		}
	}
	return out
}

func topKCases(r *rand.Rand) []Case {
	var cs []Case
	for _, dt := range AllNumericTypes {
		for _, s := range []tensor.Shape{{7}, {3, 10}, {2, 2, 50}, {4, 0}, {1}, {3, 200}} {
			n := int(s[len(s)-1])
			for _, k := range []int{0, 1, min(3, n), n} {
				if k > n {
					continue
				}
				// Few distinct values, so ties are common.
				x := RandRange(r, dt, s, -4, 4)
				if dt.IsFloat() {
					x = Map(RandRange(r, tensor.Int32, s, -4, 4), dt, func(v float64) float64 { return v / 2 })
				}
				rows := int(x.NumElements()) / max(n, 1)
				if n == 0 {
					rows = 0
				}
				os := s.Clone()
				os[len(os)-1] = int64(k)
				vals, idx := tensor.New(dt, os), tensor.New(pick(r, []tensor.DType{tensor.Int32, tensor.Int64}), os)
				xs := F64s(x)
				for row := 0; row < rows; row++ {
					ord := make([]int, n)
					for i := range ord {
						ord[i] = i
					}
					v := xs[row*n : (row+1)*n]
					sort.SliceStable(ord, func(a, b int) bool { return v[ord[a]] > v[ord[b]] })
					for j := 0; j < k; j++ {
						SetF64(vals, row*k+j, v[ord[j]])
						SetF64(idx, row*k+j, float64(ord[j]))
					}
				}
				kt := IntScalar(tensor.Int32, int64(k))
				cs = append(cs, Case{Node: NodeFor("TopKV2", Attrs{"index_type": AType(idx.DType)}, ins(x, kt), nil), Inputs: ins(x, kt), Want: ins(vals, idx)})
			}
		}
	}
	x := Rand(r, tensor.Float, tensor.Shape{2, 3})
	bad(&cs, "TopKV2", nil, ins(x, IntScalar(tensor.Int32, 4)), nil, status.InvalidArgument)
	bad(&cs, "TopKV2", nil, ins(x, IntScalar(tensor.Int32, -1)), nil, status.InvalidArgument)
	bad(&cs, "TopKV2", nil, ins(x, IntVec(tensor.Int32, 1)), nil, status.InvalidArgument)
	bad(&cs, "TopKV2", nil, ins(tensor.ScalarF32(1), IntScalar(tensor.Int32, 0)), nil, status.InvalidArgument)
	return cs
}
