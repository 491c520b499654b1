package session

import (
	"fmt"
	"os"
	"sync"

	"mstream/device"
	"mstream/device/cuda"
	"mstream/exec"
	"mstream/status"

	// The GPU kernels register with the kernel registry, which placement
	// consults; registering needs no GPU.
	_ "mstream/kernels/cuda"
)

// gpuReserve is the device memory left to the driver, cuBLAS workspaces and
// other processes when no limit is configured.
const gpuReserve = 512 << 20

// loadCUDA is cuda.Load; tests replace it.
var loadCUDA = cuda.Load

// noGPULogged makes the "running on the CPU" line appear once per process.
var noGPULogged sync.Once

// logf writes one log line to stderr as TF's logging does, unless
// TF_CPP_MIN_LOG_LEVEL hides its level (0 info, 1 warning, 2 error).
func (st *state) logf(level int, format string, args ...any) {
	if level < st.env.MinLogLevel {
		return
	}
	fmt.Fprintf(os.Stderr, "mstream %c %s\n", "IWEF"[min(level, 3)], fmt.Sprintf(format, args...))
}

// openGPUs returns the GPUs the session runs on, per MSTREAM_DEVICE: cpu
// none; gpu every visible GPU or an error; unset (auto) the GPUs if CUDA
// loads, else none, with one log line saying why.
func (st *state) openGPUs() ([]*cuda.Device, error) {
	switch {
	case st.env.Device == "cpu":
		return nil, nil
	case st.env.NodeLevel && st.env.Device == "gpu":
		return nil, status.Errorf(status.Unimplemented, "MSTREAM_DEVICE=gpu with TF_NODE_LEVEL_MULTISTREAM: node-level multi-stream runs on the CPU only")
	case st.env.NodeLevel:
		return nil, nil
	}
	lib, err := loadCUDA()
	var devs []*cuda.Device
	if err == nil {
		devs, err = lib.Devices()
	}
	if err == nil && len(devs) == 0 {
		err = status.Errorf(status.Unavailable, "cuda: no GPU is visible (check CUDA_VISIBLE_DEVICES)")
	}
	if err != nil {
		if st.env.Device == "gpu" {
			return nil, status.Wrap(err, "MSTREAM_DEVICE=gpu, but no GPU can be used")
		}
		noGPULogged.Do(func() {
			st.logf(0, "no GPU, running on the CPU (%v); set MSTREAM_DEVICE=cpu to skip the search, or =gpu to make this an error", err)
		})
		return nil, nil
	}
	for _, d := range devs {
		// Contexts are the process's: a session asking for fewer uses the
		// first ones.
		if n := st.env.ContextCount; n > d.Contexts() {
			if err := d.SetContexts(n); err != nil {
				return nil, status.Wrap(err, "TF_GPU_CONTEXT_COUNT=%d (the process's GPU contexts are fixed by its first session)", n)
			}
		}
		c, err := d.Primary()
		if err != nil {
			return nil, status.Wrap(err, "opening %s", d.Name())
		}
		if st.env.Device == "gpu" {
			// Surface a broken device now rather than at the first Run.
			if _, _, err := c.MemInfo(); err != nil {
				return nil, status.Wrap(err, "MSTREAM_DEVICE=gpu: %s", d.Name())
			}
		}
	}
	return devs, nil
}

// gpuLimitMB is the memory limit of a GPU when the ConfigProto sets none:
// its free memory now, less a reserve. Allocators are per session here
// (TF's are per process), so a session must not take memory another
// session of the process already holds.
func gpuLimitMB(d *cuda.Device) float64 {
	c, err := d.Primary()
	if err != nil {
		return 0
	}
	free, _, err := c.MemInfo()
	if err != nil || free <= gpuReserve {
		return 0
	}
	return float64(free-gpuReserve) / (1 << 20)
}

// gpuDevices appends the GPUs to the device list; the host device stays
// device 0, GPU i is device 1+i.
func gpuDevices(host device.Device, gpus []*cuda.Device) []device.Device {
	out := []device.Device{host}
	for _, g := range gpus {
		out = append(out, g)
	}
	return out
}

// placement is how plans are placed: on the first GPU when the session has
// one (graph-level mode), on the host otherwise.
func (st *state) placement() exec.Placement {
	if st.gpu < 0 || st.nodeLevel {
		return exec.Placement{}
	}
	return exec.Placement{GPUs: len(st.devices) - 1, AllowSoft: st.softPlacement,
		Log: func(format string, args ...any) { st.logf(0, format, args...) }}
}
