package kerneltest

import (
	"fmt"
	"math/rand"
	"strings"

	"mstream/status"
	"mstream/tensor"
)

// _MstreamGatherN (package optimize's merge of sibling GatherV2s): output
// i is np.take(params i, indices i, axis=0). With KERNELTEST_TF, TF runs
// the GatherV2 nodes it stands for (gatherNAsTF).

func init() { Add("_MstreamGatherN", gatherNCases) }

// gatherNCase is the case of pairs (params[i], idx[i]), the NumPy
// reference one np.take per pair.
func gatherNCase(params, idx []*tensor.Tensor) Case {
	k := len(params)
	in := append(append([]*tensor.Tensor{}, params...), idx...)
	takes := make([]string, k)
	for i := range takes {
		takes[i] = fmt.Sprintf("np.take(a%d, a%d, axis=0)", i, k+i)
	}
	np := "(" + strings.Join(takes, ", ") + ",)"
	return Case{Node: NodeFor("_MstreamGatherN", nil, in, map[int]int{0: k, 1: k}), Inputs: in, NumPy: np}
}

// gatherNCases: pairs of every movable dtype whose params differ in rows,
// row shape (rows of gatherRowMin elements and more take the host's row
// copy) and emptiness, indices of rank 0 to 2 and empty ones; DLRM's 26
// tables; more pairs than a GPU launch carries; and an index out of range
// in a later pair, which the host reports as that pair's GatherV2 does.
func gatherNCases(r *rand.Rand) []Case {
	var cs []Case
	rows := []tensor.Shape{{}, {3}, {2, 2}, {17}, {0}}
	idxShapes := []tensor.Shape{{}, {3}, {2, 2}, {0}, {5}}
	for _, dt := range MoveTypes {
		for rep := 0; rep < 3; rep++ {
			k := 1 + r.Intn(4)
			it := []tensor.DType{tensor.Int32, tensor.Int64}[r.Intn(2)]
			var params, idx []*tensor.Tensor
			for i := 0; i < k; i++ {
				lim := int64(1 + r.Intn(6))
				params = append(params, Rand(r, dt, append(tensor.Shape{lim}, rows[r.Intn(len(rows))]...)))
				idx = append(idx, RandIndex(r, it, idxShapes[r.Intn(len(idxShapes))], lim))
			}
			cs = append(cs, gatherNCase(params, idx))
		}
	}
	for _, wide := range []struct {
		k    int
		rows tensor.Shape
		it   tensor.DType
	}{{26, tensor.Shape{50, 64}, tensor.Int64}, {30, tensor.Shape{7, 3}, tensor.Int32}, {57, tensor.Shape{4}, tensor.Int64}} {
		var params, idx []*tensor.Tensor
		for i := 0; i < wide.k; i++ {
			params = append(params, Rand(r, tensor.Float, wide.rows))
			idx = append(idx, RandIndex(r, wide.it, tensor.Shape{17}, wide.rows[0]))
		}
		cs = append(cs, gatherNCase(params, idx))
	}
	p := Rand(r, tensor.Float, tensor.Shape{5, 2})
	for _, bad := range []struct {
		idx *tensor.Tensor
		msg string
	}{
		{IntVec(tensor.Int32, 0, 1, 5), "indices[2] = 5 is not in [0, 5)"},
		{IntVec(tensor.Int32, -1), "indices[0] = -1 is not in [0, 5)"},
	} {
		c := gatherNCase([]*tensor.Tensor{p, p}, []*tensor.Tensor{IntVec(tensor.Int32, 4, 0), bad.idx})
		c.NumPy, c.Err, c.ErrMsg = "", status.InvalidArgument, bad.msg
		// TF's GPU kernel writes zeros (kernels/cuda's TestGatherNOutOfRange).
		c.HostErr = true
		cs = append(cs, c)
	}
	return cs
}
