package session

import (
	"math/rand"
	"strings"
	"testing"

	"mstream/exec"
	"mstream/graph"
	"mstream/kernels"
	"mstream/lower"
	"mstream/optimize"
	"mstream/tensor"
)

// TestTrainingStepHostSyncs: the training example's step, placed as a GPU
// session places it (the CUDA kernels' registry, TF's default rewrites),
// never copies a value back to the host mid-step: its int32 shape
// arithmetic (the embeddings' gradient shapes, the sparse updates'
// segment counts) runs on the host over the host's shapes, as TF's
// HostMemory kernels do, instead of on the GPU with its result copied
// back and waited for by Reshape's shape and UnsortedSegmentSum's
// num_segments. What still blocks the launcher is only kernels that read
// their own device values back (Unique's count, as TF's GPU kernel does).
func TestTrainingStepHostSyncs(t *testing.T) {
	m := loadTrainingModel(t)
	var feeds []graph.Output
	for _, f := range m.batch(rand.New(rand.NewSource(1)), 4) {
		feeds = append(feeds, f.Output)
	}
	lw, err := lower.Lower(m.g, feeds, []graph.Output{m.loss}, []*graph.Node{m.train})
	if err != nil {
		t.Fatal(err)
	}
	r := optimize.Rewrite(lw.Feeds, lw.Fetches, lw.Targets, optimize.Options{Devices: []string{kernels.CPU, kernels.GPU}, Passes: optimize.PassesFor(nil)})
	p, err := exec.BuildPlaced(m.g, r.Feeds, r.Fetches, r.Targets, exec.Placement{GPUs: 1, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.HostSyncs() {
		if !strings.Contains(s, "reads its device values back") {
			t.Errorf("the step waits for a copy to the host: %s", s)
		}
	}
	// The check above means something only while the step has int32
	// shape arithmetic that a GPU kernel could run.
	moved := 0
	where := p.PlacedOn()
	for i, n := range p.Nodes() {
		if where[i] != "CPU" || len(n.OutTypes) == 0 || n.OutTypes[0] != tensor.Int32 {
			continue
		}
		if _, err := kernels.Lookup(n, kernels.GPU); err == nil {
			moved++
		}
	}
	if moved < 8 {
		t.Errorf("%d int32 nodes with a GPU kernel run on the host; the training step has at least 8 (StridedSlice, ConcatV2, ExpandDims per tower)", moved)
	}
}
