package cpu

import (
	"math"

	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// FakeQuantWithMinMaxArgs, FakeQuantWithMinMaxVars and
// FakeQuantWithMinMaxVarsPerChannel (float32), as TF's functors compute
// them: [min, max] is nudged so that zero lands on the integer grid of
// num_bits (1 to 2^num_bits - 1 with narrow_range, else from 0), then
// each element is clamped to the nudged range and rounded to the grid.
// Every step is float32 arithmetic rounded on its own (no fused
// multiply-add), so the GPU kernel (kernels/cuda) gives the same bits.
// Args and PerChannel scale by the inverse step, Vars divides by the step,
// as TF's functors do; min = max = 0 gives zeros (Vars, PerChannel).

func init() {
	for _, op := range []string{"FakeQuantWithMinMaxArgs", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"} {
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, Factory: func(n *graph.Node) (kernels.Kernel, error) {
			a, err := ParseFakeQuantAttrs(n)
			if err != nil {
				return nil, err
			}
			return kernels.KernelFunc(func(ctx *kernels.Context) error { return fakeQuant(ctx, a) }), nil
		}})
	}
	reg("BatchNormWithGlobalNormalization", []tensor.DType{tensor.Float, tensor.Half, tensor.Double}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a := ParseBNGlobalAttrs(n)
		return kernels.KernelFunc(func(ctx *kernels.Context) error { return bnGlobal(ctx, a) }), nil
	})
}

// FakeQuantGrid is one channel's nudged grid.
type FakeQuantGrid struct {
	Min, Max, Scale, Inv, QZero float32
	Zero                        bool // min = max = 0: the output is 0
}

// FakeQuantAttrs are a FakeQuant node's attrs, checked once when the
// kernel is made (as TF's constructors check them): the integer range of
// num_bits and narrow_range, and for FakeQuantWithMinMaxArgs its grid.
type FakeQuantAttrs struct {
	QMin, QMax int
	Args       FakeQuantGrid
}

// ParseFakeQuantAttrs reads and checks them (INVALID_ARGUMENT naming the
// node). The GPU kernel calls it too.
func ParseFakeQuantAttrs(n *graph.Node) (FakeQuantAttrs, error) {
	bits := attrInt(n, "num_bits", 8)
	if bits < 2 || bits > 16 {
		return FakeQuantAttrs{}, nodeErr(n, status.InvalidArgument, "num_bits must be between 2 and 16, inclusive")
	}
	a := FakeQuantAttrs{QMax: 1<<bits - 1}
	if attrBool(n, "narrow_range") {
		a.QMin = 1
	}
	if n.Op == "FakeQuantWithMinMaxArgs" {
		lo, hi := attrFloat(n, "min", -6), attrFloat(n, "max", 6)
		if !(lo < hi) {
			return FakeQuantAttrs{}, nodeErr(n, status.InvalidArgument, "min has to be smaller than max, was: %v >= %v", lo, hi)
		}
		a.Args = nudge(lo, hi, a.QMin, a.QMax)
	}
	return a, nil
}

// FakeQuantArgs checks a FakeQuant node's inputs and returns its grids
// (one, or one per channel of the last dim for PerChannel) and whether
// elements are divided by the step (Vars) rather than multiplied by its
// inverse. The GPU kernel calls it too.
func FakeQuantArgs(ctx *kernels.Context, a FakeQuantAttrs) (grids []FakeQuantGrid, div bool, err error) {
	n := ctx.Node
	qmin, qmax := a.QMin, a.QMax
	x := ctx.Input(0)
	if x.DType != tensor.Float {
		return nil, false, ctx.Errorf(status.InvalidArgument, "%s takes float32 inputs, got %v", n.Op, x.DType)
	}
	scalar := func(i int, name string) (float32, error) {
		t := ctx.Input(i)
		if len(t.Shape) != 0 {
			return 0, ctx.Errorf(status.InvalidArgument, "`%s` must be rank 0 but is rank %d", name, len(t.Shape))
		}
		return t.F32()[0], nil
	}
	switch n.Op {
	case "FakeQuantWithMinMaxArgs":
		return []FakeQuantGrid{a.Args}, false, nil
	case "FakeQuantWithMinMaxVars":
		lo, err := scalar(1, "min")
		if err != nil {
			return nil, false, err
		}
		hi, err := scalar(2, "max")
		if err != nil {
			return nil, false, err
		}
		return []FakeQuantGrid{nudgeOrZero(lo, hi, qmin, qmax)}, true, nil
	}
	if len(x.Shape) == 0 {
		return nil, false, ctx.Errorf(status.InvalidArgument, "inputs must be at least rank 1, got a scalar")
	}
	depth := x.Shape[len(x.Shape)-1]
	for i, name := range []string{"min", "max"} {
		t := ctx.Input(1 + i)
		if len(t.Shape) != 1 {
			return nil, false, ctx.Errorf(status.InvalidArgument, "`%s` must be rank 1 but is rank %d", name, len(t.Shape))
		}
		if t.Shape[0] != depth {
			return nil, false, ctx.Errorf(status.InvalidArgument, "%s has incorrect size, expected %d was %d", name, depth, t.Shape[0])
		}
	}
	lo, hi := ctx.Input(1).F32(), ctx.Input(2).F32()
	grids = make([]FakeQuantGrid, depth)
	for c := range grids {
		grids[c] = nudgeOrZero(lo[c], hi[c], qmin, qmax)
	}
	return grids, false, nil
}

func nudgeOrZero(lo, hi float32, qmin, qmax int) FakeQuantGrid {
	if lo == 0 && hi == 0 {
		return FakeQuantGrid{Zero: true}
	}
	return nudge(lo, hi, qmin, qmax)
}

// nudge is TF's Nudge in float32, each operation rounded.
func nudge(lo, hi float32, qmin, qmax int) FakeQuantGrid {
	qlo, qhi := float32(qmin), float32(qmax)
	scale := float32((hi - lo) / float32(qhi-qlo))
	inv := float32(float32(qhi-qlo) / float32(hi-lo))
	zpMin := float32(qlo - float32(lo/scale))
	var zp uint16
	switch {
	case zpMin < qlo:
		zp = uint16(qmin)
	case zpMin > qhi:
		zp = uint16(qmax)
	default:
		zp = uint16(math.Round(float64(zpMin))) // std::round: halves away from zero
	}
	g := FakeQuantGrid{Scale: scale, Inv: inv}
	g.Min = float32(float32(qlo-float32(zp)) * scale)
	g.Max = float32(float32(qhi-float32(zp)) * scale)
	g.QZero = float32(math.Floor(float64(float32(float32(-g.Min*inv) + 0.5))))
	return g
}

// Apply quantises x on the grid.
func (g FakeQuantGrid) Apply(x float32, div bool) float32 {
	if g.Zero {
		return 0
	}
	c := x
	if g.Max < c {
		c = g.Max
	}
	if c < g.Min {
		c = g.Min
	}
	s := float32(c - g.Min)
	var q float32
	if div {
		q = float32(s / g.Scale)
	} else {
		q = float32(s * g.Inv)
	}
	q = float32(float32(q-g.QZero) + 0.5)
	return float32(float32(math.Floor(float64(q))) * g.Scale)
}

func fakeQuant(ctx *kernels.Context, a FakeQuantAttrs) error {
	grids, div, err := FakeQuantArgs(ctx, a)
	if err != nil {
		return err
	}
	x := ctx.Input(0)
	o, err := ctx.Allocate(0, x.Shape)
	if err != nil {
		return err
	}
	xs, os := x.F32(), o.F32()
	d := len(grids)
	for i, v := range xs {
		os[i] = grids[i%d].Apply(v, div)
	}
	return nil
}

// BNGlobalAttrs are BatchNormWithGlobalNormalization's attrs.
type BNGlobalAttrs struct {
	Eps   float64
	Scale bool // scale_after_normalization: multiply by gamma
}

// ParseBNGlobalAttrs reads them.
func ParseBNGlobalAttrs(n *graph.Node) BNGlobalAttrs {
	return BNGlobalAttrs{Eps: float64(attrFloat(n, "variance_epsilon", 0)), Scale: attrBool(n, "scale_after_normalization")}
}

// BNGlobalArgs checks BatchNormWithGlobalNormalization's inputs (t
// 4-dimensional; m, v, beta, gamma vectors as long as t's last dim,
// which TF's kernel assumes without checking).
func BNGlobalArgs(ctx *kernels.Context) error {
	t := ctx.Input(0)
	if len(t.Shape) != 4 {
		return ctx.Errorf(status.InvalidArgument, "input must be 4-dimensional %v", t.Shape)
	}
	depth := t.Shape[3]
	for i, name := range []string{"mean", "var", "beta", "gamma"} {
		s := ctx.Input(1 + i).Shape
		if len(s) != 1 {
			return ctx.Errorf(status.InvalidArgument, "%s must be 1-dimensional %v", name, s)
		}
		if s[0] != depth {
			return ctx.Errorf(status.InvalidArgument, "%s has %d elements, the input's depth is %d", name, s[0], depth)
		}
	}
	return nil
}

// bnGlobal is y = x * mul + add per channel with mul = gamma / sqrt(v +
// eps) (gamma 1 without scale_after_normalization) and add = beta - m *
// mul, rounded to float32 as the FusedBatchNorm kernels do (double for
// double).
func bnGlobal(ctx *kernels.Context, a BNGlobalAttrs) error {
	if err := BNGlobalArgs(ctx); err != nil {
		return err
	}
	t := ctx.Input(0)
	o, err := ctx.Allocate(0, t.Shape)
	if err != nil {
		return err
	}
	depth := int(t.Shape[3])
	if t.DType == tensor.Double {
		x, y := t.F64(), o.F64()
		m, v, beta, gamma := ctx.Input(1).F64(), ctx.Input(2).F64(), ctx.Input(3).F64(), ctx.Input(4).F64()
		mul, add := make([]float64, depth), make([]float64, depth)
		for c := range mul {
			mul[c] = 1 / math.Sqrt(v[c]+a.Eps)
			if a.Scale {
				mul[c] *= gamma[c]
			}
			add[c] = beta[c] - m[c]*mul[c]
		}
		for i, e := range x {
			y[i] = e*mul[i%depth] + add[i%depth]
		}
		return nil
	}
	x := toF32(t)
	m, v, beta, gamma := toF32(ctx.Input(1)), toF32(ctx.Input(2)), toF32(ctx.Input(3)), toF32(ctx.Input(4))
	mul, add := make([]float32, depth), make([]float32, depth)
	for c := range mul {
		mul[c] = float32(1 / math.Sqrt(float64(v[c])+a.Eps))
		if a.Scale {
			mul[c] = float32(mul[c] * gamma[c])
		}
		add[c] = float32(beta[c] - float32(m[c]*mul[c]))
	}
	y := make([]float32, len(x))
	for i, e := range x {
		y[i] = e*mul[i%depth] + add[i%depth]
	}
	storeF32(o, y)
	return nil
}
