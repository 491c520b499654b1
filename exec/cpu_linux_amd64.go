package exec

import (
	"syscall"
	"unsafe"
)

// hasRDPID: the CPU has RDPID (CPUID.7.0:ECX bit 22) and the kernel
// keeps the CPU's number in its TSC_AUX, which RDPID reads: checked
// against getcpu(2) at start (a hypervisor or kernel that leaves it
// unset turns the feature off).
var hasRDPID = func() bool {
	if cpuidLeaf7ECX()&(1<<22) == 0 {
		return false
	}
	for i := 0; i < 4; i++ {
		var cpu uint32
		a := rdpid() & 0xfff
		if _, _, e := syscall.RawSyscall(sysGetcpu, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
			return false
		}
		if b := rdpid() & 0xfff; a == cpu || b == cpu {
			return true
		}
	}
	return false
}()

// thisCPU is the number of the CPU the calling thread runs on, as the
// kernel numbers them, or -1 where that is not known cheaply. It takes
// RDPID's half a nanosecond; the thread may move right after.
func thisCPU() int32 {
	if !hasRDPID {
		return -1
	}
	return int32(rdpid() & 0xfff)
}

// sysGetcpu is getcpu(2)'s number on linux/amd64 (package syscall does
// not name it).
const sysGetcpu = 309
