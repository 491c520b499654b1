package kerneltest

import (
	"math/rand"

	"mstream/status"
	"mstream/tensor"
)

// Assert passes on a true condition whatever its data, and fails with
// INVALID_ARGUMENT and TF's message on a false one. The messages below are
// what TF 2.15 printed for these inputs (tf.raw_ops.Assert in a v1
// session); the oracle mode compares the codes with TF again.
func init() {
	Add("Assert", func(r *rand.Rand) []Case {
		var cs []Case
		assert := func(cond bool, summarize int64, data ...*tensor.Tensor) Case {
			in := append(ins(tensor.FromBool(tensor.Shape{}, []bool{cond})), data...)
			var types []tensor.DType
			for _, d := range data {
				types = append(types, d.DType)
			}
			n := NodeFor("Assert", Attrs{"T": ATypes(types...), "summarize": AInt(summarize)}, in, map[int]int{1: len(data)})
			return Case{Node: n, Inputs: in, Want: []*tensor.Tensor{}}
		}
		for _, dt := range MoveTypes {
			cs = append(cs, assert(true, 3, Rand(r, dt, EdgeShapes[r.Intn(len(EdgeShapes))])))
		}
		fail := func(c Case, msg string) Case {
			c.Want, c.Err, c.ErrMsg = nil, status.InvalidArgument, msg
			return c
		}
		f32 := tensor.FromF32(tensor.Shape{2, 2}, []float32{1.5, -0.1, 1e6, 1.0 / 3})
		str := tensor.New(tensor.String, tensor.Shape{})
		str.Strs[0] = []byte("x is")
		strs := tensor.New(tensor.String, tensor.Shape{2})
		strs.Strs[0], strs.Strs[1] = []byte("a\nb"), []byte("é")
		i64 := tensor.New(tensor.Int64, tensor.Shape{2, 3, 4})
		for i := range i64.I64() {
			i64.I64()[i] = int64(i)
		}
		i32 := tensor.New(tensor.Int32, tensor.Shape{2, 3})
		for i := range i32.I32() {
			i32.I32()[i] = int32(i)
		}
		f64 := tensor.New(tensor.Double, tensor.Shape{2})
		f64.F64()[0], f64.F64()[1] = 0.1, 2.0/3
		cs = append(cs,
			fail(assert(false, 3, IntVec(tensor.Int32, 1, 2, 3, 4)), "assertion failed: [1 2 3...]"),
			fail(assert(false, 4, str, i32), "assertion failed: [x is] [[0 1 2][3...]...]"),
			fail(assert(false, -1, f32), "assertion failed: [[1.5 -0.1][1e+06 0.333333343]]"),
			fail(assert(false, 3, tensor.FromBool(tensor.Shape{2}, []bool{true, false}), f64), "assertion failed: [1 0] [0.1 0.66666666666666663]"),
			fail(assert(false, 7, i64), "assertion failed: [[[0 1 2 3][4 5 6...]]...]"),
			fail(assert(false, 3, strs), `assertion failed: [a\nb é]`),
		)
		return cs
	})
}
