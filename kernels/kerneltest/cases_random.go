package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Random ops: range and moments within statistical bounds, and TF's seed
// contract checked across consecutive cases of one family. The Runner
// builds each case's kernel afresh, so two cases with the same nonzero
// (seed, seed2) must produce identical outputs, and two with both seeds 0
// must differ. A bound is five standard errors wide, so a correct kernel
// fails one about once in a million runs.

// moments returns the mean and variance of t's values.
func moments(t *tensor.Tensor) (mean, variance float64) {
	v := F64s(t)
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(v))
}

// checkMoments checks the sample mean and variance of n draws of a
// distribution with the given mean, variance and fourth central moment.
func checkMoments(t *tensor.Tensor, mean, variance, m4 float64) error {
	n := float64(t.NumElements())
	m, v := moments(t)
	if se := math.Sqrt(variance / n); math.Abs(m-mean) > 5*se+1e-3*math.Abs(mean) {
		return fmt.Errorf("%v: sample mean %.5f, want %.5f +- %.5f", t, m, mean, 5*se)
	}
	if se := math.Sqrt((m4 - variance*variance) / n); math.Abs(v-variance) > 5*se+2e-3*variance {
		return fmt.Errorf("%v: sample variance %.5f, want %.5f +- %.5f", t, v, variance, 5*se)
	}
	return nil
}

// seedPair returns two cases of node: the second must reproduce (or, when
// differ is set, must not reproduce) the first's output.
func seedPair(mk func() Case, differ bool, check func([]*tensor.Tensor) error) []Case {
	var first *tensor.Tensor
	a, b := mk(), mk()
	a.Check = func(out []*tensor.Tensor) error {
		first = out[0]
		return check(out)
	}
	b.Check = func(out []*tensor.Tensor) error {
		if first == nil {
			return fmt.Errorf("the first case of the pair did not run")
		}
		same := Compare(out[0], first, math.SmallestNonzeroFloat64) == nil
		if same == differ {
			if differ {
				return fmt.Errorf("seed=seed2=0 gave the same %v twice; TF draws fresh seeds", out[0])
			}
			return fmt.Errorf("a fixed (seed, seed2) gave different outputs on two fresh kernels")
		}
		return check(out)
	}
	return []Case{a, b}
}

func init() {
	floats := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	// Truncated at two standard deviations: variance and fourth moment.
	phi2 := math.Exp(-2) / math.Sqrt(2*math.Pi)
	z := math.Erf(2 / math.Sqrt2)
	tVar := 1 - 4*phi2/z
	tM4 := 3*tVar - 2*8*phi2/z // E[x^4] = 3 E[x^2] - 2^3 * 2 phi(2) / Z
	dists := []struct {
		op          string
		lo, hi      float64 // bounds of every value
		mean, v, m4 float64
	}{
		{"RandomUniform", 0, 1, 0.5, 1.0 / 12, 1.0 / 80},
		{"RandomStandardNormal", -10, 10, 0, 1, 3},
		{"TruncatedNormal", -2, 2, 0, tVar, tM4},
	}
	for _, d := range dists {
		d := d
		Add(d.op, func(r *rand.Rand) []Case {
			var cs []Case
			for _, dt := range floats {
				for _, st := range indexTypes {
					shape := []int64{100, 201}
					if dt == tensor.Bfloat16 || dt == tensor.Half {
						shape = []int64{40000} // coarse values: enough draws for the bounds
					}
					check := func(out []*tensor.Tensor) error {
						o := out[0]
						for i, x := range F64s(o) {
							hi := d.hi
							if d.op == "RandomUniform" && x >= hi || x < d.lo || x > hi || math.IsNaN(x) {
								return fmt.Errorf("element %d = %v outside [%v, %v)", i, x, d.lo, d.hi)
							}
						}
						// Half and bfloat16 round the values; allow for it.
						v, m4 := d.v, d.m4
						if dt == tensor.Bfloat16 && d.op == "RandomUniform" {
							// k/128 for k uniform in [0, 128).
							v, m4 = (128*128-1)/12.0/(128*128), 1.0/80
							return checkMoments(o, 127.0/256, v, m4)
						}
						if dt == tensor.Half && d.op == "RandomUniform" {
							return checkMoments(o, 1023.0/2048, (1024*1024-1)/12.0/(1024*1024), 1.0/80)
						}
						return checkMoments(o, d.mean, v, m4)
					}
					seed, seed2 := int64(r.Intn(1000)+1), int64(r.Intn(1000))
					sh := IntVec(st, shape...)
					mk := func(s, s2 int64) func() Case {
						return func() Case {
							return Case{Name: fmt.Sprintf("%s %v seed=%d seed2=%d", d.op, dt, s, s2),
								Node: NodeFor(d.op, Attrs{"dtype": AType(dt), "seed": AInt(s), "seed2": AInt(s2)}, ins(sh), nil), Inputs: ins(sh)}
						}
					}
					cs = append(cs, seedPair(mk(seed, seed2), false, check)...)
					cs = append(cs, seedPair(mk(0, 0), true, check)...)
				}
				// Empty and scalar shapes.
				for _, s := range [][]int64{{}, {0}, {3, 0}} {
					sh := IntVec(tensor.Int32, s...)
					n := NodeFor(d.op, Attrs{"dtype": AType(dt), "seed": AInt(1)}, ins(sh), nil)
					cs = append(cs, Case{Node: n, Inputs: ins(sh), Check: func(out []*tensor.Tensor) error {
						if !out[0].Shape.Equal(tensor.Shape(s)) {
							return fmt.Errorf("shape %v, want %v", out[0].Shape, tensor.Shape(s))
						}
						return nil
					}})
				}
			}
			bad(&cs, d.op, Attrs{"dtype": AType(tensor.Float)}, ins(IntVec(tensor.Int32, 2, -1)), nil, status.InvalidArgument)
			bad(&cs, d.op, Attrs{"dtype": AType(tensor.Float)}, ins(tensor.FromI32(tensor.Shape{1, 2}, []int32{2, 2})), nil, status.InvalidArgument)
			return cs
		})
	}
	Add("RandomUniformInt", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range indexTypes {
			for _, rg := range [][2]int64{{0, 10}, {-5, 5}, {-100, 1000}, {7, 8}} {
				lo, hi := rg[0], rg[1]
				if dt == tensor.Int64 && lo == -100 {
					lo, hi = -1<<40, 1<<40
				}
				sh := IntVec(tensor.Int64, 20000)
				in := ins(sh, IntScalar(dt, lo), IntScalar(dt, hi))
				check := func(out []*tensor.Tensor) error {
					o := out[0]
					counts := map[int64]int{}
					for i, x := range F64s(o) {
						v := int64(x)
						if v < lo || v >= hi {
							return fmt.Errorf("element %d = %d outside [%d, %d)", i, v, lo, hi)
						}
						counts[v]++
					}
					if hi-lo <= 10 && int64(len(counts)) != hi-lo {
						return fmt.Errorf("%d of %d values drawn", len(counts), hi-lo)
					}
					w := float64(hi - lo)
					return checkMoments(o, float64(lo)+(w-1)/2, (w*w-1)/12, (w*w-1)*(3*w*w-7)/240)
				}
				seed := int64(r.Intn(1000) + 1)
				mk := func(s int64) func() Case {
					return func() Case {
						return Case{Name: fmt.Sprintf("RandomUniformInt %v [%d,%d) seed=%d", dt, lo, hi, s),
							Node: NodeFor("RandomUniformInt", Attrs{"seed": AInt(s), "seed2": AInt(3)}, in, nil), Inputs: in}
					}
				}
				cs = append(cs, seedPair(mk(seed), false, check)...)
				if hi-lo > 2 {
					mk0 := func() Case {
						return Case{Node: NodeFor("RandomUniformInt", nil, in, nil), Inputs: in}
					}
					cs = append(cs, seedPair(mk0, true, check)...)
				}
			}
			bad(&cs, "RandomUniformInt", nil, ins(IntVec(tensor.Int32, 3), IntScalar(dt, 5), IntScalar(dt, 5)), nil, status.InvalidArgument)
			bad(&cs, "RandomUniformInt", nil, ins(IntVec(tensor.Int32, 3), IntVec(dt, 0), IntScalar(dt, 5)), nil, status.InvalidArgument)
			// An empty output does not look at the range, as in TF.
			in := ins(IntVec(tensor.Int32, 0), IntScalar(dt, 5), IntScalar(dt, 1))
			cs = append(cs, Case{Node: NodeFor("RandomUniformInt", nil, in, nil), Inputs: in, Want: ins(tensor.New(dt, tensor.Shape{0}))})
		}
		return cs
	})
}
