package cpu

import (
	"mstream/graph"
	"mstream/hostmem"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

var (
	floatTypes   = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	numericTypes = []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16,
		tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Int8, tensor.Int16, tensor.Uint16, tensor.Uint32, tensor.Uint64}
	allTypes = append(append([]tensor.DType{}, numericTypes...), tensor.Bool, tensor.String,
		tensor.Complex64, tensor.Complex128)
)

// parallelMin is the element count below which loops stay serial.
const parallelMin = 1 << 15

func reg(op string, types []tensor.DType, host []string, f kernels.Factory) {
	ta := "T"
	if types == nil {
		ta = ""
	}
	kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, TypeAttr: ta, Types: types, HostMemory: host, Factory: f})
}

func fn(f func(ctx *kernels.Context) error) kernels.Factory {
	return func(*graph.Node) (kernels.Kernel, error) { return kernels.KernelFunc(f), nil }
}

func view[T any](t *tensor.Tensor) []T { return hostmem.View[T](t.Buf) }

// toF32 returns the elements of a floating tensor as float32 (a copy for
// half and bfloat16, the buffer itself for float).
func toF32(t *tensor.Tensor) []float32 {
	switch t.DType {
	case tensor.Float:
		return t.F32()
	case tensor.Half:
		s := t.U16()
		o := make([]float32, len(s))
		for i, h := range s {
			o[i] = tensor.HalfToF32(h)
		}
		return o
	case tensor.Bfloat16:
		s := t.U16()
		o := make([]float32, len(s))
		for i, h := range s {
			o[i] = tensor.Bfloat16ToF32(h)
		}
		return o
	}
	return nil
}

// storeF32 writes float32 values into a float, half or bfloat16 tensor.
func storeF32(t *tensor.Tensor, v []float32) {
	switch t.DType {
	case tensor.Float:
		copy(t.F32(), v)
	case tensor.Half:
		d := t.U16()
		for i, x := range v {
			d[i] = tensor.F32ToHalf(x)
		}
	case tensor.Bfloat16:
		d := t.U16()
		for i, x := range v {
			d[i] = tensor.F32ToBfloat16(x)
		}
	}
}

func isHalfish(dt tensor.DType) bool { return dt == tensor.Half || dt == tensor.Bfloat16 }

// copyElems copies n elements from src[so:] to dst[do:], any dtype (string
// and variant elements are shared: they are immutable).
func copyElems(dst *tensor.Tensor, do int, src *tensor.Tensor, so int, n int) {
	switch {
	case src.DType.InStrs():
		copy(dst.Strs[do:do+n], src.Strs[so:so+n])
		return
	case src.DType == tensor.Variant:
		copy(dst.Vars[do:do+n], src.Vars[so:so+n])
		return
	}
	es := src.DType.Size()
	copy(dst.Buf[do*es:(do+n)*es], src.Buf[so*es:(so+n)*es])
}

func normAxis(ctx *kernels.Context, axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, ctx.Errorf(status.InvalidArgument, "axis %d is out of range [%d, %d)", axis, -rank, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

func hostInts(ctx *kernels.Context, i int, what string) ([]int64, error) {
	return hostIntsIn(ctx, i, what, nil)
}

// hostIntsIn is hostInts into dst[:0] (a caller's buffer, often on its
// stack), which grows only when it is too short: a small shape or index
// list costs no allocation.
func hostIntsIn(ctx *kernels.Context, i int, what string, dst []int64) ([]int64, error) {
	v, err := ctx.Input(i).AppendInt64s(dst[:0])
	if err != nil {
		return nil, ctx.Errorf(status.InvalidArgument, "%s: %v", what, err)
	}
	return v, nil
}

// hostInt is hostInts for an input that should hold one element (an axis,
// a count): that element (0 when there is none) and how many there are,
// read in place rather than copied.
func hostInt(ctx *kernels.Context, i int, what string) (v int64, n int, err error) {
	t := ctx.Input(i)
	switch t.DType {
	case tensor.Int32:
		s := t.I32()
		if len(s) > 0 {
			v = int64(s[0])
		}
		return v, len(s), nil
	case tensor.Int64:
		s := t.I64()
		if len(s) > 0 {
			v = s[0]
		}
		return v, len(s), nil
	}
	_, err = hostInts(ctx, i, what) // its error for the dtype
	return 0, 0, err
}

func attrType(n *graph.Node, name string) tensor.DType {
	if a := n.Attrs[name]; a != nil {
		return tensor.DType(a.GetType())
	}
	return tensor.Invalid
}

func attrBool(n *graph.Node, name string) bool {
	if a := n.Attrs[name]; a != nil {
		return a.GetB()
	}
	return false
}

func attrInt(n *graph.Node, name string, def int64) int64 {
	if a := n.Attrs[name]; a != nil {
		return a.GetI()
	}
	return def
}

func attrString(n *graph.Node, name, def string) string {
	if a := n.Attrs[name]; a != nil && a.GetS() != nil {
		return string(a.GetS())
	}
	return def
}

func attrInts(n *graph.Node, name string) []int64 {
	if a := n.Attrs[name]; a != nil {
		return a.GetList().GetI()
	}
	return nil
}

func strides(s tensor.Shape) []int64 {
	st := make([]int64, len(s))
	p := int64(1)
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = p
		p *= s[i]
	}
	return st
}
