package cuda

import (
	"sync/atomic"

	cu "mstream/device/cuda"
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

var allowTF32 atomic.Bool

func init() {
	allowTF32.Store(true)
	reg("MatMul", "T", gemmTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		ta, tb := boolAttr(n, "transpose_a"), boolAttr(n, "transpose_b")
		return fn(func(k kctx) error { return matmul(k, ta, tb) })(n)
	})
	for _, op := range []string{"BatchMatMulV2", "BatchMatMulV3"} {
		ta := "T"
		if op == "BatchMatMulV3" {
			ta = "Ta"
		}
		reg(op, ta, gemmTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
			if len(n.InTypes) == 2 && (n.InTypes[0] != n.InTypes[1] || n.OutTypes[0] != n.InTypes[0]) {
				return nil, status.Errorf(status.Unimplemented, "node '%s': %s with mixed dtypes %v, %v -> %v", n.Name, n.Op, n.InTypes[0], n.InTypes[1], n.OutTypes[0])
			}
			ax, ay := boolAttr(n, "adj_x"), boolAttr(n, "adj_y")
			return fn(func(k kctx) error { return batchMatmul(k, ax, ay) })(n)
		})
	}
}

// SetTF32 allows or forbids TF32 tensor cores for float32 GEMMs (TF's
// enable_tensor_float_32_execution; allowed by default, as in TF).
func SetTF32(allow bool) { allowTF32.Store(allow) }

func boolAttr(n *graph.Node, name string) bool {
	if a := n.Attrs[name]; a != nil {
		return a.GetB()
	}
	return false
}

// mmShape checks a 2-D product and returns m, k, n.
func mmShape(k kctx, a, b *tensor.Tensor, ta, tb bool) (int64, int64, int64, error) {
	if len(a.Shape) != 2 || len(b.Shape) != 2 {
		return 0, 0, 0, k.Errorf(status.InvalidArgument, "In[0] and In[1] must be matrices: %v, %v", a.Shape, b.Shape)
	}
	m, ka := a.Shape[0], a.Shape[1]
	if ta {
		m, ka = ka, m
	}
	kb, n := b.Shape[0], b.Shape[1]
	if tb {
		kb, n = n, kb
	}
	if ka != kb {
		return 0, 0, 0, k.Errorf(status.InvalidArgument, "Matrix size-incompatible: In[0]: %v, In[1]: %v", a.Shape, b.Shape)
	}
	return m, ka, n, nil
}

func matmul(k kctx, ta, tb bool) error {
	a, b := k.Input(0), k.Input(1)
	m, kk, n, err := mmShape(k, a, b, ta, tb)
	if err != nil {
		return err
	}
	o, err := k.Allocate(0, tensor.Shape{m, n})
	if err != nil {
		return err
	}
	return gemm(k, o, a, b, ta, tb, m, kk, n, 1, 0, 0)
}

// gemm runs o = op(a)·op(b) (batch matrices; strides in elements, 0
// broadcasts), zeroing o when the inner dim is empty.
func gemm(k kctx, o, a, b *tensor.Tensor, ta, tb bool, m, kk, n, batch, sa, sb int64) error {
	return gemmEpi(k, o, a, b, ta, tb, m, kk, n, batch, sa, sb, epi{}) // gemm.go
}

func batchMatmul(k kctx, adjX, adjY bool) error {
	x, y := k.Input(0), k.Input(1)
	if len(x.Shape) < 2 || len(y.Shape) < 2 {
		return k.Errorf(status.InvalidArgument, "In[0] and In[1] must have rank >= 2: %v, %v", x.Shape, y.Shape)
	}
	rx, ry := len(x.Shape), len(y.Shape)
	m, kx := x.Shape[rx-2], x.Shape[rx-1]
	if adjX {
		m, kx = kx, m
	}
	ky, n := y.Shape[ry-2], y.Shape[ry-1]
	if adjY {
		ky, n = n, ky
	}
	if kx != ky {
		return k.Errorf(status.InvalidArgument, "Matrix size-incompatible: In[0]: %v, In[1]: %v", x.Shape, y.Shape)
	}
	bshape, sx, sy, ok := bcastShapes(x.Shape[:rx-2], y.Shape[:ry-2])
	if !ok {
		return k.Errorf(status.InvalidArgument, "In[0] and In[1] must have compatible batch dimensions: %v vs. %v", x.Shape, y.Shape)
	}
	out := append(bshape.Clone(), m, n)
	o, err := k.Allocate(0, out)
	if err != nil {
		return err
	}
	batch := bshape.NumElements()
	if o.NumElements() == 0 {
		return nil
	}
	nx, ny := tensor.Shape(x.Shape[:rx-2]).NumElements(), tensor.Shape(y.Shape[:ry-2]).NumElements()
	stride := func(nb int64) (int64, bool) {
		switch nb {
		case batch:
			return 1, true
		case 1:
			return 0, true
		}
		return 0, false
	}
	fx, okx := stride(nx)
	fy, oky := stride(ny)
	// A side with the full batch count but broadcast dims inside (e.g.
	// [2,1]x[1,2]) is not a plain stride: that needs the general path.
	if okx && oky && (nx != batch || sameLayout(x.Shape[:rx-2], bshape)) && (ny != batch || sameLayout(y.Shape[:ry-2], bshape)) {
		return gemm(k, o, x, y, adjX, adjY, m, kx, n, batch, fx*m*kx, fy*kx*n)
	}
	// General broadcast: one GEMM per output batch.
	es := uint64(x.DType.Size())
	idx := make([]int64, len(bshape))
	for bi := int64(0); bi < batch; bi++ {
		var ox, oy int64
		for d := range bshape {
			ox += idx[d] * sx[d]
			oy += idx[d] * sy[d]
		}
		xs := &tensor.Tensor{DType: x.DType, Buf: cu.DeviceBytes(ptr(x)+uint64(ox*m*kx)*es, int(m*kx)*int(es))}
		ys := &tensor.Tensor{DType: y.DType, Buf: cu.DeviceBytes(ptr(y)+uint64(oy*kx*n)*es, int(kx*n)*int(es))}
		os := &tensor.Tensor{DType: o.DType, Shape: tensor.Shape{m, n},
			Buf: cu.DeviceBytes(ptr(o)+uint64(bi*m*n)*es, int(m*n)*int(es))}
		if err := gemm(k, os, xs, ys, adjX, adjY, m, kx, n, 1, 0, 0); err != nil {
			return err
		}
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < bshape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}

// sameLayout reports whether batch dims s, left-padded with ones, equal b.
func sameLayout(s, b tensor.Shape) bool {
	off := len(b) - len(s)
	for i := range b {
		d := int64(1)
		if i >= off {
			d = s[i-off]
		}
		if d != b[i] {
			return false
		}
	}
	return true
}

// FusedMatMul is MatMul followed by BiasAdd and the activation act (""
// for none; alpha is LeakyRelu's) in one kernel where gemmEpi can (the
// small-batch kernel, or cuBLASLt's bias and bias+ReLU epilogues), else
// a GEMM and one bias+activation kernel. Its inputs are a, b and the
// bias; the node supplies the output dtype and the error names.
func FusedMatMul(transA, transB bool, act string, alpha float32) kernels.Kernel {
	return kernels.KernelFunc(func(ctx *kernels.Context) error {
		k, err := begin(ctx)
		if err != nil {
			return err
		}
		a, b, bias := k.Input(0), k.Input(1), k.Input(2)
		m, kk, n, err := mmShape(k, a, b, transA, transB)
		if err != nil {
			return err
		}
		if len(bias.Shape) != 1 || bias.Shape[0] != n {
			return k.Errorf(status.InvalidArgument, "bias must be a vector of %d elements, got %v", n, bias.Shape)
		}
		o, err := k.Allocate(0, tensor.Shape{m, n})
		if err != nil {
			return err
		}
		return gemmEpi(k, o, a, b, transA, transB, m, kk, n, 1, 0, 0, epi{bias: bias, act: act, alpha: alpha})
	})
}
