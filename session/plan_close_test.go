package session

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"testing"

	"mstream/graph"
	"mstream/kernels/cpu/dnnl"
	"mstream/kernels/cpu/dnnl/dnnltest"
	"mstream/tensor"
)

// TestSessionClosesPrimitives opens, runs (two batch sizes, so a few
// primitives per node) and closes sessions of a small CNN and checks that
// the oneDNN primitives alive go back to where they were after each
// Close: before, every session left its primitives behind (about 0.25 MB
// of C memory per Keras CNN session). In a child process, as the first
// oneDNN load in a process decides.
func TestSessionClosesPrimitives(t *testing.T) {
	if os.Getenv("MSTREAM_PRIM_CLOSE_CHILD") != "" {
		primCloseChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionClosesPrimitives$", "-test.v")
	cmd.Env = append(os.Environ(), "MSTREAM_PRIM_CLOSE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func primCloseChild(t *testing.T) {
	path := dnnltest.Path("..")
	if path == "" {
		t.Fatal("no oneDNN to test with: scripts/setup.sh installs it in build/venv, MSTREAM_DNNL names it")
	}
	r := rand.New(rand.NewSource(5))
	b := newGB(t)
	x := b.placeholder("x", tensor.PartialShape{Dims: []int64{-1, 9, 9, 3}, Known: true})
	w := tensor.New(tensor.Float, tensor.Shape{3, 3, 3, 4})
	for i := range w.F32() {
		w.F32()[i] = r.Float32() - 0.5
	}
	conv := b.op("Conv2D", "conv", map[string]any{"T": tensor.Float, "strides": []int64{1, 1, 1, 1}, "padding": "SAME"}, x, b.constant("w", w))
	pool := b.op("MaxPool", "pool", map[string]any{"T": tensor.Float, "ksize": []int64{1, 2, 2, 1}, "strides": []int64{1, 2, 2, 1}, "padding": "VALID"}, b.relu("relu", conv))
	sm := b.op("Softmax", "softmax", map[string]any{"T": tensor.Float}, pool)
	base := dnnl.Live()
	for i := 0; i < 4; i++ {
		s, err := New(b.g, &Options{Env: hostEnv(map[string]string{"MSTREAM_DNNL": path})})
		if err != nil {
			t.Fatal(err)
		}
		if !dnnl.Available() {
			t.Fatalf("oneDNN %s did not load: %+v", path, dnnl.Loaded())
		}
		for _, n := range []int{1, 3} {
			in := tensor.New(tensor.Float, tensor.Shape{int64(n), 9, 9, 3})
			for j := range in.F32() {
				in.F32()[j] = r.Float32()
			}
			if _, _, err := s.Run(nil, []Feed{{Output: x, Tensor: in}}, []graph.Output{sm}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := dnnl.Live(); got <= base {
			t.Fatalf("session %d: %d primitives alive after its Runs, %d before: oneDNN ran nothing (%s)", i, got, base, dnnl.Primitives())
		}
		if !strings.Contains(dnnl.Primitives(), "conv") {
			t.Fatalf("no convolution primitive made: %s", dnnl.Primitives())
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := dnnl.Live(); got != base {
			t.Fatalf("session %d closed: %d primitives alive, %d before it opened", i, got, base)
		}
	}

	// A plan the full cache evicts is closed too: the CNN's plan, then
	// maxCachedPlans signatures of cheap ones (an Identity each), the
	// last of which starts the cache anew; a Run of the CNN after that
	// builds its plan again.
	s, err := New(b.g, &Options{Env: hostEnv(map[string]string{"MSTREAM_DNNL": path})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := tensor.New(tensor.Float, tensor.Shape{1, 9, 9, 3})
	runCNN := func() {
		if _, _, err := s.Run(nil, []Feed{{Output: x, Tensor: in}}, []graph.Output{sm}, nil); err != nil {
			t.Fatal(err)
		}
	}
	runCNN()
	if dnnl.Live() <= base {
		t.Fatal("the CNN's Run made no primitive")
	}
	for i := 0; i < maxCachedPlans; i++ {
		id := b.op("Identity", fmt.Sprintf("id%d", i), map[string]any{"T": tensor.Float}, x)
		if _, _, err := s.Run(nil, []Feed{{Output: x, Tensor: in}}, []graph.Output{id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := dnnl.Live(); got != base {
		t.Fatalf("the CNN's plan evicted: %d primitives alive, %d before", got, base)
	}
	runCNN()
	if dnnl.Live() <= base {
		t.Fatal("the CNN's Run after eviction made no primitive")
	}
}
