package cpu_test

import (
	"testing"

	"mstream/kernels/cpu/dnnl/dnnltest"
)

// TestMain loads oneDNN as a session would with scripts/venv.sh's
// MSTREAM_DNNL, so that the conformance suite checks the kernels that use
// it; MSTREAM_DNNL=off checks mstream's own instead.
func TestMain(m *testing.M) { dnnltest.Main(m, "../..", "kernels/cpu") }
