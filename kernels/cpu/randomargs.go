package cpu

import (
	"mstream/graph"
	"mstream/kernels"
	"mstream/status"
	"mstream/tensor"
)

// The random kernels' Philox stream, exported for the GPU kernels
// (kernels/cuda): a GPU kernel holds its own RandomStream, built from the
// node as the CPU kernel is, and draws from it with the same checks and
// the same block reservations, so for one (seed, seed2) the n-th call of
// a GPU kernel reads exactly the Philox blocks the n-th call of a CPU
// kernel reads. Only the transform of those blocks into values runs on
// the device.

// Random distributions, as RandomStream.Dist reports them.
const (
	RandomUniform   = distUniform
	RandomNormal    = distNormal
	RandomTruncated = distTruncated
	RandomInt       = distInt
)

// RandomTruncBlocks is the number of Philox blocks each TruncatedNormal
// element owns: its i-th draw reads block
// first + i%RandomTruncBlocks + (i/RandomTruncBlocks)<<40.
const RandomTruncBlocks = truncBlocks

// RandomStream is one random node's Philox4x32-10 stream: its key, the
// high counter words, and the count of blocks reserved so far.
type RandomStream struct{ k *randomKernel }

// NewRandomStream builds the stream for a RandomUniform,
// RandomStandardNormal, TruncatedNormal or RandomUniformInt node, keyed
// by its seed and seed2 attrs (fresh random key when both are 0).
func NewRandomStream(n *graph.Node) (*RandomStream, error) {
	dist, ok := map[string]int{"RandomUniform": distUniform, "RandomStandardNormal": distNormal,
		"TruncatedNormal": distTruncated, "RandomUniformInt": distInt}[n.Op]
	if !ok {
		return nil, nodeErr(n, status.InvalidArgument, "%s is not a random op", n.Op)
	}
	return &RandomStream{newRandomKernel(n, dist)}, nil
}

// Dist is the stream's distribution (RandomUniform, ...).
func (s *RandomStream) Dist() int { return s.k.dist }

// Key is the Philox key (seed's low and high words).
func (s *RandomStream) Key() [2]uint32 { return s.k.key }

// Hi is counter words 2 and 3 (seed2's low and high words); words 0 and
// 1 are the 64-bit block index.
func (s *RandomStream) Hi() [2]uint32 { return s.k.hi }

// RandomDraw is what one call of a random kernel fills: Out (allocated
// through the context, so a device tensor on the GPU), with Per values
// per Philox block starting at block Base (for TruncatedNormal, element
// j owns blocks from Base + j*RandomTruncBlocks); RandomUniformInt's
// values are Lo + x % Span, in uint64 arithmetic wrapped to the dtype.
type RandomDraw struct {
	Out      *tensor.Tensor
	Per      int
	Base     uint64
	Lo, Span uint64
}

// Draw validates a call's inputs (shape, and minval/maxval for
// RandomUniformInt, all host tensors), allocates the output and reserves
// the call's Philox blocks: the CPU kernel's own checks and reservation.
func (s *RandomStream) Draw(ctx *kernels.Context) (RandomDraw, error) { return s.k.draw(ctx) }

func (k *randomKernel) draw(ctx *kernels.Context) (RandomDraw, error) {
	st := ctx.Input(0)
	if len(st.Shape) != 1 {
		return RandomDraw{}, ctx.Errorf(status.InvalidArgument, "shape must be a vector of {int32,int64}, got shape %v", st.Shape)
	}
	dims, err := hostInts(ctx, 0, "shape")
	if err != nil {
		return RandomDraw{}, err
	}
	shape := tensor.Shape(dims)
	if err := shape.Validate(); err != nil {
		return RandomDraw{}, ctx.Errorf(status.InvalidArgument, "shape: %v", err)
	}
	var d RandomDraw
	if k.dist == distInt {
		mn, mx := ctx.Input(1), ctx.Input(2)
		if len(mn.Shape) != 0 {
			return RandomDraw{}, ctx.Errorf(status.InvalidArgument, "minval must be 0-D, got shape %v", mn.Shape)
		}
		if len(mx.Shape) != 0 {
			return RandomDraw{}, ctx.Errorf(status.InvalidArgument, "maxval must be 0-D, got shape %v", mx.Shape)
		}
		a, _ := mn.Int64s()
		b, _ := mx.Int64s()
		if shape.NumElements() > 0 && a[0] >= b[0] {
			return RandomDraw{}, ctx.Errorf(status.InvalidArgument, "Need minval < maxval: %d >= %d", a[0], b[0])
		}
		d.Lo, d.Span = uint64(a[0]), uint64(b[0])-uint64(a[0])
	}
	if d.Out, err = ctx.Allocate(0, shape); err != nil {
		return RandomDraw{}, err
	}
	n := d.Out.NumElements()
	if n == 0 {
		return d, nil
	}
	dt := d.Out.DType
	// Values per block: 4 for 32-bit uniforms, 2 for 64-bit ones and for
	// normals (one Box-Muller pair per block).
	d.Per = 2
	if k.dist == distUniform && dt != tensor.Double || k.dist == distInt && dt == tensor.Int32 {
		d.Per = 4
	}
	blocks := uint64((n + int64(d.Per) - 1) / int64(d.Per))
	if k.dist == distTruncated {
		blocks = uint64(n) * truncBlocks
	}
	d.Base = k.next.Add(blocks) - blocks
	return d, nil
}
