package cpu

import (
	"testing"

	"mstream/proto/tfpb"
	"mstream/tensor"
)

// TestConcatAxisWording pins the out-of-range axis messages that the CPU
// and GPU kernels share through ConcatArgs: Concat's is TF's ConcatOp
// wording, ConcatV2's the one both kernels had before they shared it.
func TestConcatAxisWording(t *testing.T) {
	r := newRand(t)
	a, _ := randTensor(r, tensor.Float, tensor.Shape{2, 3})
	b, _ := randTensor(r, tensor.Float, tensor.Shape{2, 3})
	f := tensor.Float
	n1 := node("Concat", map[string]*tfpb.AttrValue{"N": aInt(2), "T": aType(tensor.Float)}, []tensor.DType{i32, f, f}, f)
	_, err := run(t, n1, tensor.ScalarI32(2), a, b)
	wantErr(t, err, n1, "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 2")
	_, err = run(t, n1, tensor.ScalarI32(-3), a, b)
	wantErr(t, err, n1, "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got -3")
	n2 := node("ConcatV2", map[string]*tfpb.AttrValue{"N": aInt(2), "T": aType(tensor.Float)}, []tensor.DType{f, f, i32}, f)
	_, err = run(t, n2, a, b, tensor.ScalarI32(2))
	wantErr(t, err, n2, "axis 2 is out of range [-2, 2)")
	// In range, both give the same concatenation along axis 1.
	o1 := mustRun(t, n1, tensor.ScalarI32(-1), a, b)[0]
	o2 := mustRun(t, n2, a, b, tensor.ScalarI32(1))[0]
	if !o1.Shape.Equal(tensor.Shape{2, 6}) || !o2.Shape.Equal(o1.Shape) {
		t.Fatalf("shapes %v, %v, want [2 6]", o1.Shape, o2.Shape)
	}
	for i := 0; i < 12; i++ {
		row, col := i/6, i%6
		src := a
		if col >= 3 {
			src, col = b, col-3
		}
		want := src.F32()[row*3+col]
		if o1.F32()[i] != want || o2.F32()[i] != want {
			t.Fatalf("element %d: Concat %v, ConcatV2 %v, want %v", i, o1.F32()[i], o2.F32()[i], want)
		}
	}
}

// TestGatherBatchDimsWording pins GatherArgs' batch_dims message, which
// names the attr as given (TF's wording), not its normalised value.
func TestGatherBatchDimsWording(t *testing.T) {
	r := newRand(t)
	p, _ := randTensor(r, tensor.Float, tensor.Shape{2, 3})
	idx := tensor.FromI32(tensor.Shape{2, 1}, []int32{0, 2})
	n := node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(-3)}, []tensor.DType{tensor.Float, i32, i32}, tensor.Float)
	_, err := run(t, n, p, idx, tensor.ScalarI32(1))
	wantErr(t, err, n, "Expected batch_dims in the range [-2, 2], but got -3")
	n = node("GatherV2", map[string]*tfpb.AttrValue{"batch_dims": aInt(-1)}, []tensor.DType{tensor.Float, i32, i32}, tensor.Float)
	o := mustRun(t, n, p, idx, tensor.ScalarI32(1))[0]
	if !o.Shape.Equal(tensor.Shape{2, 1}) || o.F32()[0] != p.F32()[0] || o.F32()[1] != p.F32()[5] {
		t.Fatalf("batch_dims -1: got %v %v, want [2 1] [%v %v]", o.Shape, o.F32(), p.F32()[0], p.F32()[5])
	}
}
