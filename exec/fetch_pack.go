package exec

import (
	"mstream/device"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// A Run's fetches leave the device in one copy where its compute stream
// can pack (device.Packer, a GPU): the fetched device values, which sit
// wherever their kernels put them, are gathered by one kernel launch per
// device.MaxPack of them into one block of the group's allocator, and
// the block is copied into one pinned staging block, each fetch a view of
// it. On the H100 (TestFetchCopyCost, 64-byte blocks) a copy each cost
// the host 2.5, 9.9-10.8 and 36-42 us for 1, 4 and 16 blocks, the pack
// and one copy 7.2-8.7 us whatever the count: the pack pays from packMin
// fetches on. One copy of blocks already side by side cost 2.3-2.7 us,
// which placing the fetched outputs together would give without the
// pack, but a kernel allocates its outputs (Context.Allocate) without
// knowing which of them a Run fetches, and their sizes are known only
// then. The block is held to the step's end, as the fetched buffers are.
// A step that cannot get the block copies fetch by fetch.

// packMin is the fewest device fetches a step packs: at three the pack
// and the copies cost the host about the same, and the pack adds a
// kernel's time on the device.
const packMin = 4

// packFetches copies the step's device fetches of non-zero size (n of
// them) out with one copy on out (the compute stream or, after it, the
// D2H stream) through a packed block; ok false, with nothing enqueued,
// sends the caller fetch by fetch.
func (s *gstep) packFetches(out device.Stream, n int) (ok bool, err error) {
	pk, can := s.c.(device.Packer)
	if !can || n < packMin {
		return false, nil
	}
	p, g := s.plan, s.g
	// Each fetch at a 16-byte aligned offset (the pack kernel copies
	// 16 bytes at a time where both ends are aligned).
	size := uint64(0)
	for _, r := range p.fetches {
		if v := s.value(r); v.dev != nil && v.host == nil && len(v.dev.Buf) > 0 {
			size = (size+15)&^15 + uint64(len(v.dev.Buf))
		}
	}
	addr, aerr := g.Alloc.Allocate(size, s.allocStream())
	if aerr != nil {
		return false, nil
	}
	dt := s.ar.tensor()
	*dt = tensor.Tensor{DType: tensor.Uint8, Shape: s.ar.shape(tensor.Shape{int64(size)}), Buf: hostmem.DeviceBytes(addr, int(size))}
	b := s.ar.buffer()
	*b = buffer{addr: addr, alloc: g.Alloc, refs: 1 << 30} // held to the step's end
	b.use(s.cix)
	s.track(dt, b)
	haddr, herr := g.HostAlloc.Allocate(size, nil)
	if herr != nil {
		return false, nil // the block goes back at the step's end
	}
	s.pinned = append(s.pinned, haddr)
	hbuf := g.Device.HostMemory().Bytes(haddr, size)

	if err := s.delay(s.c); err != nil {
		return false, err
	}
	var bb [device.MaxPack]device.PackBlock
	blocks := bb[:0]
	off := uint64(0)
	for k, r := range p.fetches {
		v := s.value(r)
		if v.dev == nil || v.host != nil || len(v.dev.Buf) == 0 {
			continue
		}
		t := v.dev
		off = (off + 15) &^ 15
		sz := uint64(len(t.Buf))
		blocks = append(blocks, device.PackBlock{Dst: addr + off, Src: hostmem.DeviceAddr(t.Buf), Size: sz})
		s.staged[k] = staged{buf: hbuf[off : off+sz], dt: t.DType, shape: t.Shape.Clone()}
		off += sz
		if len(blocks) == device.MaxPack {
			if err := pk.Pack(blocks); err != nil {
				return false, status.Wrap(err, "fetches: packing on %s", g.Device.Name())
			}
			blocks = blocks[:0]
		}
	}
	if err := pk.Pack(blocks); err != nil {
		return false, status.Wrap(err, "fetches: packing on %s", g.Device.Name())
	}
	s.dirty = true
	if err := s.order(out, s.c); err != nil {
		return false, status.Wrap(err, "fetches: ordering the D2H stream after compute")
	}
	s.outD = out == s.d && s.d != s.c
	if err := s.delay(out); err != nil {
		return false, err
	}
	if err := out.CopyD2H(hbuf, addr); err != nil {
		return false, status.Wrap(err, "fetches: one copy of %d bytes from %s", size, g.Device.Name())
	}
	return true, nil
}
