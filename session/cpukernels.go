package session

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/ccall"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
)

// CPUKernels says which libraries run the CPU's heavy kernels and on which
// ISA: MS_SessionStats shows it, and the first session logs it.
type CPUKernels struct {
	BLAS blas.Info `json:"blas"`
	DNNL dnnl.Info `json:"onednn"`
	// Calls is how their C functions are called (ccall.Mode: direct or
	// cgo), MSTREAM_CCALL of the process's first session.
	Calls string `json:"calls"`
}

// cpuKernelsLogged makes the libraries' summary appear once per process:
// they load once per process, with the first session's MSTREAM_BLAS and
// MSTREAM_DNNL. Without a GPU the summary joins the no-GPU notice, so that
// a CPU process prints one notice line.
var cpuKernelsLogged sync.Once

// Summary is the libraries in a few words: implementation, version, core
// (with "set" when mstream had to set OPENBLAS_CORETYPE) and ISA.
func (c CPUKernels) Summary() string {
	var b strings.Builder
	switch in := c.BLAS; in.Impl {
	case "go":
		fmt.Fprintf(&b, "pure-Go GEMM (%s)", in.CPU)
	case "openblas":
		v := strings.Fields(in.Version)
		name := "OpenBLAS"
		if len(v) > 1 {
			// 0.3.34.481.3 (the wheel's build numbers) reads 0.3.34.
			name += " " + strings.Join(strings.SplitN(v[1], ".", 4)[:min(3, strings.Count(v[1], ".")+1)], ".")
		}
		core := in.Core
		if in.CoreSet != "" {
			core += " set"
		}
		fmt.Fprintf(&b, "%s (%s, %s)", name, core, in.CPU)
	default:
		fmt.Fprintf(&b, "cblas %s (%s)", in.Path, in.CPU)
	}
	if c.DNNL.Impl == "" {
		b.WriteString(", no oneDNN")
	} else {
		fmt.Fprintf(&b, ", oneDNN %s (%s)", c.DNNL.Version, c.DNNL.ISA)
	}
	return b.String()
}

// loadCPUKernels loads the GEMM library MSTREAM_BLAS names (or the system's)
// and oneDNN (MSTREAM_DNNL, or the system's). A named library that does not
// load fails the session; a session naming another library than the one
// already loaded runs on the loaded one, with a warning. What loaded is in
// MS_SessionStats (cpu_kernels) and, once per process, in a notice line
// (logCPUKernels, or the no-GPU notice); a slow fallback is a warning.
func (st *state) loadCPUKernels() error {
	in, err := blas.Load(blas.Options{Path: st.env.BLAS})
	switch {
	case errors.Is(err, blas.ErrLoaded):
		st.logf(1, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	case err != nil:
		return status.Errorf(status.FailedPrecondition, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	}
	// The warning function outlives this session (the first Load's is
	// kept): it holds the log level, not the session.
	lvl := st.env.MinLogLevel
	warn := func(msg string) {
		if lvl <= 1 {
			fmt.Fprintf(os.Stderr, "mstream W %s\n", msg)
		}
	}
	dn, err := dnnl.Load(dnnl.Options{Path: st.env.DNNL, Warn: warn})
	switch {
	case errors.Is(err, dnnl.ErrLoaded):
		st.logf(1, "MSTREAM_DNNL=%s: %v", st.env.DNNL, err)
	case err != nil:
		return status.Errorf(status.FailedPrecondition, "MSTREAM_DNNL=%s: %v", st.env.DNNL, err)
	}
	// OpenBLAS runs on one thread: MatMul splits its GEMMs over the
	// session's intra-op pool instead (blas.SgemmOn), which concurrent
	// Runs share, so that intra_op_parallelism_threads bounds a GEMM's
	// threads as it bounds every other kernel's. OpenBLAS's own threads
	// spin while they wait and, with two Runs calling it at once, fought
	// the executor's for the same cores (issue 22: a second client thread
	// lowered QPS).
	blas.SetThreads(1)
	if mode := ccall.Configure(st.env.CCall); mode != st.env.CCall {
		st.logf(1, "MSTREAM_CCALL=%s: the process's first session set %s, which holds", st.env.CCall, mode)
	}
	st.cpuKernels = CPUKernels{BLAS: in, DNNL: dn}
	return nil
}

// logCPUKernels writes the libraries' notice and warnings once per process
// and reports whether this call did; withNotice is the no-GPU notice's text
// when the summary joins it.
func (st *state) logCPUKernels(withNotice func(summary string) string) (logged bool) {
	cpuKernelsLogged.Do(func() {
		logged = true
		c := st.cpuKernels
		msg := "CPU kernels: " + c.Summary()
		if withNotice != nil {
			msg = withNotice(c.Summary())
		}
		st.logf(0, "%s", msg)
		if c.BLAS.Warning != "" {
			st.logf(1, "BLAS: %s", c.BLAS.Warning)
		}
		if c.DNNL.Warning != "" {
			st.logf(1, "oneDNN: %s", c.DNNL.Warning)
		}
	})
	return logged
}

// now is c with what changes after loading (oneDNN's fallbacks and the
// implementations its primitives took) read now, for MS_SessionStats.
func (c CPUKernels) now() CPUKernels {
	c.DNNL.Fallbacks, c.DNNL.Primitives, c.DNNL.Live = dnnl.Fallbacks(), dnnl.Primitives(), dnnl.Live()
	c.Calls = ccall.Mode()
	return c
}
