package session

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"mstream/kernels/cpu/blas"
	"mstream/kernels/cpu/ccall"
	"mstream/kernels/cpu/dnnl"
	"mstream/status"
)

// TestCPUKernelStats checks that MS_SessionStats names the GEMM library the
// process really loaded and the ISA cpuid reports.
func TestCPUKernelStats(t *testing.T) {
	st := statsOf(t, loadModel(t), map[string]string{}, nil, 1)
	got, want := st.CPUKernels.BLAS, blas.Loaded()
	if got != want || got.Impl == "" || got.CPU != blas.CPUISA().String() {
		t.Fatalf("stats cpu_kernels.blas = %+v, loaded %+v, cpuid %s", got, want, blas.CPUISA())
	}
	t.Logf("%s", got)
	if dn := st.CPUKernels.DNNL; dn != dnnl.Loaded() || (dn.Impl == "") == (dn.Warning == "") {
		t.Fatalf("stats cpu_kernels.onednn = %+v, loaded %+v: oneDNN in use or a warning saying why not", dn, dnnl.Loaded())
	}
}

// TestBLASKnob runs, each in a fresh process (a BLAS loads once per
// process), a session with MSTREAM_BLAS naming a missing library (the
// session fails, naming the variable), "go" (the pure-Go GEMM, reported)
// and, after a first session loaded the system's, a second one naming
// another library (it runs on the loaded one).
func TestBLASKnob(t *testing.T) {
	if c := os.Getenv("MSTREAM_BLAS_SESSION_CHILD"); c != "" {
		blasKnobChild(t, c)
		return
	}
	for _, c := range []string{"missing", "go", "second"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBLASKnob$", "-test.v")
		cmd.Env = append(os.Environ(), "MSTREAM_BLAS_SESSION_CHILD="+c)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
}

func blasKnobChild(t *testing.T, c string) {
	m := loadModel(t)
	newS := func(path string) (*Session, error) {
		return New(m.g, &Options{Env: hostEnv(map[string]string{"MSTREAM_BLAS": path})})
	}
	switch c {
	case "missing":
		_, err := newS("/nonexistent/libopenblas.so")
		if status.CodeOf(err) != status.FailedPrecondition || !strings.Contains(err.Error(), "MSTREAM_BLAS=/nonexistent/libopenblas.so") {
			t.Fatalf("missing library: %v", err)
		}
	case "go":
		st := statsOf(t, m, map[string]string{"MSTREAM_BLAS": "go"}, nil, 1)
		if st.CPUKernels.BLAS.Impl != "go" || blas.Available() {
			t.Fatalf("MSTREAM_BLAS=go: %+v", st.CPUKernels.BLAS)
		}
	case "second":
		first := statsOf(t, m, map[string]string{}, nil, 1)
		second := statsOf(t, m, map[string]string{"MSTREAM_BLAS": "go"}, nil, 1)
		if second.CPUKernels.BLAS != first.CPUKernels.BLAS {
			t.Fatalf("second session reports %+v, the loaded library is %+v", second.CPUKernels.BLAS, first.CPUKernels.BLAS)
		}
	}
}

// TestCCallKnob runs, each in a fresh process (the mode is set once per
// process), sessions with MSTREAM_CCALL unset (direct) and cgo, each
// followed by a second session asking for the other mode: both run on
// the first one's mode and report it in cpu_kernels.calls.
func TestCCallKnob(t *testing.T) {
	if c := os.Getenv("MSTREAM_CCALL_SESSION_CHILD"); c != "" {
		m := loadModel(t)
		env, other := map[string]string{}, ccall.Cgo
		if c == ccall.Cgo {
			env, other = map[string]string{"MSTREAM_CCALL": ccall.Cgo}, ccall.Direct
		}
		first := statsOf(t, m, env, nil, 1)
		second := statsOf(t, m, map[string]string{"MSTREAM_CCALL": other}, nil, 1)
		if first.CPUKernels.Calls != c || second.CPUKernels.Calls != c || ccall.Mode() != c {
			t.Fatalf("calls %q then %q (mode %q), want %q for both", first.CPUKernels.Calls, second.CPUKernels.Calls, ccall.Mode(), c)
		}
		return
	}
	for _, c := range []string{ccall.Direct, ccall.Cgo} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCCallKnob$", "-test.v")
		cmd.Env = append(os.Environ(), "MSTREAM_CCALL_SESSION_CHILD="+c)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
	}
}

// TestGCHeadroomStats: a session reserves MSTREAM_GC_HEADROOM_MB (64 MiB
// by default) against the Go collector once per process and says so in
// MS_SessionStats; a larger value grows it, a smaller one keeps it.
func TestGCHeadroomStats(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		st := statsOf(t, loadModel(t), map[string]string{}, nil, 1)
		if st.GCHeadroom.Bytes != 0 || st.GCHeadroom.Skipped == "" {
			t.Fatalf("stats gc_headroom = %+v with GOGC or GOMEMLIMIT set: want none, saying why", st.GCHeadroom)
		}
		return
	}
	for _, tc := range []struct{ mb, want int64 }{{0, 64}, {96, 96}, {32, 96}} {
		env := map[string]string{}
		if tc.mb > 0 {
			env["MSTREAM_GC_HEADROOM_MB"] = fmt.Sprint(tc.mb)
		}
		st := statsOf(t, loadModel(t), env, nil, 1)
		if got := st.GCHeadroom; got.Bytes < tc.want<<20 || got.Skipped != "" {
			t.Fatalf("MSTREAM_GC_HEADROOM_MB=%d: stats gc_headroom = %+v, want at least %d MiB", tc.mb, got, tc.want)
		}
	}
}
