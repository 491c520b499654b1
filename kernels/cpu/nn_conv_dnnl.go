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
// when it has several, else bands of its one image's output rows, each
// part a primitive of its own sub-shape (its input window and padding)
// from the node's cache. The pool's workers spin between parts and
// nodes, where libgomp's passive workers (OMP_WAIT_POLICY=PASSIVE, which
// package dnnl sets) sleep after every parallel region: at a batch of one
// each primitive paid a futex wake and a sleep, as long as a small
// convolution, and a second client's Run found both cores' teams taken.
// A part is the pool's chunk, so a caller whose pool is busy runs all of
// them itself, and one too small for a chunk (For's cost) runs whole.

// oneDNNFlopNs is the rate the split assumes for a oneDNN convolution on
// one core, in float32 flops per ns: ~110 measured (AVX-512, 3x3
// convolutions of 32-128 channels at a batch of one).
const oneDNNFlopNs = 100

// poolNsPerTap is the cost the split assumes for one window element of a
// oneDNN pooling: 2.6 us for MaxPool 2x2 of 32x32x32 (8192 outputs).
const poolNsPerTap = 0.08

// window is the input rows that output rows [lo, hi) of a window op read:
// it starts at input row h0 and has rows rows, with pt rows of padding
// before and pb after (ext is the dilated kernel's extent, s its stride,
// pad the op's padding before the first row, h the input's rows). Rows
// past the last output's window (VALID's remainder) are not part of it.
func window(lo, hi, h, ext, s, pad int) (h0, rows, pt, pb int) {
	first, last := lo*s-pad, (hi-1)*s-pad+ext // last is one past
	h0, end := max(0, first), min(h, last)
	return h0, end - h0, h0 - first, last - end
}

// splitNHWC runs an NHWC op of n images with oh output rows each on the
// context's pool: run computes units [lo, hi), images when n > 1, else
// output rows of the one image (all of them when the pool runs it whole);
// costPerImage (ns) sizes the split. The first error wins.
func splitNHWC(ctx *kernels.Context, n, oh int, costPerImage float64, run func(lo, hi int) error) error {
	units, cost := n, costPerImage
	if n == 1 {
		units, cost = oh, costPerImage/float64(max(oh, 1))
	}
	var mu sync.Mutex
	var first error
	ctx.For(units, cost, func(lo, hi int) {
		if err := run(lo, hi); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	return first
}

// convDNNL computes the float32 convolution p through oneDNN when it is
// loaded and takes the convolution (one group), with bias (len p.O, or nil)
// and ReLU inside the primitive. It reports whether it did; false leaves
// out to the caller's own kernel. The primitives come from cache, which the
// node's kernel owns: built on the first Run of a shape or part shape
// (see splitNHWC), reused after. constFilter says the filter is a Const
// the plan does not feed (filterConstAttr): each primitive then reorders
// it into its layout once and keeps it. Its work buffers (scratchpad,
// per-Run reordered weights) are checked against the device's memory
// limit like the im2col buffer.
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
	// Whole, single-threaded: the shape oneDNN cannot make falls back
	// here, before any part has written out.
	whole, err := cache.Get(d, 1)
	if err != nil {
		return false, nil // a shape oneDNN has no implementation for: Get warned
	}
	inImg, outImg := d.H*d.W*d.C, d.OH*d.OW*d.O
	flops := 2 * float64(outImg) * float64(d.KH*d.KW*d.C)
	var redo atomic.Bool
	err = splitNHWC(ctx, d.N, d.OH, flops/oneDNNFlopNs, func(lo, hi int) error {
		c, sd, src, dst := whole, d, in, out
		switch {
		case d.N > 1:
			sd.N = hi - lo
			src, dst = in[lo*inImg:hi*inImg], out[lo*outImg:hi*outImg]
		case hi-lo < d.OH:
			var h0 int
			h0, sd.H, sd.PT, sd.PB = window(lo, hi, d.H, (d.KH-1)*d.DH+1, d.SH, d.PT)
			if sd.H <= 0 {
				redo.Store(true) // a band of padding alone: the whole reads rows
				return nil
			}
			sd.OH = hi - lo
			src, dst = in[h0*d.W*d.C:(h0+sd.H)*d.W*d.C], out[lo*d.OW*d.O:hi*d.OW*d.O]
		}
		if sd != d {
			var err error
			if c, err = cache.Get(sd, 1); err != nil {
				redo.Store(true) // a part oneDNN cannot make: the whole it can
				return nil
			}
		}
		return c.Run(ctx.Limit, src, filter, bias, dst, constFilter)
	})
	if err == nil && redo.Load() {
		err = whole.Run(ctx.Limit, in, filter, bias, out, constFilter)
	}
	if err != nil {
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
	whole, err := cache.Get(d, 1)
	if err != nil {
		return false, nil
	}
	inImg, outImg := d.H*d.W*d.C, d.OH*d.OW*d.C
	var redo atomic.Bool
	err = splitNHWC(ctx, d.N, d.OH, float64(outImg*d.KH*d.KW)*poolNsPerTap, func(lo, hi int) error {
		p, sd, src, dst := whole, d, in, out
		switch {
		case d.N > 1:
			sd.N = hi - lo
			src, dst = in[lo*inImg:hi*inImg], out[lo*outImg:hi*outImg]
		case hi-lo < d.OH:
			var h0 int
			h0, sd.H, sd.PT, sd.PB = window(lo, hi, d.H, d.KH, d.SH, d.PT)
			if sd.H <= 0 {
				redo.Store(true) // a band of padding alone: the whole reads rows
				return nil
			}
			sd.OH = hi - lo
			src, dst = in[h0*d.W*d.C:(h0+sd.H)*d.W*d.C], out[lo*d.OW*d.C:hi*d.OW*d.C]
		}
		if sd != d {
			var err error
			if p, err = cache.Get(sd, 1); err != nil {
				redo.Store(true)
				return nil
			}
		}
		return runPool(ctx, p, src, dst)
	})
	if err == nil && redo.Load() {
		err = runPool(ctx, whole, in, out)
	}
	if err != nil {
		if status.CodeOf(err) != status.Unknown {
			return true, err
		}
		return true, ctx.Errorf(status.Internal, "%v", err)
	}
	return true, nil
}

func runPool(ctx *kernels.Context, p *dnnl.Prim, src, dst []float32) error {
	work, err := kernels.Scratch[byte](ctx, p.WorkBytes())
	if err != nil {
		return err
	}
	return p.Run(work, src, dst)
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
