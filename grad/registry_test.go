package grad

import (
	"os"
	"strings"
	"testing"
)

// notYet are the ops TF's C++ registry has a gradient for and this package
// does not, each with the reason: the op itself does not run here, or
// needs what is not built yet. TF_AddGradients through one of them fails
// with TF's NOT_FOUND "No gradient defined for op".
var notYet = map[string]string{
	"Angle": "complex", "Complex": "complex", "Conj": "complex", "Imag": "complex", "Real": "complex",
	"AvgPool3D": "no 3-D pooling kernels", "MaxPool3D": "no 3-D pooling kernels",
	"CropAndResize": "no kernel", "ResizeBicubic": "no kernel", "ScaleAndTranslate": "no kernel",
	"ResizeBilinear": "no ResizeBilinearGrad kernel", "ResizeNearestNeighbor": "no ResizeNearestNeighborGrad kernel",
	"LRN": "no LRNGrad kernel", "MaxPoolV2": "no MaxPoolGradV2 kernel",
	"FractionalAvgPool": "no kernel", "FractionalMaxPool": "no kernel",
	"Diag": "no kernel", "DiagPart": "no kernel", "MatrixDiag": "no kernel (MatrixDiagV3 runs)",
	"MirrorPadGrad": "no kernel", "ReverseSequence": "no kernel", "Roll": "no kernel",
	"SegmentSum": "no kernel", "UnsortedSegmentMax": "no kernel", "UnsortedSegmentMin": "no kernel",
	"ScatterNdNonAliasingAdd": "no kernel", "Erfinv": "no kernel", "Ndtri": "no kernel", "Lgamma": "no kernel",
	"QuantizeAndDequantize": "no kernel", "QuantizeAndDequantizeV3": "no kernel", "QuantizeAndDequantizeV4": "no kernel",
	"DynamicPartition": "not yet", "Einsum": "not yet",
}

// TestRegistryCoversTF checks the registry against TF 2.15's C++ one
// (testdata/tf_cc_gradients.txt, written by testdata/tfccgrads.sh from
// TF's source): every op TF registers is here, as a gradient or as
// NoGradient alike, unless notYet names it; notYet lists only ops still
// missing.
func TestRegistryCoversTF(t *testing.T) {
	raw, err := os.ReadFile("testdata/tf_cc_gradients.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		kind, op, _ := strings.Cut(line, " ")
		n++
		f, ok := registry[op]
		_, skip := notYet[op]
		switch {
		case ok && skip:
			t.Errorf("%s has a gradient now: take it out of notYet", op)
		case !ok && !skip:
			t.Errorf("TF's C++ registers a gradient for %s (%s) and grad does not", op, kind)
		case ok && (kind == "N") != (f == nil):
			t.Errorf("%s: TF's C++ registers %s, grad the other kind", op, map[string]string{"G": "a gradient", "N": "NoGradient"}[kind])
		}
	}
	if n < 150 {
		t.Fatalf("only %d ops in testdata/tf_cc_gradients.txt", n)
	}
	t.Logf("%d ops in TF's C++ registry, %d not yet here; %d here", n, len(notYet), len(registry))
}
