package cpu

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"mstream/kernels/cpu/dnnl"
)

// TestMain loads oneDNN as a session would with scripts/venv.sh's
// MSTREAM_DNNL (the onednn-cpu-gomp wheel in build/venv/lib), so that the
// conformance suite checks the kernels that use it; MSTREAM_DNNL=off checks
// mstream's own instead.
func TestMain(m *testing.M) {
	path := os.Getenv("MSTREAM_DNNL")
	if path == "" {
		if libs, _ := filepath.Glob("../../build/venv/lib/libdnnl.so.3"); len(libs) > 0 {
			path = libs[0]
		}
	}
	in, err := dnnl.Load(dnnl.Options{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernels/cpu test:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "kernels/cpu test:", in)
	os.Exit(m.Run())
}
