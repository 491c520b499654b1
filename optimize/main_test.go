package optimize_test

import (
	"testing"

	"mstream/kernels/cpu/dnnl/dnnltest"
)

// TestMain loads oneDNN before any session does, so that rewritten plans
// run the kernels users' plans run: a _FusedConv2D whose filter is
// constant keeps it packed between Runs only there.
func TestMain(m *testing.M) { dnnltest.Main(m, "..", "optimize") }
