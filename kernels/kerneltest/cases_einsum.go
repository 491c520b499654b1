package kerneltest

import (
	"fmt"
	"math/rand"
	"strings"

	"mstream/status"
	"mstream/tensor"
)

// Einsum on the equations frozen graphs carry (matmul, batch matmul,
// attention, transposes, outer products, reductions, diagonals, ellipsis
// broadcasting, implicit outputs) against np.einsum in float64.

var einsumEqs = []string{
	"ij,jk->ik", "bij,bjk->bik", "bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "BTNH,BFNH->BNFT", "abc,cd->abd",
	"abcd,cde->abe", "ij->ji", "i,j->ij", "ij->i", "ij->", "ii->i", "ii", "ij,ij->ij", "ij,ij->", "bi,bi->b",
	"ijk", "ij,jk", "i,i", "ijk->kji", "...ij,...jk->...ik", "...ij,jk->...ik", "b...,b...->b...", "ij,kj->ik",
	// Keras MultiHeadAttention's, which the strided GEMM runs in place, and a
	// product the output holds transposed.
	"abc,cde->abde", "aecd,abcd->acbe", "acbe,aecd->abcd", "ij,jk->ki", "bij,bkj->bki",
}

func init() {
	Add("Einsum", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64} {
			for _, eq := range einsumEqs {
				size := map[rune]int64{}
				for _, c := range eq {
					if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
						if _, ok := size[c]; !ok {
							size[c] = int64(1 + r.Intn(4))
							if r.Intn(12) == 0 {
								size[c] = 0
							}
						}
					}
				}
				ell := tensor.Shape{int64(2 + r.Intn(2)), int64(1 + r.Intn(3))}
				lhs, _, _ := strings.Cut(eq, "->")
				var in []*tensor.Tensor
				for i, sub := range strings.Split(lhs, ",") {
					var s tensor.Shape
					for j := 0; j < len(sub); j++ {
						if sub[j] == '.' {
							e := ell
							if i == 1 && r.Intn(2) == 0 {
								e = tensor.Shape{1, ell[1]} // broadcast against the first
							}
							s = append(s, e...)
							j += 2
							continue
						}
						s = append(s, size[rune(sub[j])])
					}
					lo, hi := -1.0, 1.0
					if dt.IsInteger() {
						lo, hi = -3, 3
					}
					in = append(in, RandRange(r, dt, s, lo, hi))
				}
				args := "a0.astype(np.float64)"
				if len(in) == 2 {
					args += ", a1.astype(np.float64)"
				}
				cs = append(cs, Case{Name: fmt.Sprintf("Einsum %v %q %v", dt, eq, in), Node: NodeFor("Einsum", Attrs{"equation": AStr(eq)}, in, map[int]int{0: len(in)}),
					Inputs: in, NumPy: fmt.Sprintf("np.einsum(%q, %s)", eq, args), Tol: 4 * Tol(dt)})
			}
		}
		a, b := Rand(r, tensor.Float, tensor.Shape{2, 3}), Rand(r, tensor.Float, tensor.Shape{4, 5})
		for _, c := range []struct {
			eq string
			in []*tensor.Tensor
		}{
			{"ij,jk->ik", ins(a, b)},
			{"ijk->ij", ins(a)},
			{"ij->ik", ins(a)},
		} {
			n, err := TryNodeFor("Einsum", Attrs{"equation": AStr(c.eq)}, c.in, map[int]int{0: len(c.in)})
			if err != nil {
				continue // rejected by the graph's shape function
			}
			cs = append(cs, Case{Node: n, Inputs: c.in, Err: status.InvalidArgument})
		}
		for _, eq := range []string{"ij,jk,kl->il", "i$->i", "i....->i"} {
			n, err := TryNodeFor("Einsum", Attrs{"equation": AStr(eq)}, ins(a), map[int]int{0: 1})
			if err == nil {
				cs = append(cs, Case{Node: n, Inputs: ins(a), Err: status.InvalidArgument})
			}
		}
		return cs
	})
}
