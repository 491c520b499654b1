//go:build !linux

package hostmem

// AdviseHuge is a no-op where the kernel has no transparent huge pages.
func AdviseHuge(b []byte) {}
