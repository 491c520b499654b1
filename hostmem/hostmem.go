package hostmem

import "unsafe"

// Align is the alignment of every buffer returned by Alloc.
const Align = 64

// Alloc returns a zeroed buffer of n bytes aligned to Align.
func Alloc(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	words := make([]uint64, (n+Align+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & (Align - 1))
	return b[off : off+n : off+n]
}

// View reinterprets b as a slice of T. len(b) must be a multiple of
// sizeof(T) and b aligned for T (true for buffers from Alloc).
func View[T any](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) == 0 || sz == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/sz)
}

// Bytes reinterprets a typed slice as its bytes.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// Addr returns the address of b's first byte, for alignment checks and
// buffer identity in tests and stats.
func Addr(b []byte) uintptr {
	if cap(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// DeviceBytes is a []byte of n bytes at device address addr, so a device
// tensor can be a tensor.Tensor whose Buf is device memory, as TF's GPU
// tensors are. The slice must never be read or written by host code (that
// faults): only its address and length are used, through DeviceAddr. A
// zero-length or zero-address slice has no address.
func DeviceBytes(addr uint64, n int) []byte {
	if n == 0 || addr == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(addrPtr(addr)), n)
}

// DeviceAddr is the address of b's first element (device or host), 0
// when b is empty.
func DeviceAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// addrPtr turns an address into a pointer without vet's uintptr-to-pointer
// check: device addresses are not Go memory and the GC never follows them.
func addrPtr(addr uint64) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
