package cpu

import (
	"fmt"
	"math"
	"sync"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/cpu/vec"
	"mstream/status"
	"mstream/tensor"
)

// _MstreamAttention is package optimize's fusion of a transformer's
// attention core without a mask (attention.go there): q [B, Sq, H, D],
// k [B, Sk, H, D] and v [B, Sk, H, Dv], the projections' outputs split
// into heads, give out [B, Sq, H, Dv] where, for each batch b and head h,
//
//	out[b, :, h, :] = softmax(scale q[b, :, h, :] k[b, :, h, :]^T) v[b, :, h, :]
//
// with scale_q the scale multiplies q before the product (Keras'
// MultiHeadAttention scales the query), else the scores (scale times
// BatchMatMul's product). Each (b, h) is a chunk of the intra-op pool: its
// two products read q, k and v where they lie (rows H*D apart) and write
// out in place, and its scores stay in cache from the first product
// through the softmax to the second, where the graph it replaces moved q,
// k, v and the context through four Transposes (or Einsum's strided
// views) and made three passes over every score tensor. With AVX-512 a
// chunk is one vec.Attention: k transposed once, then for each block of
// six query rows the scores in registers, their exponentials in L1 and
// the context, scaled by the softmax's 1 / sum once (within float32
// rounding of the graph, not its bits). Below it the products are the
// GEMM BatchMatMul and Einsum run (sgemm), the scale package vec's Mul
// and the softmax vec.Softmax, so the bits are the graph's. With
// broadcast (the BatchMatMulV2 form) a batch or head dimension of 1 in one
// operand broadcasts as BatchMatMulV2's batch dimensions do; the Einsum
// form needs them equal, as Einsum does. With packed, q, k and v are one
// tensor [B, S, 3H, D], the output of the three projections merged into
// one GEMM (package optimize): q is heads [0, H), k [H, 2H) and v
// [2H, 3H), each read in place as before.

func init() {
	reg("_MstreamAttention", []tensor.DType{tensor.Float}, nil, func(n *graph.Node) (kernels.Kernel, error) {
		a := &attentionAttrs{scale: [1]float32{attrFloat(n, "scale", 1)}, scaleQ: attrBool(n, "scale_q"), broadcast: attrBool(n, "broadcast"), packed: attrBool(n, "packed")}
		return fusedKernel(n, func(ctx *kernels.Context) error { return attention(ctx, a) }), nil
	})
}

// attentionFlopsPerNs is about what one core makes of a (batch, head):
// vec.Attention's two products with the softmax between them (or, below
// AVX-512, two small GEMMs that pack their B as they go). BenchmarkAttention
// (4 heads of 32 over 64 tokens), CPU time at load 8 on 2 cores: 32 us at
// B=1, 546 us at B=16, 8-8.5 us for each (batch, head)'s 0.56 Mflop,
// about 67 flop/ns (the GEMMs took 48 and 800 us, 45 flop/ns). The
// packed GEMM's rate (packedFlopsPerNs, 100) would make B=1's four heads
// look like 22 us, too little for the pool to split.
const attentionFlopsPerNs = 67

type attentionAttrs struct {
	scale             [1]float32 // MapBinary's one-element operand, kept here: no allocation per call
	scaleQ, broadcast bool
	packed            bool // q, k and v side by side along one tensor's heads
}

// attentionScratch holds the chunks' score buffers between Runs
// (*[]float32): fresh ones on every call cost page faults as the Go heap
// grew into untouched memory (8% of the transformer's samples at B=1).
// One pool for every kernel, which owns nothing: a pool field kept its
// kernel alive a collection past its plan.
var attentionScratch sync.Pool

// attentionDim is the output's size of dimension ax (batch or heads) of
// q, k and v, which must agree (or, with broadcast, be 1).
func attentionDim(ts [3]*tensor.Tensor, ax int, broadcast bool) (int64, bool) {
	d := ts[0].Shape[ax]
	for _, t := range ts[1:] {
		switch s := t.Shape[ax]; {
		case s == d:
		case broadcast && d == 1:
			d = s
		case broadcast && s == 1:
		default:
			return 0, false
		}
	}
	return d, true
}

func attention(ctx *kernels.Context, a *attentionAttrs) error {
	ts := [3]*tensor.Tensor{ctx.Input(0), ctx.Input(1), ctx.Input(2)}
	q, k, v := ts[0], ts[1], ts[2]
	if len(q.Shape) != 4 || len(k.Shape) != 4 || len(v.Shape) != 4 {
		return ctx.Errorf(status.InvalidArgument, "attention needs 4-D [batch, seq, heads, depth] query, key and value, got %v, %v and %v", q.Shape, k.Shape, v.Shape)
	}
	// With packed, the heads of k and v follow q's in the one tensor.
	kOff, vOff := 0, 0
	if a.packed {
		// The plan passes the one tensor three times; input 0 is read.
		if !q.Shape.Equal(k.Shape) || !q.Shape.Equal(v.Shape) || q.Shape[2]%3 != 0 {
			return ctx.Errorf(status.InvalidArgument, "packed attention needs one [batch, seq, 3 x heads, depth] tensor as query, key and value, got %v, %v and %v", q.Shape, k.Shape, v.Shape)
		}
		ts[1], ts[2], k, v = q, q, q, q
		kOff, vOff = int(q.Shape[2]/3), int(2*q.Shape[2]/3)
	}
	nb, okB := attentionDim(ts, 0, a.broadcast)
	nh, okH := attentionDim(ts, 2, a.broadcast)
	if a.packed {
		nh /= 3
	}
	if !okB || !okH || q.Shape[3] != k.Shape[3] || k.Shape[1] != v.Shape[1] {
		return ctx.Errorf(status.InvalidArgument, "attention's query %v, key %v and value %v do not agree: batch and heads (dims 0 and 2) must match%s, query and key depth (dim 3), key and value length (dim 1)",
			q.Shape, k.Shape, v.Shape, map[bool]string{true: " or be 1", false: ""}[a.broadcast])
	}
	sq, sk, d, dv := int(q.Shape[1]), int(k.Shape[1]), int(q.Shape[3]), int(v.Shape[3])
	o, err := ctx.Allocate(0, tensor.Shape{nb, int64(sq), nh, int64(dv)})
	if err != nil || o.NumElements() == 0 {
		return err
	}
	out := o.F32()
	if sk == 0 {
		clear(out) // softmax of no scores times no values
		return nil
	}
	H := int(nh)
	// The start of (b, h)'s matrix in t and its row stride: a dimension
	// of 1 broadcasts.
	at := func(t *tensor.Tensor, b, h int) ([]float32, int) {
		th, rows, depth := int(t.Shape[2]), int(t.Shape[1]), int(t.Shape[3])
		if t.Shape[0] == 1 {
			b = 0
		}
		if th == 1 {
			h = 0
		}
		return t.F32()[(b*rows*th+h)*depth:], th * depth
	}
	scale := a.scale[:]
	// Each chunk takes scores and probabilities (and the scaled query) as
	// scratch outside the allocator: check the most that may be held at
	// once against the device's limit, as the unfused graph's tensors are.
	held := nb * nh // a pool that does not say its size may run every chunk at once
	if t := int64(ctx.Threads()); t > 0 {
		held = min(t, held)
	}
	// With AVX-512 a chunk holds k transposed and one block of rows'
	// scores (vec.Attention), else all its scores and probabilities.
	fused := vec.CurrentLevel() >= vec.AVX512
	need64, ok := int64(0), int64(sq) <= math.MaxInt64/8/int64(sk)/held // sk > 0 here
	if fused {
		need64 = int64(vec.AttentionScratch(sk, d)) // within a few rows of k's size
		ok = need64 <= math.MaxInt64/4/held
	} else if ok {
		need64 = 2 * int64(sq) * int64(sk)
		if a.scaleQ {
			need64 += int64(sq) * int64(d)
		}
		ok = need64 <= math.MaxInt64/4/held
	}
	what := func() string {
		if fused {
			return fmt.Sprintf("attention scratch for %d keys of depth %d of %d of %d batch x heads at once", sk, d, held, nb*nh)
		}
		return fmt.Sprintf("attention scratch for scores [%d, %d] of %d of %d batch x heads at once", sq, sk, held, nb*nh)
	}
	if !ok {
		return ctx.Errorf(status.ResourceExhausted, "OOM when allocating %s: the size overflows", what())
	}
	if err := ctx.Limit.Check(need64*held, 4, what); err != nil {
		return ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	need := int(need64)
	flops := 2*float64(sq)*float64(sk)*float64(d+dv) + 8*float64(sq)*float64(sk)
	ctx.For(int(nb)*H, flops/attentionFlopsPerNs, kernels.StartLoop, func(lo, hi int) {
		buf, _ := attentionScratch.Get().(*[]float32)
		if buf == nil || cap(*buf) < need {
			b := make([]float32, need)
			buf = &b
		}
		defer attentionScratch.Put(buf)
		for i := lo; i < hi && fused; i++ {
			b, h := i/H, i%H
			qm, ldq := at(q, b, h)
			km, ldk := at(k, b, h+kOff)
			vm, ldv := at(v, b, h+vOff)
			if !vec.Attention(sq, sk, d, dv, qm, ldq, km, ldk, vm, ldv, out[(b*sq*H+h)*dv:], H*dv, a.scale[0], a.scaleQ, *buf) {
				// Sized for the fused kernel, the scratch cannot take the
				// GEMM path: only vec.SetLevel (tests) between the two
				// reads of the level gets here. A panic becomes the step's
				// error; an output left unwritten would not.
				panic("attention: the fused kernel refused a call it was sized for (the vector level changed during the Run)")
			}
		}
		if fused {
			return
		}
		s, p, qs := (*buf)[:sq*sk], (*buf)[sq*sk:2*sq*sk], (*buf)[2*sq*sk:need]
		for i := lo; i < hi; i++ {
			b, h := i/H, i%H
			qm, ldq := at(q, b, h)
			km, ldk := at(k, b, h+kOff)
			vm, ldv := at(v, b, h+vOff)
			if a.scaleQ {
				for r := 0; r < sq; r++ {
					vec.MapBinary(vec.Mul, qm[r*ldq:r*ldq+d], scale, qs[r*d:(r+1)*d], 1, 0)
				}
				qm, ldq = qs, d
			}
			if d == 0 {
				clear(s) // no depth: every score is 0 (BLAS refuses lda 0)
			} else {
				sgemm(false, true, sq, sk, d, 1, qm, ldq, km, ldk, 0, s, sk)
			}
			if !a.scaleQ && a.scale[0] != 1 { // x*1 is x: no pass for an unscaled form
				vec.MapBinary(vec.Mul, s, scale, p, 1, 0)
				s, p = p, s
			}
			vec.Softmax(s, p, sk, false)
			sgemm(false, false, sq, dv, sk, 1, p, sk, vm, ldv, 0, out[(b*sq*H+h)*dv:], H*dv)
		}
	})
	return nil
}
