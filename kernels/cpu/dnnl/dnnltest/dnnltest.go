// Package dnnltest loads oneDNN for a package's tests as a session would
// with scripts/venv.sh, before any test runs: the first Load in a process
// decides, so a test that opened a session first would fix the process to
// the system's library (usually none) and leave oneDNN's kernels unchecked.
package dnnltest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"mstream/kernels/cpu/dnnl"
)

// Main is a TestMain: it loads MSTREAM_DNNL when set ("off" runs mstream's
// own kernels), else the onednn-cpu-gomp wheel scripts/setup.sh installs
// in root's build/venv/lib (root: the repository, relative to the test's
// package directory), else the system's; says which on stderr, under
// name; and runs m.
func Main(m *testing.M, root, name string) {
	in, err := dnnl.Load(dnnl.Options{Path: Path(root)})
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" test:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, name+" test:", in)
	os.Exit(m.Run())
}

// Path is the oneDNN a test loads: MSTREAM_DNNL when set, else the
// onednn-cpu-gomp wheel's in root's build/venv/lib, else "" (the system's).
func Path(root string) string {
	if path := os.Getenv("MSTREAM_DNNL"); path != "" {
		return path
	}
	if libs, _ := filepath.Glob(filepath.Join(root, "build/venv/lib/libdnnl.so.3")); len(libs) > 0 {
		return libs[0]
	}
	return ""
}
