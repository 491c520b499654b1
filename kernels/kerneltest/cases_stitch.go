package kerneltest

import (
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// rowOf copies row i of src (rowLen elements) into row j of dst; a plain
// element loop, independent of the kernels' copies.
func rowOf(dst *tensor.Tensor, j int, src *tensor.Tensor, i, rowLen int) {
	for e := 0; e < rowLen; e++ {
		if dst.DType == tensor.String {
			dst.Strs[j*rowLen+e] = src.Strs[i*rowLen+e]
			continue
		}
		sz := dst.DType.Size()
		for b := 0; b < sz; b++ {
			dst.Buf[(j*rowLen+e)*sz+b] = src.Buf[(i*rowLen+e)*sz+b]
		}
	}
}

func randOrStrings(r *rand.Rand, dt tensor.DType, s tensor.Shape) *tensor.Tensor {
	if dt == tensor.String {
		return RandStrings(r, s)
	}
	return Rand(r, dt, s)
}

func init() {
	Add("DynamicStitch", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append(append([]tensor.DType{}, MoveTypes...), tensor.String) {
			n := 1 + r.Intn(8)
			perm := r.Perm(n)
			cut := r.Intn(n + 1)
			row := tensor.Shape{int64(1 + r.Intn(3))}
			var idx, data []*tensor.Tensor
			for _, part := range [][]int{perm[:cut], perm[cut:]} {
				v := make([]int32, len(part))
				for i, p := range part {
					v[i] = int32(p)
				}
				idx = append(idx, tensor.FromI32(tensor.Shape{int64(len(v))}, v))
				data = append(data, randOrStrings(r, dt, append(tensor.Shape{int64(len(v))}, row...)))
			}
			want := tensor.New(dt, append(tensor.Shape{int64(n)}, row...))
			for m := range idx {
				for i, p := range idx[m].I32() {
					rowOf(want, int(p), data[m], i, int(row[0]))
				}
			}
			in := append(append([]*tensor.Tensor{}, idx...), data...)
			cs = append(cs, Case{Node: NodeFor("DynamicStitch", nil, in, map[int]int{0: 2, 1: 2}), Inputs: in, Want: []*tensor.Tensor{want}})
		}
		in := []*tensor.Tensor{tensor.FromI32(tensor.Shape{2}, []int32{0, -1}), Rand(r, tensor.Float, tensor.Shape{2})}
		cs = append(cs, Case{Node: NodeForUnknown("DynamicStitch", nil, in, map[int]int{0: 1, 1: 1}), Inputs: in, Err: status.InvalidArgument, ErrMsg: "out of range"})
		return cs
	})
	Add("DynamicPartition", func(r *rand.Rand) []Case {
		var cs []Case
		for _, dt := range append(append([]tensor.DType{}, MoveTypes...), tensor.String) {
			n, np := r.Intn(9), 1+r.Intn(4)
			row := 1 + r.Intn(3)
			data := randOrStrings(r, dt, tensor.Shape{int64(n), int64(row)})
			p := make([]int32, n)
			count := make([]int, np)
			for i := range p {
				p[i] = int32(r.Intn(np))
				count[p[i]]++
			}
			var want []*tensor.Tensor
			for k := 0; k < np; k++ {
				w := tensor.New(dt, tensor.Shape{int64(count[k]), int64(row)})
				j := 0
				for i := range p {
					if int(p[i]) == k {
						rowOf(w, j, data, i, row)
						j++
					}
				}
				want = append(want, w)
			}
			in := ins(data, tensor.FromI32(tensor.Shape{int64(n)}, p))
			cs = append(cs, Case{Node: NodeFor("DynamicPartition", Attrs{"num_partitions": AInt(int64(np))}, in, nil), Inputs: in, Want: want})
		}
		in := ins(Rand(r, tensor.Float, tensor.Shape{2}), tensor.FromI32(tensor.Shape{2}, []int32{0, 5}))
		cs = append(cs, Case{Node: NodeForUnknown("DynamicPartition", Attrs{"num_partitions": AInt(2)}, in, nil), Inputs: in, Err: status.InvalidArgument, ErrMsg: "is not in [0, 2)"})
		return cs
	})
}
