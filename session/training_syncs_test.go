package session

import (
	"math/rand"
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
// num_segments; and the sparse updates' Unique runs on the host over the
// fed ids (reshaped on the GPU, which keeps their host copy), where its GPU
// kernel would copy them back and wait for its count. So the launcher never
// waits before the step's end.
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
		t.Errorf("the step waits mid-way: %s", s)
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
	gpu := 0
	for _, w := range where {
		if w == "GPU" {
			gpu++
		}
	}
	t.Logf("%d of %d nodes on the GPU, %d int32 nodes with a GPU kernel on the host", gpu, len(where), moved)
	uniques := 0
	for i, n := range p.Nodes() {
		if n.Op == "Unique" {
			uniques++
			if where[i] != "CPU" {
				t.Errorf("%s runs on the %s", n.Name, where[i])
			}
		}
	}
	if uniques != 4 {
		t.Errorf("%d Unique nodes, want one per tower's sparse update (4)", uniques)
	}
}
