//go:build !amd64

package exec

// cpuRelax is a no-op here (relax_amd64.go says what it is for).
func cpuRelax() {}
