package cpu

import (
	"sync"
	"sync/atomic"

	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
)

// oneDNN's convolutions and poolings run on the intra-op pool, not on
// OpenMP teams: every primitive is made for one thread (so a call forks
// no team), and the pool splits a call into parts, the batch's images
// when it has several, else bands of its one image's output rows (one a
// thread: bands), each part a primitive of its own sub-shape (its input
// window and padding) from the node's cache. The pool's workers spin
// between parts and nodes, where libgomp's passive workers
// (OMP_WAIT_POLICY=PASSIVE, which package dnnl sets) sleep after every
// parallel region: at a batch of one each primitive paid a futex wake and
// a sleep, as long as a small convolution, and a second client's Run
// found both cores' teams taken.
// A part is the pool's chunk, so a caller whose pool is busy runs all of
// them itself, and one too small for a chunk (For's cost) runs whole.

// oneDNNFlopNs is the rate the split assumes for a oneDNN convolution on
// one core, in float32 flops per ns: ~110 measured (AVX-512, 3x3
// convolutions of 32-128 channels at a batch of one).
const oneDNNFlopNs = 100

// poolNsPerTap is the cost the split assumes for one window element of a
// oneDNN pooling: 2.6 us for MaxPool 2x2 of 32x32x32 (8192 outputs).
const poolNsPerTap = 0.08

// nhwcGeom is what splitting an NHWC window op needs of its shape: images,
// input rows, row length in elements (W*C in, OW*channels out), output
// rows, and the rows' window (the dilated kernel's extent, the stride, the
// padding before the first row and after the last).
type nhwcGeom struct {
	n, h, inRow, oh, outRow    int
	ext, stride, pad, padAfter int
}

// part is units [lo, hi) of a split NHWC op: n images of h input rows
// with pt and pb rows of padding before and after, and oh output rows,
// read from in[in0:in1] and written to out[out0:out1].
type part struct {
	n, h, pt, pb, oh     int
	in0, in1, out0, out1 int
}

// partOf is units [lo, hi) of g: images when g.n > 1, else output rows of
// the one image, whose input window starts at the first row they read
// (rows past the last output's window, VALID's remainder, are left out).
// It reports false for a band of padding alone.
func partOf(g nhwcGeom, lo, hi int) (part, bool) {
	inImg, outImg := g.h*g.inRow, g.oh*g.outRow
	if g.n > 1 {
		return part{n: hi - lo, h: g.h, pt: g.pad, pb: g.padAfter, oh: g.oh, in0: lo * inImg, in1: hi * inImg, out0: lo * outImg, out1: hi * outImg}, true
	}
	first, last := lo*g.stride-g.pad, (hi-1)*g.stride-g.pad+g.ext // last is one past
	h0, end := max(0, first), min(g.h, last)
	return part{n: 1, h: end - h0, pt: h0 - first, pb: last - end, oh: hi - lo,
		in0: h0 * g.inRow, in1: end * g.inRow, out0: lo * g.outRow, out1: hi * g.outRow}, end > h0
}

// splitNHWC runs the NHWC op d (geometry g) on in and out, split over the
// context's pool (see the comment at the top): sub gives the desc of a
// part, get a desc's primitive, run one primitive on its input and output
// ranges. costPerImage (ns) sizes the split; units are images when the
// batch has several, else the one image's output rows, all of them when
// the pool runs it whole. A part oneDNN cannot make, or one of padding
// alone, makes the call run whole once the parts are done. It reports
// false, having run nothing, when oneDNN cannot make d itself; the error
// is run's first.
func splitNHWC[D comparable, P any](ctx *kernels.Context, d D, g nhwcGeom, costPerImage float64, in, out []float32,
	sub func(D, part) D, get func(D) (P, error), run func(p P, in, out []float32) error) (bool, error) {
	// Whole first: a shape oneDNN cannot make falls back before any part
	// has written out.
	whole, err := get(d)
	if err != nil {
		return false, nil // a shape oneDNN has no implementation for: Get warned
	}
	units, cost, rows := g.n, costPerImage, func(u int) int { return u }
	if g.n == 1 {
		units, rows = bands(ctx, g.oh)
		cost = costPerImage / float64(max(units, 1))
	}
	return true, splitRun(ctx, units, cost, func(lo, hi int) (func() error, bool) {
		pt, ok := partOf(g, rows(lo), rows(hi))
		if !ok {
			return nil, false
		}
		p, err := get(sub(d, pt))
		if err != nil {
			return nil, false
		}
		return func() error { return run(p, in[pt.in0:pt.in1], out[pt.out0:pt.out1]) }, true
	}, func() error { return run(whole, in, out) })
}

// bands cuts one image's oh output rows into the parts of its split: one
// band a thread of the context's pool, each band's rows given by rows
// (unit u starts at row rows(u); rows(units) is oh), or a unit a row when
// the pool does not say its size (it cuts them itself). A band is a oneDNN
// call with 1.5-2 us of its own (BenchmarkConvSplit), and the pool's
// chunks (up to two a thread) had cut cnn's blocks at B=1 into twelve
// parts, each a convolution and a pooling call.
func bands(ctx *kernels.Context, oh int) (units int, rows func(u int) int) {
	t := ctx.Threads()
	if t <= 0 || t >= oh {
		return oh, func(u int) int { return u }
	}
	return t, func(u int) int { return u * oh / t }
}

// splitRun runs units [0, units) of a oneDNN call over the context's pool
// (cost ns each): a part [lo, hi) runs what part gives it, all of them
// whole; a part that reports false (oneDNN cannot make its shape, or it
// is padding alone) makes whole run once the parts are done. It returns
// the first error.
func splitRun(ctx *kernels.Context, units int, cost float64, part func(lo, hi int) (func() error, bool), whole func() error) error {
	var mu sync.Mutex
	var first error
	var redo atomic.Bool
	ctx.For(units, cost, kernels.StartCall, func(lo, hi int) {
		run := whole
		if lo != 0 || hi != units {
			var ok bool
			if run, ok = part(lo, hi); !ok {
				redo.Store(true)
				return
			}
		}
		if err := run(); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	if first == nil && redo.Load() {
		first = whole()
	}
	return first
}

// dnnlErr is a oneDNN run's error as the kernel's: the limit's
// RESOURCE_EXHAUSTED as it is, a failure of oneDNN's own INTERNAL.
func dnnlErr(ctx *kernels.Context, err error) error {
	if err == nil {
		return nil
	}
	code := status.CodeOf(err)
	if code == status.Unknown {
		code = status.Internal
	}
	return ctx.Errorf(code, "%v", err)
}

// convDNNL computes the float32 convolution p through oneDNN when it is
// loaded and takes the convolution (one group), with bias (len p.O, or nil)
// and ReLU inside the primitive. It reports whether it did; false leaves
// out to the caller's own kernel. The primitives come from cache, which the
// node's kernel owns: built on the first Run of a shape or part shape
// (see splitNHWC), reused after. constFilter says the filter is a Const
// the plan does not feed (constWeightsAttr): each primitive then reorders
// it into its layout once and keeps it. Its work buffers (scratchpad,
// per-Run reordered weights) are checked against the device's memory
// limit like the im2col buffer.
func convDNNL(ctx *kernels.Context, cache *dnnl.ConvCache, p ConvParams, in, filter, bias []float32, relu, constFilter bool, out []float32) (bool, error) {
	if cache == nil || p.Groups != 1 || p.C == 0 || !dnnl.Available() {
		return false, nil
	}
	d, g := convDesc(p, bias != nil, relu)
	return splitNHWC(ctx, d, g, convNs(d), in, out, convPart,
		func(d dnnl.ConvDesc) (*dnnl.Conv, error) { return cache.Get(d, 1) },
		func(c *dnnl.Conv, src, dst []float32) error {
			return c.Run(ctx.Limit, src, filter, bias, dst, constFilter)
		})
}

// convDesc is oneDNN's desc of the convolution p and its geometry.
func convDesc(p ConvParams, bias, relu bool) (dnnl.ConvDesc, nhwcGeom) {
	d := dnnl.ConvDesc{N: p.N, H: p.H, W: p.W, C: p.C, O: p.O, KH: p.KH, KW: p.KW,
		SH: p.StrideH, SW: p.StrideW, DH: p.DilH, DW: p.DilW, PT: p.PadTop, PL: p.PadLeft,
		OH: p.OutH, OW: p.OutW, Bias: bias, Relu: relu}
	// TF's output size fixes the padding after; VALID's remainder rows
	// (a negative need) are simply not read.
	d.PB = max(0, (p.OutH-1)*p.StrideH+(p.KH-1)*p.DilH+1-p.H-p.PadTop)
	d.PR = max(0, (p.OutW-1)*p.StrideW+(p.KW-1)*p.DilW+1-p.W-p.PadLeft)
	return d, nhwcGeom{n: d.N, h: d.H, inRow: d.W * d.C, oh: d.OH, outRow: d.OW * d.O, ext: (d.KH-1)*d.DH + 1, stride: d.SH, pad: d.PT, padAfter: d.PB}
}

// convNs is the time the split assumes for one image of d.
func convNs(d dnnl.ConvDesc) float64 {
	return 2 * float64(d.OH*d.OW*d.O) * float64(d.KH*d.KW*d.C) / oneDNNFlopNs
}

// convPart is the desc of part pt of d.
func convPart(d dnnl.ConvDesc, pt part) dnnl.ConvDesc {
	d.N, d.H, d.PT, d.PB, d.OH = pt.n, pt.h, pt.pt, pt.pb, pt.oh
	return d
}

// poolDNNL is convDNNL for MaxPool and AvgPool (float32, a spatial window):
// it reports whether oneDNN computed out.
func poolDNNL(ctx *kernels.Context, cache *dnnl.Cache[dnnl.PoolDesc], g PoolGeom, isMax bool, in, out []float32) (bool, error) {
	if cache == nil || g.KD != 1 || g.C == 0 || len(in) == 0 || !dnnl.Available() {
		return false, nil
	}
	d, ng := poolDesc(g, isMax)
	return splitNHWC(ctx, d, ng, poolNs(d), in, out, poolPart,
		func(d dnnl.PoolDesc) (*dnnl.Prim, error) { return cache.Get(d, 1) },
		func(p *dnnl.Prim, src, dst []float32) error { return runPool(ctx, p, src, dst) })
}

// poolDesc is oneDNN's desc of the pooling g and its geometry.
func poolDesc(g PoolGeom, isMax bool) (dnnl.PoolDesc, nhwcGeom) {
	d := dnnl.PoolDesc{N: g.N, H: g.H, W: g.W, C: g.C, OH: g.OH, OW: g.OW, KH: g.KH, KW: g.KW,
		SH: g.SH, SW: g.SW, PT: g.PT, PL: g.PL, Max: isMax}
	d.PB = max(0, (g.OH-1)*g.SH+g.KH-g.H-g.PT)
	d.PR = max(0, (g.OW-1)*g.SW+g.KW-g.W-g.PL)
	return d, nhwcGeom{n: d.N, h: d.H, inRow: d.W * d.C, oh: d.OH, outRow: d.OW * d.C, ext: d.KH, stride: d.SH, pad: d.PT, padAfter: d.PB}
}

// poolNs is the time the split assumes for one image of d.
func poolNs(d dnnl.PoolDesc) float64 { return float64(d.OH*d.OW*d.C*d.KH*d.KW) * poolNsPerTap }

// poolPart is the desc of part pt of d.
func poolPart(d dnnl.PoolDesc, pt part) dnnl.PoolDesc {
	d.N, d.H, d.PT, d.PB, d.OH = pt.n, pt.h, pt.pt, pt.pb, pt.oh
	return d
}

// runPool runs a pooling primitive, its work buffer from the context's
// checked memory.
func runPool(ctx *kernels.Context, p *dnnl.Prim, src, dst []float32) error {
	work, err := kernels.Scratch[byte](ctx, p.WorkBytes())
	if err != nil {
		return err
	}
	return dnnlErr(ctx, p.Run(work, src, dst))
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
