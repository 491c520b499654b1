//go:build !race

package session

import (
	"context"
	"math/rand"
	"testing"

	"mstream/exec"
	"mstream/tensor"
)

// TestGPUSanitizerCatchesMissingWaits is the stream sanitizer's meta-test
// over the GPU scheduler on a real GPU: the bundled model in node-level
// mode over three groups with MSTREAM_STREAM_JITTER (spin kernels of
// random length before stream items), first with every wait (every
// output must equal the CPU's), then with every wait between groups
// dropped through exec's DropWait hook: within the runs some output must
// come out wrong, or the sanitizer does not see a missing wait on a GPU.
// (Under -race the host's race detector has nothing to see here; the
// test is left out of such builds, as exec's sanitizer tests are.)
func TestGPUSanitizerCatchesMissingWaits(t *testing.T) {
	wantGPU(t)
	m := loadModel(t)
	rules, _ := nodeLevelRules(t)
	ref := cpuReference(t, m.g)
	r := rand.New(rand.NewSource(23))
	jobs := makeJobs(t, ref, m.outputs, 40, func() []Feed { return m.feeds(r, 64) })
	s := openSession(t, m.g, map[string]string{"MSTREAM_DEVICE": "gpu", "TF_NODE_LEVEL_MULTISTREAM": "true",
		"TF_GPU_STREAM_GROUP_COUNT": "3", "TF_STREAM_FROM_FILE": rules, "MSTREAM_STREAM_JITTER": "1"})
	plan, err := s.planFor(feedOutputs(nil, jobs[0].feeds), m.outputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.OnGPU() {
		t.Fatal("the model's plan has no GPU node")
	}
	run := func(j job, drop bool) error {
		sr, used, err := s.stepGroups(plan)
		if err != nil {
			return err
		}
		if sr == nil || len(sr.Groups) < 2 || sr.Jitter == 0 {
			t.Fatalf("step runtime %+v: want several GPU groups and the sanitizer on", sr)
		}
		if drop {
			sr.DropWait = func(int, int) bool { return true }
		}
		vals := make([]*tensor.Tensor, len(j.feeds))
		for i, f := range j.feeds {
			vals[i] = f.Tensor
		}
		out, _, err := plan.Run(context.Background(), sr, vals, exec.Options{})
		for _, g := range used {
			g.Done(err == nil)
		}
		if err != nil {
			return err
		}
		return closeTensors(out, j.want)
	}
	for k, j := range jobs {
		if err := run(j, false); err != nil {
			t.Fatalf("control run %d with every wait: %v", k, err)
		}
	}
	caught := 0
	for _, j := range jobs {
		if run(j, true) != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Errorf("%d runs without their waits between groups all gave the CPU's outputs: the sanitizer does not see missing waits on the GPU", len(jobs))
	}
	t.Logf("%d of %d runs without waits caught", caught, len(jobs))
}
