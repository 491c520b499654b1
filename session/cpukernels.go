package session

import (
	"errors"
	"sync"

	"mstream/kernels/cpu/blas"
	"mstream/status"
)

// CPUKernels says which libraries run the CPU's heavy kernels and on which
// ISA: MS_SessionStats shows it, and the first session logs it.
type CPUKernels struct {
	BLAS blas.Info `json:"blas"`
}

// cpuKernelsLogged makes the libraries' line appear once per process: they
// load once per process, with the first session's MSTREAM_BLAS.
var cpuKernelsLogged sync.Once

// loadCPUKernels loads the GEMM library MSTREAM_BLAS names (or the system's)
// and reports it. A named library that does not load fails the session; a
// session naming another library than the one already loaded runs on the
// loaded one, with a warning.
func (st *state) loadCPUKernels() error {
	in, err := blas.Load(blas.Options{Path: st.env.BLAS})
	switch {
	case errors.Is(err, blas.ErrLoaded):
		st.logf(1, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	case err != nil:
		return status.Errorf(status.FailedPrecondition, "MSTREAM_BLAS=%s: %v", st.env.BLAS, err)
	}
	st.cpuKernels = CPUKernels{BLAS: in}
	cpuKernelsLogged.Do(func() {
		st.logf(0, "%s", in)
		if in.Warning != "" {
			st.logf(1, "BLAS: %s", in.Warning)
		}
	})
	return nil
}
