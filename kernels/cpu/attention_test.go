package cpu

import (
	"testing"

	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/tensor"
)

// splitPool is lonePool cut as exec.Intra cuts a loop while a worker
// spins (at one client thread, right after a split kernel: chunks of at
// least 5 us, two a thread of two, from 10 us up), recording how many
// chunks each For made.
type splitPool struct{ chunks []int }

func (*splitPool) Threads() int { return 2 }

func (p *splitPool) For(n int, cost, start float64, fn func(lo, hi int)) {
	c := 1
	if total := float64(n) * cost; total >= 10000 {
		c = int(min(total/5000, float64(min(4, n))))
	}
	p.chunks = append(p.chunks, c)
	lonePool{}.For(n, cost, start, fn)
}

// TestAttentionSplits: the transformers' attention at one row (B=1, 4
// heads of 32 over 64 tokens: about 32 us of CPU, BenchmarkAttention) is
// costed high enough that a pool of two splits it, a head a chunk, and
// the split output is the unsplit one's, bit for bit.
func TestAttentionSplits(t *testing.T) {
	r := newRand(t)
	shape := tensor.Shape{1, 64, 4, 32}
	var in []*tensor.Tensor
	for range 3 {
		x, _ := randTensor(r, f32, shape)
		in = append(in, x)
	}
	n := node("_MstreamAttention", map[string]*tfpb.AttrValue{"scale": {Value: &tfpb.AttrValue_F{F: 0.18}}, "scale_q": aBool(true)}, []tensor.DType{f32, f32, f32}, f32)
	split := &splitPool{}
	var outs [2]*tensor.Tensor
	for i, pool := range []kernels.Parallelizer{nil, split} {
		ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, 1), Pool: pool}
		if err := attention(ctx, &attentionAttrs{scale: [1]float32{0.18}, scaleQ: true}); err != nil {
			t.Fatal(err)
		}
		outs[i] = ctx.Outputs[0]
	}
	if len(split.chunks) != 1 || split.chunks[0] != 4 {
		t.Errorf("the pool cut the attention into %v chunks, want 4", split.chunks)
	}
	for i, v := range outs[0].F32() {
		if outs[1].F32()[i] != v {
			t.Fatalf("[%d] = %g split, %g whole", i, outs[1].F32()[i], v)
		}
	}
}
