package cuda

import (
	"os"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/kernels"
	"mstream/kernels/kerneltest"
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// gpuRunner runs the conformance suite's cases on the GPU. A case whose
// dtype has no GPU kernel runs on the CPU kernel, as placement would put
// it there.
type gpuRunner struct {
	e        *gpuEnv
	fallback map[string]int
	st       *gpuState // a stateful case's resources (Fresh)
}

func (g *gpuRunner) Device() string { return kernels.GPU }

// Fresh gives a runner whose calls share new resources: GPU kernels keep
// variables in device memory, host kernels read and write the same ones.
func (g *gpuRunner) Fresh() kerneltest.Runner {
	return &gpuRunner{e: g.e, fallback: g.fallback, st: &gpuState{rm: resource.NewManager(), e: g.e}}
}

func (g *gpuRunner) Run(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var rm *resource.Manager
	var persist kernels.Persist
	if g.st != nil {
		rm, persist = g.st.rm, g.st
	}
	def, err := kernels.Lookup(n, kernels.GPU)
	if err != nil {
		g.fallback[n.Op]++
		return cpuRunBound(n, in, rm)
	}
	k, err := def.Factory(n)
	if status.CodeOf(err) == status.Unimplemented {
		// The GPU kernel refuses these attrs (a fused epilogue it lacks):
		// placement runs such a node on the host.
		g.fallback[n.Op]++
		return cpuRunBound(n, in, rm)
	}
	if err != nil {
		return nil, err
	}
	if k, err = bound(n, k, rm); err != nil {
		return nil, err
	}
	out, err := g.e.runWith(n, in, k, def, persist)
	if err == nil {
		// The suite compares this with its reference: it counts for
		// TestZZCoverage as a check does.
		opsMu.Lock()
		opsRun[n.Op]++
		opsMu.Unlock()
	}
	return out, err
}

// TestConformance runs the shared conformance suite's cases for every op
// with a GPU kernel, except GatherV2 and GatherNd, whose GPU kernels write
// zeros for an out-of-range index where the suite (and the CPU kernel)
// expects an error, as TF's GPU and CPU kernels differ (TestGather,
// TestOneHotGatherNd and the OutOfRange tests cover them). TF32 is off
// so float32 GEMMs meet the suite's tolerance.
func TestConformance(t *testing.T) {
	e := env(t)
	SetTF32(false)
	defer SetTF32(true)
	seen := map[string]bool{}
	// KERNELTEST_ONLY (a comma list) narrows the run, as in
	// TestEmuConformance: gputest.sh reruns the GEMM ops with
	// MSTREAM_GPU_SMALL_GEMM forced each way.
	narrow := map[string]bool{}
	if s := os.Getenv("KERNELTEST_ONLY"); s != "" {
		for _, op := range strings.Split(s, ",") {
			narrow[op] = true
		}
	}
	var only []string
	for _, key := range kernels.Registered() {
		op, dev, _ := strings.Cut(key, "/")
		if dev != kernels.GPU || op == "GatherV2" || op == "GatherNd" || seen[op] || (len(narrow) > 0 && !narrow[op]) {
			continue
		}
		seen[op] = true
		have := false
		for _, o := range kerneltest.Ops() {
			have = have || o == op
		}
		if have {
			only = append(only, op)
		} else {
			t.Logf("no conformance cases for %s", op)
		}
	}
	r := &gpuRunner{e: e, fallback: map[string]int{}}
	kerneltest.Run(t, r, kerneltest.Options{Only: only})
	t.Logf("ops run: %s; cases on the CPU for want of a GPU dtype: %v", strings.Join(only, " "), r.fallback)
}
