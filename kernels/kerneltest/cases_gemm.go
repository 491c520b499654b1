package kerneltest

import (
	"fmt"
	"math"
	"math/rand"

	"mstream/tensor"
)

// GEMMs at the shapes of a GPU's small-batch GEMM kernel (kernels/cuda's
// gemm.go takes it for up to 16 rows in the left operand, or at every
// size with MSTREAM_GPU_SMALL_GEMM=1): m 1, 7, 16, 33 and 64 rows, so
// both sides of the bound run; k and n odd, and k past the kernel's
// shared-memory tile (1024 floats at 16 rows); every transpose and every
// fused activation. References are float64 loops (refMatMul, refAct).

func init() {
	Add("MatMul", smallGEMMCases(false))
	Add("_FusedMatMul", smallGEMMCases(true))
	Add("BatchMatMulV2", smallBatchGEMMCases)
	Add("BatchMatMulV2", smallNTCases)
}

var smallGEMMRows = []int{1, 7, 16, 33, 64}

// smallGEMMDims are (k, n) pairs: odd and small, odd with k past a tile,
// DLRM's layer sizes, and columns enough for the CPU's split into blocks
// of 256 (blas.SgemmOn at fewer than 128 rows), a partial block last.
var smallGEMMDims = [][2]int{{67, 131}, {1031, 65}, {512, 256}, {257, 600}}

func smallGEMMCases(fused bool) Gen {
	return func(r *rand.Rand) []Case {
		var cs []Case
		acts := []string{""}
		if fused {
			acts = append(fusedActList, "GeluExact", "GeluApproximate")
		}
		types := []tensor.DType{tensor.Float, tensor.Half, tensor.Bfloat16}
		i, shape := 0, 0
		for _, m := range smallGEMMRows {
			for _, d := range smallGEMMDims {
				shape++
				// Two activations per shape in turn: each of the nine
				// meets several shapes.
				shapeActs := []string{""}
				if fused {
					shapeActs = []string{acts[(2*shape)%len(acts)], acts[(2*shape+1)%len(acts)]}
				}
				for _, act := range shapeActs {
					k, n := d[0], d[1]
					dt := pick(r, types)
					ta, tb := i%2 == 1, (i/2)%2 == 1 // the four in turn
					i++
					a, b, want := randGEMM(r, dt, ta, tb, m, n, k)
					attrs := Attrs{"transpose_a": ABool(ta), "transpose_b": ABool(tb)}
					in := ins(a, b)
					op := "MatMul"
					var extra map[int]int
					if fused {
						op, extra = "_FusedMatMul", map[int]int{2: 1}
						bias := RandRange(r, dt, tensor.Shape{int64(n)}, -1, 1)
						alpha := float32(0.1 + r.Float64())
						bv := F64s(bias)
						for j := range want {
							want[j] = refAct(act, float64(alpha), want[j]+bv[j%n])
						}
						attrs["fused_ops"], attrs["leakyrelu_alpha"] = fusedOps("BiasAdd", act), AFloat(alpha)
						in = ins(a, b, bias)
					}
					cs = append(cs, Case{Name: fmt.Sprintf("%s %v m%d k%d n%d ta=%v tb=%v %s (small-batch GEMM shapes)", op, dt, m, k, n, ta, tb, act),
						Node: NodeFor(op, attrs, in, extra), Inputs: in,
						Want: ins(FromF64(dt, tensor.Shape{int64(m), int64(n)}, want)), Tol: convTol(dt, k+1),
						Scale: dotScale(dt, ta, tb, m, n, k, F64s(a), F64s(b))})
				}
			}
		}
		return cs
	}
}

// smallBatchGEMMCases are batched products of few rows: a full batch on
// both sides, and the weights broadcast over the batch.
func smallBatchGEMMCases(r *rand.Rand) []Case {
	var cs []Case
	for _, c := range []struct {
		b, m, k, n int
		bcast      bool
		dt         tensor.DType
	}{{3, 1, 67, 129, false, tensor.Float}, {4, 7, 300, 33, true, tensor.Float}, {2, 16, 64, 65, true, tensor.Half}, {2, 33, 40, 17, false, tensor.Float}} {
		as, bs := tensor.Shape{int64(c.b), int64(c.m), int64(c.k)}, tensor.Shape{int64(c.b), int64(c.k), int64(c.n)}
		if c.bcast {
			bs = bs[1:]
		}
		a, b := RandRange(r, c.dt, as, -1, 1), RandRange(r, c.dt, bs, -1, 1)
		av, bvs := F64s(a), F64s(b)
		var want []float64
		for i := 0; i < c.b; i++ {
			bi := bvs
			if !c.bcast {
				bi = bvs[i*c.k*c.n : (i+1)*c.k*c.n]
			}
			want = append(want, refMatMul(false, false, c.m, c.n, c.k, av[i*c.m*c.k:(i+1)*c.m*c.k], bi)...)
		}
		cs = append(cs, Case{Name: fmt.Sprintf("BatchMatMulV2 %v %v x %v (small-batch GEMM shapes)", c.dt, as, bs),
			Node: NodeFor("BatchMatMulV2", nil, ins(a, b), nil), Inputs: ins(a, b),
			Want: ins(FromF64(c.dt, tensor.Shape{int64(c.b), int64(c.m), int64(c.n)}, want)), Tol: convTol(c.dt, c.k+1)})
	}
	return cs
}

// smallNTCases are products A B^T of few rows and columns (adj_y), which
// the CPU takes as dot products of rows: DLRM's interaction X X^T (the
// same tensor on both sides, whose lower triangle is computed and copied
// up), a batch of one (the lone product's path), k around the 16-lane
// chunks, and B another tensor.
func smallNTCases(r *rand.Rand) []Case {
	var cs []Case
	for _, c := range []struct {
		b, m, n, k int
		same       bool
	}{{3, 27, 27, 64, true}, {1, 27, 27, 64, true}, {2, 5, 5, 17, true}, {2, 32, 32, 16, true}, {2, 9, 9, 3, true},
		{2, 7, 6, 20, false}, {1, 4, 31, 33, false}, {2, 33, 33, 64, true}} {
		as, bs := tensor.Shape{int64(c.b), int64(c.m), int64(c.k)}, tensor.Shape{int64(c.b), int64(c.n), int64(c.k)}
		a := RandRange(r, tensor.Float, as, -1, 1)
		b := a
		if !c.same {
			b = RandRange(r, tensor.Float, bs, -1, 1)
		}
		av, bv := F64s(a), F64s(b)
		var want []float64
		for i := 0; i < c.b; i++ {
			want = append(want, refMatMul(false, true, c.m, c.n, c.k, av[i*c.m*c.k:(i+1)*c.m*c.k], bv[i*c.n*c.k:(i+1)*c.n*c.k])...)
		}
		cs = append(cs, Case{Name: fmt.Sprintf("BatchMatMulV2 %v x %v adj_y, same tensor %v (small A B^T)", as, bs, c.same),
			Node: NodeFor("BatchMatMulV2", Attrs{"adj_y": ABool(true)}, ins(a, b), nil), Inputs: ins(a, b),
			Want: ins(FromF64(tensor.Float, tensor.Shape{int64(c.b), int64(c.m), int64(c.n)}, want)), Tol: convTol(tensor.Float, c.k+1)})
	}
	return cs
}

// dotScale is, for half and bfloat16 products, each output element's
// rounding scale sqrt(sum over p of (a_ip*b_pj)^2): a library may sum in
// pieces stored in the dtype (cuBLAS's split-k does), so the error grows
// with the terms' magnitude and the square root of their count, not with
// the result, which cancellation can leave near 0 (the H100's cuBLAS gave
// -0.539 for -0.598 at k = 1031 in bfloat16). nil for wider dtypes.
func dotScale(dt tensor.DType, ta, tb bool, m, n, k int, a, b []float64) []float64 {
	if dt != tensor.Half && dt != tensor.Bfloat16 {
		return nil
	}
	sq := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * x
		}
		return out
	}
	s := refMatMul(ta, tb, m, n, k, sq(a), sq(b))
	for i, x := range s {
		s[i] = math.Sqrt(x)
	}
	return s
}
