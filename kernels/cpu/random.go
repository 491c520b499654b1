package cpu

import (
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"

	"mstream/graph"
	"mstream/kernels"
	"mstream/tensor"
)

// Random ops with TF's seed contract: RandomUniform, RandomStandardNormal,
// TruncatedNormal, RandomUniformInt.
//
// Each kernel owns a Philox4x32-10 stream keyed by (seed, seed2) as TF's
// GuardedPhiloxRandom is: with either seed nonzero, a freshly built kernel
// always produces the same sequence of outputs (its first call the same
// values every time, its second call the next values, ...); with both
// zero the key is drawn at random, so every kernel differs. A call
// reserves a range of Philox blocks with one atomic add, which is the only
// state a random kernel changes; concurrent calls get disjoint ranges.
// Element j of a call reads a block that depends only on j and the
// reservation, never on how ctx.For splits the work, so results do not
// depend on the pool. The streams are not bit-identical to TF's.
// randomargs.go holds the checks and the reservation, which the GPU
// kernels share (cpu.RandomStream).

func init() {
	floats := []tensor.DType{tensor.Float, tensor.Double, tensor.Half, tensor.Bfloat16}
	for _, op := range []string{"RandomUniform", "RandomStandardNormal", "TruncatedNormal"} {
		dist := map[string]int{"RandomUniform": distUniform, "RandomStandardNormal": distNormal, "TruncatedNormal": distTruncated}[op]
		kernels.Register(kernels.Def{Op: op, Device: kernels.CPU, TypeAttr: "dtype", Types: floats, HostMemory: []string{"shape"},
			Factory: func(n *graph.Node) (kernels.Kernel, error) { return newRandomKernel(n, dist), nil }})
	}
	kernels.Register(kernels.Def{Op: "RandomUniformInt", Device: kernels.CPU, TypeAttr: "Tout", Types: []tensor.DType{tensor.Int32, tensor.Int64},
		HostMemory: []string{"shape"}, Factory: func(n *graph.Node) (kernels.Kernel, error) { return newRandomKernel(n, distInt), nil }})
}

const (
	distUniform = iota
	distNormal
	distTruncated
	distInt
)

// truncBlocks is the number of Philox blocks set aside for each element of
// TruncatedNormal: two normals per block, each kept with probability
// 0.954, so 16 blocks run out with probability about 1e-43.
const truncBlocks = 16

type randomKernel struct {
	key  [2]uint32
	hi   [2]uint32     // counter words 2 and 3: seed2, as in TF
	next atomic.Uint64 // first unreserved block
	dist int
}

func newRandomKernel(n *graph.Node, dist int) *randomKernel {
	seed, seed2 := attrInt(n, "seed", 0), attrInt(n, "seed2", 0)
	if seed == 0 && seed2 == 0 {
		var b [16]byte
		if _, err := crand.Read(b[:]); err == nil {
			seed, seed2 = int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:]))
		}
	}
	return &randomKernel{key: [2]uint32{uint32(seed), uint32(uint64(seed) >> 32)},
		hi: [2]uint32{uint32(seed2), uint32(uint64(seed2) >> 32)}, dist: dist}
}

// philox is one Philox4x32-10 block for a 64-bit block index.
func (k *randomKernel) philox(block uint64) [4]uint32 {
	c := [4]uint32{uint32(block), uint32(block >> 32), k.hi[0], k.hi[1]}
	key := k.key
	for r := 0; r < 10; r++ {
		h0, l0 := bits.Mul32(0xD2511F53, c[0])
		h1, l1 := bits.Mul32(0xCD9E8D57, c[2])
		c = [4]uint32{h1 ^ c[1] ^ key[0], l1, h0 ^ c[3] ^ key[1], l0}
		key[0] += 0x9E3779B9
		key[1] += 0xBB67AE85
	}
	return c
}

// u01f is a float32 uniform in [0, 1) from 23 random bits.
func u01f(x uint32) float32 { return math.Float32frombits(127<<23|x&0x7fffff) - 1 }

// u01d is a float64 uniform in [0, 1) from 52 random bits.
func u01d(a, b uint32) float64 {
	return math.Float64frombits(1023<<52|(uint64(a)<<32|uint64(b))&(1<<52-1)) - 1
}

// boxMuller turns two uniforms into two standard normals.
func boxMuller(u1, u2 float64) (float64, float64) {
	if u1 < 1e-300 {
		u1 = 1e-300
	}
	r := math.Sqrt(-2 * math.Log(u1))
	s, c := math.Sincos(2 * math.Pi * u2)
	return r * s, r * c
}

func (k *randomKernel) Compute(ctx *kernels.Context) error {
	d, err := k.draw(ctx)
	if err != nil {
		return err
	}
	o, per, base, lo, span := d.Out, d.Per, d.Base, d.Lo, d.Span
	n := int(o.NumElements())
	if n == 0 {
		return nil
	}
	dt := o.DType
	var f32 []float32
	switch dt {
	case tensor.Half, tensor.Bfloat16:
		f32 = make([]float32, n)
	case tensor.Float:
		f32 = o.F32()
	}
	ctx.For(n, 30, kernels.StartLoop, func(from, to int) {
		for j := from; j < to; j++ {
			if k.dist == distTruncated {
				v := k.truncated(base+uint64(j)*truncBlocks, dt == tensor.Double)
				if dt == tensor.Double {
					o.F64()[j] = v
				} else {
					f32[j] = float32(v)
				}
				continue
			}
			b := k.philox(base + uint64(j/per))
			lane := j % per
			switch k.dist {
			case distUniform:
				switch dt {
				case tensor.Double:
					o.F64()[j] = u01d(b[2*lane], b[2*lane+1])
				case tensor.Half:
					// 10 random mantissa bits: k/1024, exact in half.
					f32[j] = math.Float32frombits(127<<23|(b[lane]&0x3ff)<<13) - 1
				case tensor.Bfloat16:
					f32[j] = math.Float32frombits(127<<23|(b[lane]&0x7f)<<16) - 1
				default:
					f32[j] = u01f(b[lane])
				}
			case distNormal:
				z0, z1 := boxMuller(u01d(b[0], b[1]), u01d(b[2], b[3]))
				z := z0
				if lane == 1 {
					z = z1
				}
				if dt == tensor.Double {
					o.F64()[j] = z
				} else {
					f32[j] = float32(z)
				}
			case distInt:
				if dt == tensor.Int32 {
					o.I32()[j] = int32(uint32(lo) + b[lane]%uint32(span))
				} else {
					x := uint64(b[2*lane])<<32 | uint64(b[2*lane+1])
					o.I64()[j] = int64(lo + x%span)
				}
			}
		}
	})
	if dt == tensor.Half || dt == tensor.Bfloat16 {
		storeF32(o, f32)
	}
	return nil
}

// truncated draws normals from the element's own blocks until one lies
// within two standard deviations, as TF's TruncatedNormal does.
func (k *randomKernel) truncated(first uint64, double bool) float64 {
	for i := uint64(0); ; i++ {
		b := k.philox(first + i%truncBlocks + i/truncBlocks*(1<<40))
		z0, z1 := boxMuller(u01d(b[0], b[1]), u01d(b[2], b[3]))
		for _, z := range []float64{z0, z1} {
			if !double {
				z = float64(float32(z))
			}
			if math.Abs(z) <= 2 {
				return z
			}
		}
	}
}
