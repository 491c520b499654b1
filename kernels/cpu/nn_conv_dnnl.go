package cpu

import (
	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
)

// convDNNL computes the float32 convolution p through oneDNN when it is
// loaded and takes the convolution (one group), with bias (len p.O, or nil)
// and ReLU inside the primitive. It reports whether it did; false leaves
// out to the caller's own kernel. The primitive comes from cache, which the
// node's kernel owns: built on the first Run of a shape and thread count
// (the context's intra-op threads, which bound its OpenMP team), reused
// after. constFilter says the filter is a Const the plan does not feed
// (filterConstAttr): the primitive then reorders it into its layout once
// and keeps it. Its work buffers (scratchpad, per-Run reordered weights)
// are checked against the device's memory limit like the im2col buffer.
func convDNNL(ctx *kernels.Context, cache *dnnl.ConvCache, p ConvParams, in, filter, bias []float32, relu, constFilter bool, out []float32) (bool, error) {
	if cache == nil || p.Groups != 1 || p.C == 0 || !dnnl.Available() {
		return false, nil
	}
	d := dnnl.ConvDesc{N: p.N, H: p.H, W: p.W, C: p.C, O: p.O, KH: p.KH, KW: p.KW,
		SH: p.StrideH, SW: p.StrideW, DH: p.DilH, DW: p.DilW, PT: p.PadTop, PL: p.PadLeft,
		OH: p.OutH, OW: p.OutW, Bias: bias != nil, Relu: relu}
	// TF's output size fixes the padding after; VALID's remainder rows
	// (a negative need) are simply not read.
	d.PB = max(0, (p.OutH-1)*p.StrideH+(p.KH-1)*p.DilH+1-p.H-p.PadTop)
	d.PR = max(0, (p.OutW-1)*p.StrideW+(p.KW-1)*p.DilW+1-p.W-p.PadLeft)
	c, err := cache.Get(d, ctx.Threads())
	if err != nil {
		return false, nil // a shape oneDNN has no implementation for: Get warned
	}
	if err := c.Run(ctx.Limit, in, filter, bias, out, constFilter); err != nil {
		code := status.CodeOf(err) // the limit's RESOURCE_EXHAUSTED
		if code == status.Unknown {
			code = status.Internal
		}
		return true, ctx.Errorf(code, "%v", err)
	}
	return true, nil
}

// poolDNNL is convDNNL for MaxPool and AvgPool (float32, a spatial window):
// it reports whether oneDNN computed out.
func poolDNNL(ctx *kernels.Context, cache *dnnl.Cache[dnnl.PoolDesc], g PoolGeom, isMax bool, in, out []float32) (bool, error) {
	if cache == nil || g.KD != 1 || g.C == 0 || len(in) == 0 || !dnnl.Available() {
		return false, nil
	}
	d := dnnl.PoolDesc{N: g.N, H: g.H, W: g.W, C: g.C, OH: g.OH, OW: g.OW, KH: g.KH, KW: g.KW,
		SH: g.SH, SW: g.SW, PT: g.PT, PL: g.PL, Max: isMax}
	d.PB = max(0, (g.OH-1)*g.SH+g.KH-g.H-g.PT)
	d.PR = max(0, (g.OW-1)*g.SW+g.KW-g.W-g.PL)
	return runPrim(ctx, cache, d, in, out)
}

// runPrim runs the primitive cache holds for d on args (in the order the
// desc's doc gives), its work buffer from the context's checked memory. It
// reports whether oneDNN ran: false when it has no primitive for d (Get
// warned, once) and the caller's own kernel must.
func runPrim[D comparable](ctx *kernels.Context, cache *dnnl.Cache[D], d D, args ...[]float32) (bool, error) {
	p, err := cache.Get(d, ctx.Threads())
	if err != nil {
		return false, nil
	}
	work, err := kernels.Scratch[byte](ctx, p.WorkBytes())
	if err != nil {
		return true, err
	}
	if err := p.Run(work, args...); err != nil {
		return true, ctx.Errorf(status.Internal, "%v", err)
	}
	return true, nil
}
