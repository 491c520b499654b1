package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

type unaryOp int

const (
	opRelu unaryOp = iota
	opSigmoid
	opTanh
)

func init() {
	for name, op := range map[string]unaryOp{"Relu": opRelu, "Sigmoid": opSigmoid, "Tanh": opTanh} {
		types := floatTypes
		if op == opRelu {
			types = numericTypes
		}
		op := op
		reg(name, types, nil, fn(func(ctx *kernels.Context) error { return unary(ctx, op) }))
	}
	reg("BiasAdd", numericTypes, nil, func(n *graph.Node) (kernels.Kernel, error) {
		nchw := attrString(n, "data_format", "NHWC") == "NCHW"
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return biasAdd(ctx, nchw) }), nil
	})
	mm := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16, tensor.Int32, tensor.Int64}
	reg("MatMul", mm, nil, func(n *graph.Node) (kernels.Kernel, error) {
		ta, tb := attrBool(n, "transpose_a"), attrBool(n, "transpose_b")
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return matmul(ctx, ta, tb, false) }), nil
	})
	for _, op := range []string{"BatchMatMulV2", "BatchMatMulV3"} {
		ta := "T"
		if op == "BatchMatMulV3" {
			ta = "Ta"
		}
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, TypeAttr: ta, Types: mm, Factory: func(n *graph.Node) (kernels.Kernel, error) {
			if len(n.InTypes) == 2 && (n.InTypes[0] != n.InTypes[1] || n.OutTypes[0] != n.InTypes[0]) {
				return nil, status.Errorf(status.Unimplemented, "node '%s': %s with mixed dtypes %v, %v -> %v", n.Name, n.Op, n.InTypes[0], n.InTypes[1], n.OutTypes[0])
			}
			ax, ay := attrBool(n, "adj_x"), attrBool(n, "adj_y")
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return matmul(ctx, ax, ay, true) }), nil
		}})
	}
}

var unaryNames = map[unaryOp]string{opRelu: "Relu", opSigmoid: "Sigmoid", opTanh: "Tanh"}

func unary(ctx *kernels.Context, op unaryOp) error {
	in := ctx.Input(0)
	o, err := ctx.Allocate(0, in.Shape)
	if err != nil {
		return err
	}
	switch in.DType {
	case tensor.Float:
		if !vecUnary(ctx, unaryNames[op], in.F32(), o.F32()) {
			unaryF(ctx, op, in.F32(), o.F32())
		}
	case tensor.Double:
		unaryF(ctx, op, in.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		if !vecUnary(ctx, unaryNames[op], toF32(in), out) {
			unaryF(ctx, op, toF32(in), out)
		}
		storeF32(o, out)
	case tensor.Int32:
		reluInt(in.I32(), o.I32())
	case tensor.Int64:
		reluInt(in.I64(), o.I64())
	case tensor.Int16:
		reluInt(in.I16(), o.I16())
	case tensor.Int8:
		reluInt(in.I8(), o.I8())
	case tensor.Uint8:
		copy(o.U8(), in.U8())
	case tensor.Uint16:
		copy(o.U16(), in.U16())
	case tensor.Uint32:
		copy(o.U32(), in.U32())
	case tensor.Uint64:
		copy(o.U64(), in.U64())
	default:
		return ctx.Errorf(status.Unimplemented, "dtype %v", in.DType)
	}
	return nil
}

func reluInt[T num](x, o []T) {
	for i, v := range x {
		if v > 0 {
			o[i] = v
		} else {
			o[i] = 0
		}
	}
}

func unaryF[T float32 | float64](ctx *kernels.Context, op unaryOp, x, o []T) {
	ctx.For(len(x), 10, kernels.StartLoop, func(lo, hi int) {
		x, o := x[lo:hi], o[lo:hi]
		o = o[:len(x)]
		switch op {
		case opRelu:
			for i, v := range x {
				if v > 0 || v != v {
					o[i] = v
				} else {
					o[i] = 0
				}
			}
		case opSigmoid:
			for i, v := range x {
				o[i] = T(1 / (1 + math.Exp(-float64(v))))
			}
		case opTanh:
			for i, v := range x {
				o[i] = T(math.Tanh(float64(v)))
			}
		}
	})
}

func softmaxRows[T float32 | float64](ctx *kernels.Context, x, o []T, d int) {
	rows := len(x) / d
	ctx.For(rows, float64(d)*20, kernels.StartLoop, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, or := x[r*d:(r+1)*d], o[r*d:(r+1)*d]
			mx := xr[0]
			for _, v := range xr {
				if v > mx {
					mx = v
				}
			}
			var sum float64
			for i, v := range xr {
				e := math.Exp(float64(v - mx))
				or[i] = T(e)
				sum += e
			}
			inv := 1 / sum
			for i := range or {
				or[i] = T(float64(or[i]) * inv)
			}
		}
	})
}

// BiasAddArgs checks BiasAdd's value and bias (TF's codes and messages)
// and returns the channel dim: the last, or 1 for NCHW. The GPU kernels
// call it too.
func BiasAddArgs(ctx *kernels.Context, nchw bool) (int, error) {
	v, b := ctx.Input(0), ctx.Input(1)
	if len(v.Shape) < 2 {
		return 0, ctx.Errorf(status.InvalidArgument, "Input tensor must be at least 2D: %v", v.Shape)
	}
	if len(b.Shape) != 1 {
		return 0, ctx.Errorf(status.InvalidArgument, "Biases must be 1D: %v", b.Shape)
	}
	cdim := len(v.Shape) - 1
	if nchw {
		cdim = 1
	}
	if v.Shape[cdim] != b.Shape[0] {
		return 0, ctx.Errorf(status.InvalidArgument, "Must provide as many biases as the channel dimension of the input tensor: %v vs. %v in %v", b.Shape, v.Shape[cdim], v.Shape)
	}
	return cdim, nil
}

func biasAdd(ctx *kernels.Context, nchw bool) error {
	v, b := ctx.Input(0), ctx.Input(1)
	cdim, err := BiasAddArgs(ctx, nchw)
	if err != nil {
		return err
	}
	// Express as a broadcast add of bias reshaped to [C, 1, ...] or [C].
	bs := tensor.Shape{b.Shape[0]}
	for i := cdim + 1; i < len(v.Shape); i++ {
		bs = append(bs, 1)
	}
	bc, _ := broadcastShapes(v.Shape, bs)
	o, err := ctx.Allocate(0, v.Shape)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	switch v.DType {
	case tensor.Float:
		if !vecBinaryOp(ctx, vec.Add, bc, v.F32(), b.F32(), o.F32()) {
			runBinary(ctx, opAdd, bc, v.F32(), b.F32(), o.F32())
		}
	case tensor.Double:
		runBinary(ctx, opAdd, bc, v.F64(), b.F64(), o.F64())
	case tensor.Half, tensor.Bfloat16:
		out, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		runBinary(ctx, opAdd, bc, toF32(v), toF32(b), out)
		storeF32(o, out)
	case tensor.Int32:
		runBinary(ctx, opAdd, bc, v.I32(), b.I32(), o.I32())
	case tensor.Int64:
		runBinary(ctx, opAdd, bc, v.I64(), b.I64(), o.I64())
	case tensor.Int16:
		runBinary(ctx, opAdd, bc, v.I16(), b.I16(), o.I16())
	case tensor.Int8:
		runBinary(ctx, opAdd, bc, v.I8(), b.I8(), o.I8())
	case tensor.Uint8:
		runBinary(ctx, opAdd, bc, v.U8(), b.U8(), o.U8())
	case tensor.Uint16:
		runBinary(ctx, opAdd, bc, v.U16(), b.U16(), o.U16())
	case tensor.Uint32:
		runBinary(ctx, opAdd, bc, v.U32(), b.U32(), o.U32())
	case tensor.Uint64:
		runBinary(ctx, opAdd, bc, v.U64(), b.U64(), o.U64())
	}
	return nil
}

// matmul serves MatMul (rank 2) and BatchMatMulV2/V3 (rank >= 2, batch dims
// broadcast).
func matmul(ctx *kernels.Context, ta, tb, batched bool) error {
	a, b := ctx.Input(0), ctx.Input(1)
	ra, rb := len(a.Shape), len(b.Shape)
	if !batched && (ra != 2 || rb != 2) {
		return ctx.Errorf(status.InvalidArgument, "In[0] and In[1] must be 2-dimensional, got %v and %v", a.Shape, b.Shape)
	}
	if ra < 2 || rb < 2 {
		return ctx.Errorf(status.InvalidArgument, "In[0] and In[1] ndims must be >= 2: %d and %d", ra, rb)
	}
	m, k := a.Shape[ra-2], a.Shape[ra-1]
	if ta {
		m, k = k, m
	}
	k2, n := b.Shape[rb-2], b.Shape[rb-1]
	if tb {
		k2, n = n, k2
	}
	if k != k2 {
		return ctx.Errorf(status.InvalidArgument, "Matrix size-incompatible: In[0]: %v, In[1]: %v", a.Shape, b.Shape)
	}
	bc, ok := broadcastShapes(a.Shape[:ra-2], b.Shape[:rb-2])
	if !ok {
		return ctx.Errorf(status.InvalidArgument, "In[0] and In[1] must have compatible batch dimensions: %v vs. %v", a.Shape, b.Shape)
	}
	out := append(bc.out.Clone(), m, n)
	o, err := ctx.Allocate(0, out)
	if err != nil {
		return err
	}
	if o.NumElements() == 0 {
		return nil
	}
	sa, sb, so := int(m*k), int(k*n), int(m*n)
	// Batch offsets.
	var pairs [][2]int
	if len(bc.out) == 0 {
		pairs = [][2]int{{0, 0}}
	} else {
		forEachRow(bc, func(oo, ao, bo, cnt, s1, s2 int64) {
			for i := int64(0); i < cnt; i++ {
				pairs = append(pairs, [2]int{int(ao + i*s1), int(bo + i*s2)})
			}
		})
	}
	lda, ldb := int(k), int(n)
	if ta {
		lda = int(m)
	}
	if tb {
		ldb = int(k)
	}
	lda, ldb = max(lda, 1), max(ldb, 1) // BLAS wants >= 1 even when k == 0
	M, N, K := int(m), int(n), int(k)
	// The batch's products run as the pool's chunks (one alone splits
	// itself over the pool), as Einsum's do.
	switch a.DType {
	case tensor.Float:
		matmulBatches(ctx, sgemm, pairs, ta, tb, M, N, K, a.F32(), lda, sa, b.F32(), ldb, sb, o.F32(), so)
	case tensor.Double:
		matmulBatches(ctx, blas.Dgemm, pairs, ta, tb, M, N, K, a.F64(), lda, sa, b.F64(), ldb, sb, o.F64(), so)
	case tensor.Half, tensor.Bfloat16:
		A, B := toF32(a), toF32(b)
		O, err := kernels.Scratch[float32](ctx, o.NumElements())
		if err != nil {
			return err
		}
		matmulBatches(ctx, sgemm, pairs, ta, tb, M, N, K, A, lda, sa, B, ldb, sb, O, so)
		storeF32(o, O)
	case tensor.Int32:
		batchedGemm(ctx, len(pairs), 2*float64(M)*float64(N)*float64(K), func(i int) {
			p := pairs[i]
			intGemm(ta, tb, M, N, K, a.I32()[p[0]*sa:], lda, b.I32()[p[1]*sb:], ldb, o.I32()[i*so:])
		})
	case tensor.Int64:
		batchedGemm(ctx, len(pairs), 2*float64(M)*float64(N)*float64(K), func(i int) {
			p := pairs[i]
			intGemm(ta, tb, M, N, K, a.I64()[p[0]*sa:], lda, b.I64()[p[1]*sb:], ldb, o.I64()[i*so:])
		})
	}
	return nil
}

func intGemm[T int32 | int64](ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			for p := 0; p < k; p++ {
				var x, y T
				if ta {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if tb {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += x * y
			}
			c[i*n+j] = s
		}
	}
}
