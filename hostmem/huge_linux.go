package hostmem

import "syscall"

// hugePage is the size of a transparent huge page on x86-64 and arm64
// (4 KiB base pages).
const hugePage = 2 << 20

// AdviseHuge asks the kernel to back the whole 2 MiB pages inside b with
// transparent huge pages (madvise MADV_HUGEPAGE), for long-lived regions
// read at random, such as the allocator regions that hold embedding
// tables: with 4 KiB pages each row a gather reads from a 100k-row table
// costs a TLB miss and a page walk.
//
// b must be zero (as Alloc returns it) and hold nothing yet: its pages are
// given back first (MADV_DONTNEED, after which anonymous memory reads as
// zero), because the Go heap hands out memory it has used before and
// cleared page by page, and the kernel backs with huge pages only what is
// touched after the advice. It works where the system's THP mode is
// "always" or "madvise" (the kernel's default). It is advice: an error (an
// old kernel, THP off) leaves 4 KiB pages and is not reported. The advice
// stays on those pages of the Go heap after b is dropped, so memory the
// heap reuses there for other objects is backed 2 MiB at a time, and each
// advised buffer is a mapping of its own in the kernel's list.
func AdviseHuge(b []byte) {
	start := (Addr(b) + hugePage - 1) &^ (hugePage - 1)
	end := (Addr(b) + uintptr(len(b))) &^ (hugePage - 1)
	if cap(b) == 0 || end <= start {
		return
	}
	off := int(start - Addr(b))
	r := b[off : off+int(end-start)]
	if syscall.Madvise(r, syscall.MADV_HUGEPAGE) == nil {
		_ = syscall.Madvise(r, syscall.MADV_DONTNEED)
	}
}
