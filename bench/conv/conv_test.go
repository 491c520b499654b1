package conv

import (
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"mstream/exec"
	"mstream/kernels"
	_ "mstream/kernels/cpu"
	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// A layer is one convolution: NHWC input, KHxKW filter to O channels.
// Names match numpy_peer.py.
type layer struct {
	name             string
	n, h, w, c, k, o int
	stride           int
	padding          string
	depthwise        bool
}

var layers = []layer{
	{"resnet 3x3 56x56x64->64 b1", 1, 56, 56, 64, 3, 64, 1, "SAME", false},
	{"resnet 3x3 56x56x64->64 b8", 8, 56, 56, 64, 3, 64, 1, "SAME", false},
	{"resnet 1x1 56x56x256->64 b1", 1, 56, 56, 256, 1, 64, 1, "VALID", false},
	{"resnet 3x3 14x14x256->256 b1", 1, 14, 14, 256, 3, 256, 1, "SAME", false},
	{"stem 7x7/2 224x224x3->64 b1", 1, 224, 224, 3, 7, 64, 2, "SAME", false},
	{"mobilenet dw 3x3 112x112x32 b1", 1, 112, 112, 32, 3, 1, 1, "SAME", true},
}

func (l layer) out() (int, int) {
	if l.padding == "VALID" {
		return (l.h-l.k)/l.stride + 1, (l.w-l.k)/l.stride + 1
	}
	return (l.h + l.stride - 1) / l.stride, (l.w + l.stride - 1) / l.stride
}

// flops counts a multiply and an add per filter tap per output element.
func (l layer) flops() float64 {
	oh, ow := l.out()
	oc, cin := l.o, l.c
	if l.depthwise {
		oc, cin = l.c*l.o, 1
	}
	return 2 * float64(l.n*oh*ow*oc*l.k*l.k*cin)
}

func (l layer) inputs(r *rand.Rand) (x, f *tensor.Tensor) {
	x = kerneltest.RandRange(r, tensor.Float, tensor.Shape{int64(l.n), int64(l.h), int64(l.w), int64(l.c)}, -1, 1)
	fc, fo := l.c, l.o
	f = kerneltest.RandRange(r, tensor.Float, tensor.Shape{int64(l.k), int64(l.k), int64(fc), int64(fo)}, -1, 1)
	return x, f
}

// BenchmarkConv2D runs each layer through the registered kernel, with the
// intra-op pool (im2col) and OpenBLAS (GEMM) each using every CPU, and
// reports GFLOP/s.
func BenchmarkConv2D(b *testing.B) {
	filter := os.Getenv("LAYERS")
	for _, l := range layers {
		if filter != "" && !strings.Contains(l.name, filter) {
			continue
		}
		r := rand.New(rand.NewSource(1))
		x, f := l.inputs(r)
		op := "Conv2D"
		if l.depthwise {
			op = "DepthwiseConv2dNative"
		}
		s := int64(l.stride)
		node := kerneltest.NodeFor(op, kerneltest.Attrs{"strides": kerneltest.AInts(1, s, s, 1), "padding": kerneltest.AStr(l.padding)}, []*tensor.Tensor{x, f}, nil)
		k, err := kernels.Make(node, kernels.CPU)
		if err != nil {
			b.Fatal(err)
		}
		pool := exec.NewIntra(0)
		b.Run(strings.ReplaceAll("kernel/"+l.name, " ", "_"), func(b *testing.B) {
			ctx := &kernels.Context{Node: node, Inputs: []*tensor.Tensor{x, f}, Outputs: make([]*tensor.Tensor, 1), Pool: pool, Alloc: recycler()}
			if err := k.Compute(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := k.Compute(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(l.flops()*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
		})
		if l.depthwise {
			continue
		}
		b.Run(strings.ReplaceAll("direct/"+l.name, " ", "_"), func(b *testing.B) {
			xs, fs := x.F32(), f.F32()
			oh, ow := l.out()
			out := make([]float32, l.n*oh*ow*l.o)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				directConv(l, xs, fs, out)
			}
			b.ReportMetric(l.flops()*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
		})
	}
}

// directConv is the straightforward float32 convolution, loops ordered so
// the innermost runs along the filter's contiguous output channels. It is
// the peer that im2col + GEMM must beat, on one goroutine.
func directConv(l layer, x, f, out []float32) {
	oh, ow := l.out()
	pt, pl := 0, 0
	if l.padding == "SAME" {
		pt = max(0, (oh-1)*l.stride+l.k-l.h) / 2
		pl = max(0, (ow-1)*l.stride+l.k-l.w) / 2
	}
	for n := 0; n < l.n; n++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				acc := out[((n*oh+i)*ow+j)*l.o:][:l.o]
				for q := range acc {
					acc[q] = 0
				}
				for a := 0; a < l.k; a++ {
					y := i*l.stride - pt + a
					if y < 0 || y >= l.h {
						continue
					}
					for e := 0; e < l.k; e++ {
						xx := j*l.stride - pl + e
						if xx < 0 || xx >= l.w {
							continue
						}
						px := x[((n*l.h+y)*l.w+xx)*l.c:][:l.c]
						for c, v := range px {
							fr := f[((a*l.k+e)*l.c+c)*l.o:][:l.o]
							for q, w := range fr {
								acc[q] += v * w
							}
						}
					}
				}
			}
		}
	}
}

// TestDirectMatchesKernel keeps the peer honest: on a small layer the
// direct loop and the kernel agree.
func TestDirectMatchesKernel(t *testing.T) {
	l := layer{"small", 2, 9, 7, 5, 3, 6, 2, "SAME", false}
	r := rand.New(rand.NewSource(2))
	x, f := l.inputs(r)
	node := kerneltest.NodeFor("Conv2D", kerneltest.Attrs{"strides": kerneltest.AInts(1, 2, 2, 1), "padding": kerneltest.AStr("SAME")}, []*tensor.Tensor{x, f}, nil)
	def, _ := kernels.Lookup(node, kernels.CPU)
	k, _ := def.Factory(node)
	ctx := &kernels.Context{Node: node, Inputs: []*tensor.Tensor{x, f}, Outputs: make([]*tensor.Tensor, 1)}
	if err := k.Compute(ctx); err != nil {
		t.Fatal(err)
	}
	oh, ow := l.out()
	want := make([]float32, l.n*oh*ow*l.o)
	directConv(l, x.F32(), f.F32(), want)
	got := ctx.Outputs[0].F32()
	for i := range want {
		if d := got[i] - want[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("element %d: kernel %v, direct %v", i, got[i], want[i])
		}
	}
}

// recycler hands the previous call's output buffer back, as the session's
// allocator does once warm, so the benchmark measures the kernel rather
// than Go's allocator and page faults on a fresh buffer per call.
func recycler() func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	var last *tensor.Tensor
	return func(dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
		if last == nil || last.DType != dt || !last.Shape.Equal(shape) {
			last = tensor.New(dt, shape)
		}
		return &tensor.Tensor{DType: dt, Shape: shape.Clone(), Buf: last.Buf}, nil
	}
}
