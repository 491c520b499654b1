package cuda

import (
	"fmt"
	"sort"
	"testing"

	cu "mstream/device/cuda"
	"mstream/kernels/kerneltest"
	"mstream/tensor"
)

// TestSmallGEMMDeviceTime prints the device time per call of the
// small-batch GEMM kernel (MSTREAM_GPU_SMALL_GEMM=1) and of
// cuBLAS/cuBLASLt (=0, TF32 allowed as by default) at the GPU benchmark's
// layer shapes (bench/gpu/gen: DLRM-small's bottom 13-512-256-64 and top
// 415-512-256-1, the MLP's 512-1024-1024-512-256-1, each a
// MatMul+BiasAdd+Relu, and DLRM's interaction BatchMatMulV2
// [B,27,64]x[B,27,64]^T) for batches 1, 16, 64 and 256, so one GPU run
// shows where auto's bound (smallGEMMRows) belongs. Each figure is the
// median over batches of back-to-back calls queued behind a long GEMM,
// so the host's launch rate does not leave the device idle between them.
// It asserts nothing about time; MSTREAM_BENCH_OUT appends the lines to
// a file.
func TestSmallGEMMDeviceTime(t *testing.T) {
	e := env(t)
	r := newRand(t)
	dev := e.s.Context().Device()
	defer dev.SetSmallGEMM(envSmallGEMM())
	f32 := func(s ...int64) *tensor.Tensor { return kerneltest.RandRange(r, tensor.Float, s, -1, 1) }
	big := f32(4096, 4096)
	dam := prep(t, e, node("MatMul", nil, big, big), []*tensor.Tensor{big, big}, nil)
	start, err := e.ctx.NewTimingEvent()
	if err != nil {
		t.Fatal(err)
	}
	end, _ := e.ctx.NewTimingEvent()
	// perCall is the median device time of one call of run, in us.
	perCall := func(run func() error) float64 {
		const batches, calls = 15, 20
		var per []float64
		for b := 0; b < batches; b++ {
			for i := 0; i < 3; i++ { // about 1 ms of queue on an H100
				if err := dam(); err != nil {
					t.Fatal(err)
				}
			}
			per = append(per, float64(timeCalls(t, e, start, end, calls, run))*1000/calls)
		}
		sort.Float64s(per)
		return per[len(per)/2]
	}
	type shape struct {
		what string
		k, n int64
	}
	layers := []shape{{"DLRM bottom", 13, 512}, {"DLRM bottom/MLP", 512, 256}, {"DLRM bottom", 256, 64},
		{"DLRM top", 415, 512}, {"DLRM top/MLP", 256, 1}, {"MLP", 512, 1024}, {"MLP", 1024, 1024}, {"MLP", 1024, 512}}
	var lines []string
	for _, m := range []int64{1, 16, 64, 256} {
		for _, l := range layers {
			x, w, bias := f32(m, l.k), f32(l.k, l.n), f32(l.n)
			mm := node("MatMul", nil, x, w)
			var us [2]float64
			for i, mode := range []string{"0", "1"} {
				if err := dev.SetSmallGEMM(mode); err != nil {
					t.Fatal(err)
				}
				us[i] = perCall(prep(t, e, mm, []*tensor.Tensor{x, w, bias}, FusedMatMul(false, false, "Relu", 0)))
			}
			lines = append(lines, fmt.Sprintf("GPU time per call, MatMul+BiasAdd+Relu %dx%dx%d (%s): cuBLASLt %.2f us, small-batch kernel %.2f us (%.2fx)",
				m, l.k, l.n, l.what, us[0], us[1], us[0]/us[1]))
		}
		x := f32(m, 27, 64)
		bmm := node("BatchMatMulV2", kerneltest.Attrs{"adj_y": kerneltest.ABool(true)}, x, x)
		var us [2]float64
		for i, mode := range []string{"0", "1"} {
			if err := dev.SetSmallGEMM(mode); err != nil {
				t.Fatal(err)
			}
			us[i] = perCall(prep(t, e, bmm, []*tensor.Tensor{x, x}, nil))
		}
		lines = append(lines, fmt.Sprintf("GPU time per call, BatchMatMulV2 [%d,27,64]x[%d,27,64]^T (DLRM interaction): cuBLAS %.2f us, small-batch kernel %.2f us (%.2fx)",
			m, m, us[0], us[1], us[0]/us[1]))
	}
	benchReport(t, lines)
}

// timeCalls is the device time, in ms, of n calls of run enqueued on e's
// stream between two timing events.
func timeCalls(t *testing.T, e *gpuEnv, start, end *cu.Event, n int, run func() error) float32 {
	t.Helper()
	if err := e.s.RecordEvent(start); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.s.RecordEvent(end); err != nil {
		t.Fatal(err)
	}
	if err := end.Sync(); err != nil {
		t.Fatal(err)
	}
	ms, err := cu.ElapsedMs(start, end)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
