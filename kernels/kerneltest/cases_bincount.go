package kerneltest

import (
	"math/rand"

	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// DenseBincount against a float64 count in Go: vectors and matrices,
// counts, weights and binary output, values past size dropped.
func init() {
	Add("DenseBincount", func(r *rand.Rand) []Case {
		var cs []Case
		for _, idx := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, dt := range []tensor.DType{tensor.Int32, tensor.Int64, tensor.Float, tensor.Double} {
				for _, shape := range []tensor.Shape{{int64(r.Intn(12))}, {int64(1 + r.Intn(4)), int64(r.Intn(6))}} {
					size := int64(1 + r.Intn(8))
					data := RandRange(r, idx, shape, 0, float64(size+3))
					ws := []*tensor.Tensor{tensor.New(dt, tensor.Shape{0}), Rand(r, dt, shape)}
					for wi, w := range ws {
						for _, binary := range []bool{false, true} {
							rows, cols := int64(1), shape.NumElements()
							out := tensor.Shape{size}
							if len(shape) == 2 {
								rows, cols = shape[0], shape[1]
								out = tensor.Shape{rows, size}
							}
							want := make([]float64, out.NumElements())
							vals, wf := F64s(data), F64s(w)
							for i := range rows {
								for j := range cols {
									v := int64(vals[i*cols+j])
									switch {
									case v >= size:
									case binary:
										want[i*size+v] = 1
									case wi == 0:
										want[i*size+v]++
									default:
										want[i*size+v] += wf[i*cols+j]
									}
								}
							}
							sz := FromF64(idx, tensor.Shape{}, []float64{float64(size)})
							in := []*tensor.Tensor{data, sz, w}
							n := NodeFor("DenseBincount", map[string]*tfpb.AttrValue{"binary_output": ABool(binary)}, in, nil)
							cs = append(cs, Case{Node: n, Inputs: in, Want: []*tensor.Tensor{FromF64(dt, out, want)}})
						}
					}
				}
			}
		}
		bad := func(data, size, w *tensor.Tensor, msg string) Case {
			in := []*tensor.Tensor{data, size, w}
			return Case{Node: NodeFor("DenseBincount", nil, in, nil), Inputs: in, Err: status.InvalidArgument, ErrMsg: msg}
		}
		v := tensor.FromI32(tensor.Shape{3}, []int32{1, 2, 3})
		none := tensor.New(tensor.Float, tensor.Shape{0})
		cs = append(cs,
			bad(tensor.FromI32(tensor.Shape{2}, []int32{1, -1}), tensor.FromI32(tensor.Shape{}, []int32{4}), none, "non-negative"),
			bad(v, tensor.FromI32(tensor.Shape{}, []int32{-2}), none, "must be non-negative"),
			bad(v, tensor.FromI32(tensor.Shape{}, []int32{4}), tensor.FromF32(tensor.Shape{2}, []float32{1, 2}), "`weights` must be the same shape"),
			bad(tensor.FromI32(tensor.Shape{1, 1, 1}, []int32{0}), tensor.FromI32(tensor.Shape{}, []int32{4}), none, "at most rank 2"))
		return cs
	})
}
