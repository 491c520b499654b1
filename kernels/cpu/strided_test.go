package cpu

import (
	"bytes"
	"testing"

	"mstream/kernels"
	"mstream/tensor"
)

// TestCopyStrided checks copyStrided's merged, tiled and split loops
// against the element-by-element reference on random permutations,
// broadcasts and diagonals of every element size.
func TestCopyStrided(t *testing.T) {
	r := newRand(t)
	ctx := &kernels.Context{Pool: pool{}}
	for _, dt := range []tensor.DType{tensor.Uint8, tensor.Half, f32, tensor.Double, tensor.Complex128, tensor.String} {
		for it := 0; it < 60; it++ {
			rank := 1 + r.Intn(4)
			shape := make(tensor.Shape, rank)
			for k := range shape {
				shape[k] = int64(1 + r.Intn(40))
				if r.Intn(5) == 0 {
					shape[k] = 1
				}
			}
			src, _ := randTensor(r, dt, shape)
			perm := r.Perm(rank)
			st := strides(shape)
			out := make(tensor.Shape, rank)
			from := make([]int64, rank)
			for i, p := range perm {
				out[i], from[i] = shape[p], st[p]
			}
			switch r.Intn(4) {
			case 0: // a broadcast dim
				k := r.Intn(rank)
				out[k], from[k] = int64(1+r.Intn(20)), 0
			case 1: // a diagonal of the first two dims
				if rank >= 2 {
					n := min(shape[perm[0]], shape[perm[1]])
					out = append(tensor.Shape{n}, out[2:]...)
					from = append([]int64{from[0] + from[1]}, from[2:]...)
				}
			}
			want, got := tensor.New(dt, out), tensor.New(dt, out)
			gatherStridedElems(want, src, from)
			copyStrided(ctx, got, src, from)
			same := bytes.Equal(want.Buf, got.Buf)
			if dt == tensor.String {
				same = len(want.Strs) == len(got.Strs)
				for i := range want.Strs {
					same = same && bytes.Equal(want.Strs[i], got.Strs[i])
				}
			}
			if !same {
				t.Fatalf("%v: shape %v read as %v with strides %v: copyStrided differs from the element loop", dt, shape, out, from)
			}
		}
	}
}
