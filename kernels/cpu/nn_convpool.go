package cpu

import (
	"sync"

	"mstream/kernels"
	"mstream/kernels/cpu/dnnl"
	"mstream/tensor"
)

// _MstreamConv2DMaxPool is a _FusedConv2D whose output only a MaxPool
// reads (optimize fuses them): with oneDNN, each part of the intra-op
// split convolves the rows its pooled rows need into a buffer of its own
// and pools them at once, a group of images at a time (groupBytes of
// convolution output) when the batch has several, so the pool reads the
// convolution's output from the core's cache instead of from memory, and
// a batch of one pools in bands on every thread instead of on one after
// the convolution. Without oneDNN, or
// with an epilogue oneDNN's primitive does not take, the convolution runs
// whole into a temporary, then the pool.

// convPool is the node's state: its primitives and its free band buffers.
type convPool struct {
	conv *dnnl.ConvCache
	pool *dnnl.Cache[dnnl.PoolDesc]

	mu   sync.Mutex
	bufs [][]float32 // band buffers free for a part (one per part in flight)
}

// buf returns a free band buffer of n floats, made once and checked
// against the device's limit.
func (cp *convPool) buf(ctx *kernels.Context, n int) ([]float32, error) {
	cp.mu.Lock()
	for i, b := range cp.bufs {
		if cap(b) >= n {
			cp.bufs[i] = cp.bufs[len(cp.bufs)-1]
			cp.bufs = cp.bufs[:len(cp.bufs)-1]
			cp.mu.Unlock()
			return b[:n], nil
		}
	}
	cp.mu.Unlock()
	return kernels.Scratch[float32](ctx, int64(n))
}

func (cp *convPool) put(b []float32) {
	cp.mu.Lock()
	cp.bufs = append(cp.bufs, b)
	cp.mu.Unlock()
}

func fusedConv2DMaxPool(ctx *kernels.Context, a Conv2DAttrs, ep epilogue, pa PoolAttrs, cp *convPool, constFilter bool) error {
	c, err := newFusedConvCall(ctx, a, ep)
	if err != nil {
		return err
	}
	g, err := PoolParams(ctx, pa, c.p.OutShape(), true)
	if err != nil {
		return err
	}
	o, err := ctx.Allocate(0, tensor.Shape{int64(g.N), int64(g.OH), int64(g.OW), int64(g.OD)})
	if err != nil || o.NumElements() == 0 {
		return err
	}
	if err := c.check(ctx); err != nil {
		return err
	}
	if done, err := cp.runDNNL(ctx, c, g, constFilter, o.F32()); done {
		return err
	}
	conv, err := kernels.NewTensor(ctx, tensor.Float, c.p.OutShape())
	if err != nil {
		return err
	}
	if err := c.run(ctx, cp.conv, constFilter, conv); err != nil {
		return err
	}
	if done, err := poolDNNL(ctx, cp.pool, g, true, conv.F32(), o.F32()); done {
		return err
	}
	poolT(ctx, g, true, conv.F32(), o.F32())
	return nil
}

// groupBytes bounds the convolution's output that a part of a batch
// holds for its pool: small enough to stay in a core's L2 cache (1-2 MB)
// beside the part's input and the filter, large enough that oneDNN's
// primitive runs several images a call (one image a call cost 5-7% more
// CPU than the whole batch of 16 for cnn's first two blocks).
const groupBytes = 512 << 10

// band is pooled rows [lo, hi) of one image, or whole images, as oneDNN
// runs them: the convolution of the rows they read, into a buffer, and
// the pool of that buffer, each with its primitive and its range of the
// input and output.
type band struct {
	conv       *dnnl.Conv
	pool       *dnnl.Prim
	in0, in1   int
	out0, out1 int
	rows       int // elements of the convolution's output the pool reads
}

// runDNNL computes the convolution and the pool g through oneDNN, a band
// of pooled rows or a group of images at a time (see the top of the
// file). It reports false, having written nothing, when oneDNN cannot:
// not loaded, an epilogue its primitive does not take, no primitive for
// the shapes.
func (cp *convPool) runDNNL(ctx *kernels.Context, c fusedConvCall, g PoolGeom, constFilter bool, out []float32) (bool, error) {
	p := c.p
	in := ctx.Input(0).F32()
	if p.Groups != 1 || p.C == 0 || len(in) == 0 || !c.inPrim() || !dnnl.Available() {
		return false, nil
	}
	filter, bias := ctx.Input(1).F32(), c.offsetF32()
	cd, cg := convDesc(p, true, c.ep.act == "Relu")
	pd, pg := poolDesc(g, true)
	run := func(b band) error {
		buf, err := cp.buf(ctx, b.rows)
		if err != nil {
			return err
		}
		defer cp.put(buf)
		if err := b.conv.Run(ctx.Limit, in[b.in0:b.in1], filter, bias, buf, constFilter); err != nil {
			return err
		}
		return runPool(ctx, b.pool, buf, out[b.out0:b.out1])
	}
	if p.N > 1 {
		// Groups of images, each convolved whole and pooled.
		inImg, convImg, outImg := cg.h*cg.inRow, cg.oh*cg.outRow, pg.oh*pg.outRow
		per := max(1, min(groupBytes/(4*max(convImg, 1)), (p.N+max(1, ctx.Threads())-1)/max(1, ctx.Threads())))
		units := (p.N + per - 1) / per
		groupOf := func(m int) (band, bool) {
			cd.N, pd.N = m, m
			conv, err1 := cp.conv.Get(cd, 1)
			pool, err2 := cp.pool.Get(pd, 1)
			return band{conv: conv, pool: pool, in1: m * inImg, out1: m * outImg, rows: m * convImg}, err1 == nil && err2 == nil
		}
		full, ok1 := groupOf(per)
		last, ok2 := groupOf(p.N - (units-1)*per)
		if !ok1 || !ok2 {
			return false, nil // Get warned
		}
		groups := func(lo, hi int) func() error {
			return func() error {
				for u := lo; u < hi; u++ {
					b := full
					if u == units-1 {
						b = last
					}
					b.in0, b.in1 = u*per*inImg, u*per*inImg+b.in1
					b.out0, b.out1 = u*per*outImg, u*per*outImg+b.out1
					if err := run(b); err != nil {
						return err
					}
				}
				return nil
			}
		}
		cost := float64(per) * (convNs(cd) + poolNs(pd))
		return true, splitRun(ctx, units, cost, func(lo, hi int) (func() error, bool) { return groups(lo, hi), true }, groups(0, units))
	}
	// One image: bands of pooled rows.
	bandOf := func(lo, hi int) (band, bool) {
		pp, ok := partOf(pg, lo, hi)
		if !ok {
			return band{}, false
		}
		cpt, ok := partOf(cg, pp.in0/pg.inRow, pp.in1/pg.inRow) // the convolution's rows the pool reads
		if !ok {
			return band{}, false
		}
		conv, err1 := cp.conv.Get(convPart(cd, cpt), 1)
		pool, err2 := cp.pool.Get(poolPart(pd, pp), 1)
		return band{conv: conv, pool: pool, in0: cpt.in0, in1: cpt.in1, out0: pp.out0, out1: pp.out1, rows: pp.in1 - pp.in0},
			err1 == nil && err2 == nil
	}
	whole, ok := bandOf(0, pg.oh)
	if !ok {
		return false, nil // Get warned
	}
	units, rows := bands(ctx, pg.oh)
	return true, splitRun(ctx, units, (convNs(cd)+poolNs(pd))/float64(max(units, 1)), func(lo, hi int) (func() error, bool) {
		b, ok := bandOf(rows(lo), rows(hi))
		return func() error { return run(b) }, ok
	}, func() error { return run(whole) })
}
