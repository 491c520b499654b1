package groups

import (
	"fmt"

	"mstream/device"
	"mstream/device/cuda"
)

// On a GPU a group's streams stage copies from and to pageable memory
// (values a host kernel made for a GPU kernel) through pinned buffers of a
// cuda.HostAllocator: the device's shared one, or the group's own with
// TF_PER_STREAM_HOST_ALLOCATOR. Feeds and fetches stage through HostAlloc,
// the bfc over the device's pinned memory, as on the host.

// newStream creates a stream of g in its context, with g's staging
// allocator on a GPU.
func (s *Set) newStream(g *Group) (device.Stream, error) {
	d, ok := g.Device.(*cuda.Device)
	if !ok {
		return g.Device.NewStream(g.Context)
	}
	if s.cfg.PerGroupHostAlloc && g.Staging == nil {
		g.Staging = d.NewHostAllocator(fmt.Sprintf("%s_group%d_pinned_staging", shortName(d, g.DeviceIndex), g.Index), s.cfg.HostMemLimit)
		s.staging = append(s.staging, g.Staging)
	}
	return d.NewStreamStaged(g.Context, g.Staging)
}
