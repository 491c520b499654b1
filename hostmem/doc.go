// Package hostmem is the one place outside capi/ and device/cuda/ that uses
// unsafe: it allocates aligned host buffers and views them as typed slices,
// and dresses device addresses as byte slices (DeviceBytes, DeviceAddr) so
// a device tensor is a tensor.Tensor like any other.
//
// Invariant: every buffer from Alloc starts on a 64-byte boundary, so that
// any dtype view (and SIMD loads in C kernels) is aligned, and a view never
// outlives the []byte it was made from (it shares its backing array).
//
// Buffers are ordinary Go memory (zeroed by Alloc, collected by the garbage
// collector), so they may be kept only through the slices that view them; Addr
// gives identity and alignment, never a pointer to hold.
//
// AdviseHuge asks for transparent huge pages under a long-lived buffer
// read at random (the host allocator's regions from 8 MiB, which hold the
// constants: a lookup in a 100k-row embedding table otherwise costs a TLB
// miss and a page walk). The heap hands out memory it has cleared page by
// page before, so AdviseHuge first gives the buffer's pages back
// (MADV_DONTNEED): it is for a buffer that is zero and holds nothing yet.
//
// Since a Run's tensors are collected, the collector's pace is part of a
// Run's cost: ReserveGCHeadroom (MSTREAM_GC_HEADROOM_MB, made by the first
// session) keeps one untouched pointer-free allocation alive so that the
// heap goal never falls below it, and a model with little live data does
// not collect every few Runs. It is process-wide and only grows; a
// collector the user tuned (GOGC, GOMEMLIMIT) is left alone.
//
// Limit is the one check that every allocation sized by a graph, a feed, an
// attr or a C caller passes before memory is asked for: Go's "fatal error:
// out of memory" cannot be recovered and would end the host process, so a
// size beyond the limit must become RESOURCE_EXHAUSTED first. Its default is
// the machine's physical memory (Physical, from sysinfo); a session hands
// kernels the device allocator's limit (kernels.Context.Limit).
// TestAllocationsAreChecked, a go/ast check over the packages that allocate
// from data (kernels, tensor, graph, capi, checkpoint, session, pbparse),
// flags a make or tensor.New sized by an element count, a dimension or a
// product that no Limit check precedes. It sees syntax only: a size held in
// a plain variable (make([]byte, n)) passes it, so it catches the common
// forms, not every one.
package hostmem
