package session

import (
	"errors"
	"sync"

	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
)

// CPUKernels says which libraries run the CPU's heavy kernels and on which
// ISA: MS_SessionStats shows it, and the first session logs it.
type CPUKernels struct {
	BLAS blas.Info `json:"blas"`
	DNNL dnnl.Info `json:"onednn"`
}

// cpuKernelsLogged makes the libraries' line appear once per process: they
// load once per process, with the first session's MSTREAM_BLAS.
var cpuKernelsLogged sync.Once

// loadCPUKernels loads the GEMM library MSTREAM_BLAS names (or the system's)
// and oneDNN (MSTREAM_DNNL, or the system's) and reports them. A named
// library that does not load fails the session; a session naming another
// library than the one already loaded runs on the loaded one, with a
// warning.
func (st *state) loadCPUKernels() error {
	in, err := blas.Load(blas.Options{Path: st.env.BLAS})
	switch {
	case errors.Is(err, blas.ErrLoaded):
		st.logf(1, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	case err != nil:
		return status.Errorf(status.FailedPrecondition, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	}
	dn, err := dnnl.Load(dnnl.Options{Path: st.env.DNNL})
	switch {
	case errors.Is(err, dnnl.ErrLoaded):
		st.logf(1, "MSTREAM_DNNL=%s: %v", st.env.DNNL, err)
	case err != nil:
		return status.Errorf(status.FailedPrecondition, "MSTREAM_DNNL=%s: %v", st.env.DNNL, err)
	}
	st.cpuKernels = CPUKernels{BLAS: in, DNNL: dn}
	cpuKernelsLogged.Do(func() {
		st.logf(0, "%s; %s", in, dn)
		if in.Warning != "" {
			st.logf(1, "BLAS: %s", in.Warning)
		}
		if dn.Warning != "" {
			st.logf(1, "oneDNN: %s", dn.Warning)
		}
	})
	return nil
}
