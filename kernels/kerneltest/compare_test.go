package kerneltest

import (
	"math"
	"strings"
	"testing"

	"mstream/tensor"
)

// TestCompareScaled: the H100's TanhGrad element (dy = 60000, |y| near 1,
// -16.835939 against -16.837120) fails the float tolerance relative to
// the result and passes relative to the operands' magnitude, which is
// ignored where it is not finite.
func TestCompareScaled(t *testing.T) {
	got := tensor.FromF32(tensor.Shape{2}, []float32{-16.835939, 2})
	want := tensor.FromF32(tensor.Shape{2}, []float32{-16.837120, 2.5})
	y := 1.0001403
	scale := []float64{60000 * (1 + y*y), math.Inf(1)}
	if err := Compare(got, want, 0); err == nil {
		t.Error("Compare passed a 7e-5 relative error at float's 1e-5")
	}
	err := CompareScaled(got, want, 0, scale)
	if err == nil {
		t.Fatal("CompareScaled passed element 1 (2 for 2.5) under an infinite scale")
	}
	if want := "1 of 2 elements differ"; !strings.Contains(err.Error(), want) {
		t.Errorf("CompareScaled: %v, want %q (element 0 within the scaled tolerance)", err, want)
	}
	scale[1] = 0
	got.Buf = tensor.FromF32(tensor.Shape{2}, []float32{-16.835939, 2.5}).Buf
	if err := CompareScaled(got, want, 0, scale); err != nil {
		t.Errorf("CompareScaled: %v", err)
	}
}
