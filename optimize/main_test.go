package optimize_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"mstream/kernels/cpu/dnnl"
)

// TestMain loads oneDNN as a session would with scripts/venv.sh's
// MSTREAM_DNNL (the wheel in build/venv/lib) before any session does (the
// first Load in a process decides), so that rewritten plans run the
// kernels users' plans run: the convolutions of a _FusedConv2D whose
// filter is constant keep it packed between Runs only there.
// MSTREAM_DNNL=off runs mstream's own kernels instead.
func TestMain(m *testing.M) {
	path := os.Getenv("MSTREAM_DNNL")
	if path == "" {
		if libs, _ := filepath.Glob("../build/venv/lib/libdnnl.so.3"); len(libs) > 0 {
			path = libs[0]
		}
	}
	if _, err := dnnl.Load(dnnl.Options{Path: path}); err != nil {
		fmt.Fprintln(os.Stderr, "optimize test:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
