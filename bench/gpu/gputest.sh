#!/bin/bash
# Runs the CUDA device and kernel tests on a GPU machine, from the folder
# bench/gpu/build.sh filled (default .dev/gpu), writing logs to $OUT:
#   env.txt       GPU, driver and the CUDA libraries found
#   device.log    device/cuda tests (-v), then the sticky-error test and the
#                 cross-context probe, each in a process of its own
#   kernels.log   kernels/cuda tests (-v): every GPU kernel against the CPU,
#                 and the shared conformance suite on the GPU
#   sanitizer.log compute-sanitizer memcheck and racecheck passes
#   summary.txt   one line per step, and the launch-overhead numbers
#   launch.prof, kernels.prof  CPU profiles of the launch paths
# Each step has its own time limit so a hang cannot eat the lease.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/gputest}
mkdir -p "$OUT"
export MSTREAM_DEVICE=gpu MSTREAM_CACHE_DIR=/tmp/mstream-cache MSTREAM_BENCH_OUT=$OUT/summary.txt
export KERNELTEST_PYTHON=$(command -v python3)
S=$OUT/summary.txt
: >"$S"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  ldconfig -p | grep -E 'libcuda\.so|libcublas|libnvrtc' | head
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|cublasLt|nvrtc)\.so' | head
  command -v compute-sanitizer; $KERNELTEST_PYTHON -c 'import numpy; print("numpy", numpy.__version__)'
} >"$OUT/env.txt" 2>&1

step() { # name timeout log cmd...
  local name=$1 t=$2 log=$3; shift 3
  local t0=$(date +%s%N)
  echo "=== $name: $*" >>"$log"
  timeout "$t" "$@" >>"$log" 2>&1
  local rc=$?
  printf '%-28s rc=%-3s %6d ms\n' "$name" "$rc" $(( ($(date +%s%N) - t0) / 1000000 )) >>"$S"
}

step device 60 "$OUT/device.log" "$D/device_cuda.test" -test.v -test.count=1
MSTREAM_TEST_STICKY=1 step sticky 20 "$OUT/device.log" "$D/device_cuda.test" -test.v -test.run '^TestStickyError$'
MSTREAM_PROBE_CROSS_CONTEXT=1 step probe-cross-context 20 "$OUT/device.log" "$D/device_cuda.test" -test.v -test.run '^TestCrossContextAccess$'
MSTREAM_GPU_COVERAGE=1 step kernels 150 "$OUT/kernels.log" "$D/kernels_cuda.test" -test.v -test.count=1
# CPU profiles of the launch paths (go tool pprof reads them with the binaries).
step profile-launch 60 "$OUT/device.log" "$D/device_cuda.test" -test.v -test.run '^TestLaunchOverhead$' -test.cpuprofile "$OUT/launch.prof"
step profile-kernels 60 "$OUT/kernels.log" "$D/kernels_cuda.test" -test.v -test.run '^TestKernelCPUCost$' -test.cpuprofile "$OUT/kernels.prof"
# A panic ends a test binary: then run every test in a process of its own.
for b in device kernels; do
  if grep -q '^panic:' "$OUT/$b.log"; then
    for t in $("$D/${b}_cuda.test" -test.list '.*'); do
      step "$b:$t" 60 "$OUT/$b.log" "$D/${b}_cuda.test" -test.v -test.run "^$t\$"
    done
  fi
done

# Sanitizer passes (about 5 min at most; SANITIZE=0 skips them).
[ "${SANITIZE:-1}" = 1 ] || { cat "$S"; exit 0; }
CS="compute-sanitizer --error-exitcode 3 --print-limit 20"
step memcheck-device 45 "$OUT/sanitizer.log" $CS --tool memcheck "$D/device_cuda.test" -test.run 'TestCopyRoundTrip|TestCrossStreamWait|TestEnqueueOrder|TestBFCOverDeviceMemory|TestGemm|TestLaunchArgs'
step memcheck-kernels 120 "$OUT/sanitizer.log" $CS --tool memcheck "$D/kernels_cuda.test" -test.run 'TestBinary|TestUnary|TestBiasAdd|TestSoftmax|TestCast|TestFill|TestReduce|TestGather|TestConcat|TestTranspose|TestMatMul|TestFusedMatMul'
step racecheck-kernels 45 "$OUT/sanitizer.log" $CS --tool racecheck "$D/kernels_cuda.test" -test.run 'TestReduce|TestSoftmax'
step racecheck-device 25 "$OUT/sanitizer.log" $CS --tool racecheck "$D/device_cuda.test" -test.run 'TestCrossStreamWait|TestEnqueueOrder'

grep -hE '^ *(--- FAIL|FAIL|ok|PASS)|PROBE|launch CPU time|sticky error as' "$OUT/device.log" "$OUT/kernels.log" >>"$S"
grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$OUT/sanitizer.log" >>"$S"
cat "$S"
