package exec

import (
	"mstream/bfc"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// A Run's feeds go to the device in one copy: the feeds GPU kernels read
// are laid out in one device block and one pinned staging block (each
// feed at a MinAlloc-aligned offset, as a chunk of its own would be), so
// the step makes one allocation on each side and one host-to-device copy
// instead of one of each per feed (a DLRM request has 27 feeds; each copy
// costs the driver a call and the copy engine a transfer). The block is
// one tracked buffer viewed by every feed: each feed's reads count
// against it and it is freed after the last. A step with fewer than two
// such feeds, or whose block does not fit, copies feed by feed, so an
// allocation failure still names the feed.

// feedLayout gives each device feed's offset in the block (-1 for feeds
// no GPU kernel reads) and the block's size; n counts the device feeds.
func feedLayout(feedDev []bool, feeds []gval) (offs []uint64, total uint64, n int) {
	offs = make([]uint64, len(feedDev))
	for k, f := range feedDev {
		offs[k] = ^uint64(0)
		if !f {
			continue
		}
		n++
		offs[k] = total
		// An empty feed still gets a slot, so its view has an address
		// of its own (the tracker keys buffers by address).
		size := max(uint64(len(feeds[k].host.Buf)), 1)
		total += (size + bfc.MinAlloc - 1) / bfc.MinAlloc * bfc.MinAlloc
	}
	return offs, total, n
}

// packFeeds allocates the step's feed block and its pinned staging,
// fills the staging and gives every device feed its view; ok false (with
// nothing allocated) sends the caller feed by feed.
func (s *gstep) packFeeds() (addr uint64, hbuf []byte, ok bool) {
	p, g := s.plan, s.g
	offs, total, n := feedLayout(p.feedDev, s.feeds)
	if n < 2 {
		return 0, nil, false
	}
	addr, err := g.Alloc.Allocate(total, s.allocStream())
	if err != nil {
		return 0, nil, false
	}
	haddr, err := g.HostAlloc.Allocate(total, nil)
	if err != nil {
		g.Alloc.Free(addr)
		return 0, nil, false
	}
	s.pinned = append(s.pinned, haddr)
	hbuf = g.Device.HostMemory().Bytes(haddr, total)
	views := s.ar.tensors(n)[:0]
	var refs int32
	for k, off := range offs {
		if !p.feedDev[k] {
			continue
		}
		t := s.feeds[k].host
		size := len(t.Buf)
		copy(hbuf[off:], t.Buf)
		dt := s.ar.tensor()
		*dt = tensor.Tensor{DType: t.DType, Shape: s.ar.shape(t.Shape), Buf: hostmem.DeviceBytes(addr+off, max(size, 1))[:size]}
		s.feeds[k].dev = dt
		views = append(views, dt)
		refs += p.feedUses[k]
	}
	if s.keep {
		refs = 1 << 30
	}
	if s.capt != nil {
		s.capt.own(g.Alloc, addr)
	} else {
		s.mem.addShared(views, &buffer{addr: addr, alloc: g.Alloc, refs: refs, users: []int{s.cix}})
	}
	return addr, hbuf, true
}

// packFeeds lays out a capture's device feeds in one device block and
// one pinned block, both the instance's: feedIn[k] is feed k's part of
// the staging, which a replay fills. With fewer than two device feeds it
// leaves the capture feed by feed; a failed allocation is the capture's
// error (the key then runs node by node).
func (gi *graphInst) packFeeds(s *gstep) error {
	p, g := s.plan, s.g
	offs, total, n := feedLayout(p.feedDev, s.feeds)
	if n < 2 {
		return nil
	}
	addr, err := g.Alloc.Allocate(total, s.allocStream())
	if err != nil {
		return status.Errorf(status.CodeOf(err), "%d feeds in one block of %d bytes: %v", n, total, err)
	}
	gi.own(g.Alloc, addr)
	all, err := gi.pinned(g, total)
	if err != nil {
		return status.Errorf(status.CodeOf(err), "%d feeds: pinned staging of %d bytes: %v", n, total, err)
	}
	gi.feedAll, gi.feedAddr = all, addr
	for k, off := range offs {
		if !p.feedDev[k] {
			continue
		}
		t := s.feeds[k].host
		size := len(t.Buf)
		s.feeds[k].dev = &tensor.Tensor{DType: t.DType, Shape: t.Shape.Clone(), Buf: hostmem.DeviceBytes(addr+off, max(size, 1))[:size]}
		if size > 0 {
			gi.feedIn[k] = all[off : off+uint64(size)]
		}
	}
	return nil
}
