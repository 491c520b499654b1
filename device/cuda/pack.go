package cuda

import (
	"mstream/device"
	"mstream/status"
)

// packProgram gathers device blocks, one block row of the grid per block
// (device.Packer): a Run's fetches packed into one buffer for one copy
// to the host. The blocks come by value, 16 (dst, src, size) triples.
var packProgram = &Program{Name: "pack.cu", Source: `
struct ms_pack_blocks { unsigned long long dst[16], src[16], size[16]; };
struct alignas(16) ms_pack16 { unsigned long long lo, hi; };

// Block row i copies block i: 16 bytes at a time where both ends are
// 16-byte aligned (allocator chunks are), the tail and unaligned blocks
// byte by byte.
extern "C" __global__ void ms_pack(ms_pack_blocks b, int n) {
	int i = blockIdx.y;
	if (i >= n) return;
	unsigned long long src = b.src[i], dst = b.dst[i], size = b.size[i];
	unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	unsigned long long head = 0;
	if (((src | dst) & 15) == 0) {
		head = size / 16;
		const ms_pack16 *s = (const ms_pack16 *)src;
		ms_pack16 *d = (ms_pack16 *)dst;
		for (unsigned long long k = t; k < head; k += step)
			d[k] = s[k];
		head *= 16;
	}
	const unsigned char *s = (const unsigned char *)src;
	unsigned char *d = (unsigned char *)dst;
	for (unsigned long long k = head + t; k < size; k += step)
		d[k] = s[k];
}
`}

// Pack implements device.Packer: one launch of ms_pack over up to
// device.MaxPack blocks.
func (s *Stream) Pack(blocks []device.PackBlock) error {
	if len(blocks) == 0 {
		return nil
	}
	if len(blocks) > device.MaxPack {
		return status.Errorf(status.Internal, "pack: %d blocks, at most %d a launch", len(blocks), device.MaxPack)
	}
	m, err := s.ctx.Module(packProgram)
	if err != nil {
		return status.Wrap(err, "pack kernel")
	}
	f, err := m.Function("ms_pack")
	if err != nil {
		return err
	}
	var v [3 * device.MaxPack]int64
	var most uint64
	for i, b := range blocks {
		v[i], v[device.MaxPack+i], v[2*device.MaxPack+i] = int64(b.Dst), int64(b.Src), int64(b.Size)
		most = max(most, b.Size)
	}
	var a Args
	a.I64s(v[:]...).I32(int32(len(blocks)))
	gx := min((most/16+255)/256, 64) // a thread per 16 bytes
	return s.Launch(f, Dim3{uint32(max(gx, 1)), uint32(len(blocks)), 1}, D1(256), 0, &a)
}

var _ device.Packer = (*Stream)(nil)
