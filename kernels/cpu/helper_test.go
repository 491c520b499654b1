package cpu

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"mstream/graph"
	"mstream/kernels"
	"mstream/proto/tfpb"
	"mstream/status"
	"mstream/tensor"
)

// pool is a Parallelizer that really splits work, so -race sees the
// concurrent paths.
type pool struct{}

func (pool) For(n int, cost, start float64, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunk := (n + 3) / 4
	done := make(chan struct{}, 4)
	k := 0
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		k++
		go func() { fn(lo, hi); done <- struct{}{} }()
	}
	for ; k > 0; k-- {
		<-done
	}
}

func newRand(t testing.TB) *rand.Rand {
	seed := time.Now().UnixNano()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed %d", seed)
		}
	})
	return rand.New(rand.NewSource(seed))
}

func aType(dt tensor.DType) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_Type{Type: tfpb.DataType(dt)}}
}
func aBool(b bool) *tfpb.AttrValue  { return &tfpb.AttrValue{Value: &tfpb.AttrValue_B{B: b}} }
func aInt(i int64) *tfpb.AttrValue  { return &tfpb.AttrValue{Value: &tfpb.AttrValue_I{I: i}} }
func aStr(s string) *tfpb.AttrValue { return &tfpb.AttrValue{Value: &tfpb.AttrValue_S{S: []byte(s)}} }
func aInts(v ...int64) *tfpb.AttrValue {
	return &tfpb.AttrValue{Value: &tfpb.AttrValue_List{List: &tfpb.AttrValue_ListValue{I: v}}}
}

// node builds a node by hand: T defaults to the first input's dtype.
func node(op string, attrs map[string]*tfpb.AttrValue, in []tensor.DType, out ...tensor.DType) *graph.Node {
	if attrs == nil {
		attrs = map[string]*tfpb.AttrValue{}
	}
	if _, ok := attrs["T"]; !ok && len(in) > 0 {
		attrs["T"] = aType(in[0])
	}
	return &graph.Node{Name: "n_" + strings.ToLower(op), Op: op, Attrs: attrs, InTypes: in, OutTypes: out}
}

// run builds the node's kernel through the registry and computes it.
func run(t testing.TB, n *graph.Node, in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	t.Helper()
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		return nil, err
	}
	ctx := &kernels.Context{Node: n, Inputs: in, Outputs: make([]*tensor.Tensor, len(n.OutTypes)), Pool: pool{}}
	if err := k.Compute(ctx); err != nil {
		return nil, err
	}
	for i, o := range ctx.Outputs {
		if o == nil {
			t.Fatalf("%s: output %d not set", n.Op, i)
		}
		if err := o.Check(); err != nil {
			t.Fatalf("%s: output %d: %v", n.Op, i, err)
		}
	}
	return ctx.Outputs, nil
}

func mustRun(t testing.TB, n *graph.Node, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	out, err := run(t, n, in...)
	if err != nil {
		t.Fatalf("%s: %v", n.Op, err)
	}
	return out
}

// wantErr checks the code and that the message names the node and contains sub.
func wantErr(t *testing.T, err error, n *graph.Node, sub string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: want error containing %q, got none", n.Op, sub)
	}
	if c := status.CodeOf(err); c != status.InvalidArgument {
		t.Errorf("%s: code %v, want INVALID_ARGUMENT: %v", n.Op, c, err)
	}
	if !strings.Contains(err.Error(), n.Name) || !strings.Contains(err.Error(), sub) {
		t.Errorf("%s: error %q should name node %q and contain %q", n.Op, err, n.Name, sub)
	}
}

// randTensor fills a tensor of dtype dt with random values from a float64
// reference slice that it returns (already rounded to the dtype).
func randTensor(r *rand.Rand, dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, []float64) {
	t := tensor.New(dt, shape)
	n := int(t.NumElements())
	ref := make([]float64, n)
	for i := range ref {
		v := r.NormFloat64() * 3
		switch dt {
		case tensor.Float:
			t.F32()[i] = float32(v)
			ref[i] = float64(float32(v))
		case tensor.Double:
			t.F64()[i] = v
			ref[i] = v
		case tensor.Half:
			h := tensor.F32ToHalf(float32(v))
			t.U16()[i] = h
			ref[i] = float64(tensor.HalfToF32(h))
		case tensor.Bfloat16:
			h := tensor.F32ToBfloat16(float32(v))
			t.U16()[i] = h
			ref[i] = float64(tensor.Bfloat16ToF32(h))
		case tensor.Int32:
			t.I32()[i] = int32(v * 10)
			ref[i] = float64(int32(v * 10))
		case tensor.Int64:
			t.I64()[i] = int64(v * 10)
			ref[i] = float64(int64(v * 10))
		case tensor.Int16:
			t.I16()[i] = int16(v * 3)
			ref[i] = float64(int16(v * 3))
		case tensor.Int8:
			t.I8()[i] = int8(v)
			ref[i] = float64(int8(v))
		case tensor.Uint8:
			t.U8()[i] = uint8(r.Intn(16))
			ref[i] = float64(t.U8()[i])
		case tensor.Uint16:
			t.U16()[i] = uint16(r.Intn(100))
			ref[i] = float64(t.U16()[i])
		case tensor.Uint32:
			t.U32()[i] = uint32(r.Intn(100))
			ref[i] = float64(t.U32()[i])
		case tensor.Uint64:
			t.U64()[i] = uint64(r.Intn(100))
			ref[i] = float64(t.U64()[i])
		}
	}
	return t, ref
}

func tol(dt tensor.DType) float64 {
	switch dt {
	case tensor.Float:
		return 1e-5
	case tensor.Double:
		return 1e-12
	case tensor.Half:
		return 2e-3
	case tensor.Bfloat16:
		return 1.6e-2
	}
	return 0
}

// roundTo rounds a float64 reference value to what dtype dt can hold.
func roundTo(dt tensor.DType, v float64) float64 {
	switch dt {
	case tensor.Float:
		return float64(float32(v))
	case tensor.Half:
		return float64(tensor.HalfToF32(tensor.F32ToHalf(float32(v))))
	case tensor.Bfloat16:
		return float64(tensor.Bfloat16ToF32(tensor.F32ToBfloat16(float32(v))))
	case tensor.Int32:
		return float64(int32(int64(v)))
	case tensor.Int64:
		return float64(int64(v))
	case tensor.Int16:
		return float64(int16(int64(v)))
	case tensor.Int8:
		return float64(int8(int64(v)))
	case tensor.Uint8:
		return float64(uint8(int64(v)))
	case tensor.Uint16:
		return float64(uint16(int64(v)))
	case tensor.Uint32:
		return float64(uint32(int64(v)))
	case tensor.Uint64:
		return float64(uint64(int64(v)))
	}
	return v
}

// check compares a tensor with a float64 reference using a relative
// tolerance scaled by magnitude (scale: the typical magnitude of the terms
// that were summed to form each value).
func check(t *testing.T, what string, got *tensor.Tensor, shape tensor.Shape, want []float64, scale float64) {
	t.Helper()
	if !got.Shape.Equal(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if int(got.NumElements()) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, got.NumElements(), len(want))
	}
	tl := tol(got.DType)
	for i, w := range want {
		g := got.ElementF64(i)
		if math.IsNaN(w) {
			if !math.IsNaN(g) {
				t.Fatalf("%s[%d] = %v, want NaN", what, i, g)
			}
			continue
		}
		if math.Abs(g-w) > tl*(math.Abs(w)+scale)+1e-300 && !(tl == 0 && g == w) {
			t.Fatalf("%s (%v)[%d] = %v, want %v", what, got.DType, i, g, w)
		}
	}
}

// cpuKernel is node n's CPU kernel, made as a plan makes it.
func cpuKernel(tb testing.TB, n *graph.Node) kernels.Kernel {
	tb.Helper()
	k, err := kernels.Make(n, kernels.CPU)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
