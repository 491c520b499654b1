//go:build !linux || !amd64

package exec

// thisCPU is -1: not known cheaply here (cpu_linux_amd64.go).
func thisCPU() int32 { return -1 }
