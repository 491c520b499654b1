package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"time"
	"unsafe"

	"mstream/status"
)

// spinProgram is the stream sanitizer's delay on a GPU: one thread that
// spins for a number of clock cycles, so the stream behind it is held up
// for about that long while other streams go on.
var spinProgram = &Program{Name: "spin.cu", Source: `
extern "C" __global__ void ms_spin(long long cycles) {
	long long start = clock64();
	while (clock64() - start < cycles) {
	}
}
`}

// spinHz turns a delay into clock cycles: about the SM clock of the GPUs
// mstream runs on (1.4 to 2 GHz); the sanitizer needs the order of
// magnitude, not the exact time.
const spinHz = 1.5e9

// Delay implements device.Delayer: it enqueues a spin kernel that keeps
// the stream busy for about d. It is not allowed while the stream
// captures a graph (a replay would repeat the delay).
func (s *Stream) Delay(d time.Duration) error {
	cycles := int64(d.Seconds() * spinHz)
	if cycles <= 0 {
		return nil
	}
	m, err := s.ctx.Module(spinProgram)
	if err != nil {
		return status.Wrap(err, "stream sanitizer: the spin kernel")
	}
	f, err := m.Function("ms_spin")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capturing {
		return s.notCapturableLocked("a sanitizer delay")
	}
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Pointer(s.args)), 8), uint64(cycles))
	*s.offs = 0
	r := C.ms_launch(s.lib(), s.ctx.c, f.f, 1, 1, 1, 1, 1, 1, 0, s.s, s.args, s.offs, 1)
	if r != 0 {
		return status.Wrap(s.ctx.check("cuLaunchKernel", r), "stream sanitizer: the spin kernel")
	}
	return nil
}
