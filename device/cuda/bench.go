package cuda

/*
#include "shim.h"
*/
import "C"

import "time"

// RawLaunchLoop launches f (a kernel without parameters) iters times on the
// stream from a plain C loop, the driver's own cost with nothing of ours
// around it, and returns the time the loop took. It exists to measure the
// launch overhead of Launch against the driver's.
func (s *Stream) RawLaunchLoop(f *Function, iters int) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st C.int
	ns := C.ms_bench_raw_launch(s.lib(), s.ctx.c, f.f, s.s, C.int(iters), &st)
	if st != 0 {
		return 0, s.ctx.check("cuLaunchKernel", st)
	}
	return time.Duration(ns), nil
}
