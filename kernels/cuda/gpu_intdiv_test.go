package cuda

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"

	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// Integer Div, TruncateDiv, FloorDiv and Pow on the GPU: the CPU's values
// wherever the CPU kernel has one, and TF's GPU values (intdiv.cu) where
// it fails, checked against references written here from TF's rules.

var intDivTypes = []tensor.DType{tensor.Int16, tensor.Int64, tensor.Uint8, tensor.Uint16}

// intVals draws n values of dt: small ones, the dtype's extremes, and,
// when zeros is set, zeros and -1 (for divisors).
func intVals(r *rand.Rand, dt tensor.DType, s tensor.Shape, zeros bool) *tensor.Tensor {
	t := tensor.New(dt, s)
	n := int(s.NumElements())
	pick := func(small, lo, hi int64) int64 {
		switch v := r.Intn(10); {
		case v == 0:
			return lo
		case v == 1:
			return hi
		case v == 2 && zeros:
			return 0
		case v == 3 && zeros && lo < 0:
			return -1
		case v < 6:
			return lo/2 + r.Int63n(hi/2+1) // wide
		}
		return r.Int63n(2*small+1) - small*btoi(lo < 0)
	}
	for i := 0; i < n; i++ {
		switch dt {
		case tensor.Int16:
			t.I16()[i] = int16(pick(20, math.MinInt16, math.MaxInt16))
		case tensor.Int64:
			t.I64()[i] = pick(20, math.MinInt64, math.MaxInt64)
		case tensor.Uint8:
			t.U8()[i] = uint8(pick(20, 0, math.MaxUint8))
		case tensor.Uint16:
			t.U16()[i] = uint16(pick(20, 0, math.MaxUint16))
		}
	}
	if !zeros {
		// Divisors without zeros: the CPU's error would end the case.
		for i := 0; i < n; i++ {
			if t.ElementF64(i) == 0 {
				switch dt {
				case tensor.Int16:
					t.I16()[i] = 7
				case tensor.Int64:
					t.I64()[i] = -3
				case tensor.Uint8:
					t.U8()[i] = 3
				case tensor.Uint16:
					t.U16()[i] = 5
				}
			}
		}
	}
	return t
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var intShapes = [][2]tensor.Shape{{{3, 5}, {3, 5}}, {{4, 7}, {7}}, {{}, {6}}, {{2, 1, 3}, {1, 4, 1}}, {{1000}, {1000}}, {{0, 3}, {3}}}

// TestIntDiv compares with the CPU on nonzero divisors (the extremes
// included: INT_MIN / -1 wraps on both).
func TestIntDiv(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Div", "TruncateDiv", "FloorDiv"} {
		for _, dt := range intDivTypes {
			for _, p := range intShapes {
				a, b := intVals(r, dt, p[0], true), intVals(r, dt, p[1], false)
				check(t, node(op, nil, a, b), []*tensor.Tensor{a, b}, math.SmallestNonzeroFloat64)
			}
		}
	}
	for _, p := range intShapes {
		a := intVals(r, tensor.Int64, p[0], true)
		b := kerneltest.RandRange(r, tensor.Int64, p[1], 0, 70) // exponents >= 0 (the CPU fails below)
		check(t, node("Pow", nil, a, b), []*tensor.Tensor{a, b}, math.SmallestNonzeroFloat64)
	}
	a, b := tensor.New(tensor.Int64, tensor.Shape{3}), tensor.New(tensor.Int64, tensor.Shape{4})
	check(t, kerneltest.NodeForUnknown("FloorDiv", nil, []*tensor.Tensor{a, b}, nil), []*tensor.Tensor{a, b}, 0)
}

// TestIntDivTFGPU checks zero divisors and negative exponents, where the
// CPU kernel fails, against TF's GPU rules.
func TestIntDivTFGPU(t *testing.T) {
	r := newRand(t)
	for _, op := range []string{"Div", "TruncateDiv", "FloorDiv", "Pow"} {
		types := intDivTypes
		if op == "Pow" {
			types = []tensor.DType{tensor.Int64}
		}
		for _, dt := range types {
			for _, p := range intShapes {
				a, b := intVals(r, dt, p[0], true), intVals(r, dt, p[1], true)
				if op == "Pow" {
					b = kerneltest.RandRange(r, tensor.Int64, p[1], -80, 80)
				}
				n := node(op, nil, a, b)
				run, err := persistentGPU(t, n)
				if err != nil {
					t.Fatalf("%s %v: %v", op, dt, err)
				}
				if run == nil {
					return // dry run: no values
				}
				got, err := run([]*tensor.Tensor{a, b})
				if err != nil {
					t.Fatalf("%s %v: %v", op, dt, err)
				}
				want := tfGPUIntBin(op, a, b)
				compare(t, fmt.Sprintf("%s(%v, %v) TF GPU rules", op, a, b), got, []*tensor.Tensor{want}, math.SmallestNonzeroFloat64)
			}
		}
	}
}

// tfGPUIntBin is TF's GPU result of op over the broadcast of a and b.
func tfGPUIntBin(op string, a, b *tensor.Tensor) *tensor.Tensor {
	out, sa, sb, _ := bcastShapes(a.Shape, b.Shape)
	o := tensor.New(a.DType, out)
	n := int(out.NumElements())
	idx := make([]int64, len(out))
	for i := 0; i < n; i++ {
		var ia, ib int64
		for d := range out {
			ia += idx[d] * sa[d]
			ib += idx[d] * sb[d]
		}
		switch a.DType {
		case tensor.Int16:
			o.I16()[i] = refSigned(op, a.I16()[ia], b.I16()[ib])
		case tensor.Int64:
			if op == "Pow" {
				o.I64()[i] = refPow(a.I64()[ia], b.I64()[ib])
			} else {
				o.I64()[i] = refSigned(op, a.I64()[ia], b.I64()[ib])
			}
		case tensor.Uint8:
			o.U8()[i] = refUnsigned(a.U8()[ia], b.U8()[ib])
		case tensor.Uint16:
			o.U16()[i] = refUnsigned(a.U16()[ia], b.U16()[ib])
		}
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < out[d] {
				break
			}
			idx[d] = 0
		}
	}
	return o
}

// refSigned: MHLO's total division (x/0 = -1; Go's x / -1 wraps INT_MIN
// as MHLO's does), then the floor correction.
func refSigned[T int16 | int64](op string, x, y T) T {
	q := T(-1)
	if y != 0 {
		q = x / y
	}
	if op == "FloorDiv" && q*y != x && (x < 0) != (y < 0) {
		q--
	}
	return q
}

func refUnsigned[T uint8 | uint16](x, y T) T {
	if y == 0 {
		return ^T(0)
	}
	return x / y
}

// refPow: x**y mod 2**64 for y >= 0 (big integers); TF's rule below 0.
func refPow(x, y int64) int64 {
	if y < 0 {
		switch {
		case x == 1:
			return 1
		case x == -1 && y%2 != 0:
			return -1
		case x == -1:
			return 1
		}
		return 0
	}
	m := new(big.Int).Lsh(big.NewInt(1), 64)
	v := new(big.Int).Exp(big.NewInt(x), big.NewInt(y), m)
	if v.Sign() < 0 {
		v.Add(v, m)
	}
	return int64(v.Uint64())
}
