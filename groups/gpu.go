package groups

import (
	"fmt"

	"mstream/device"
)

// On a GPU a group's streams stage copies from and to pageable memory
// (values a host kernel made for a GPU kernel) through pinned buffers
// (device.StagedDevice): the device's shared staging, or the group's own
// with TF_PER_STREAM_HOST_ALLOCATOR. Feeds and fetches stage through
// HostAlloc, the bfc over the device's pinned memory, as on the host.

// newStream creates a stream of g in its context, with g's staging on a
// device that stages copies.
func (s *Set) newStream(g *Group) (device.Stream, error) {
	d, ok := g.Device.(device.StagedDevice)
	if !ok {
		return g.Device.NewStream(g.Context)
	}
	if s.cfg.PerGroupHostAlloc && g.Staging == nil {
		g.Staging = d.NewStaging(fmt.Sprintf("%s_group%d_pinned_staging", shortName(g.Device, g.DeviceIndex), g.Index), s.cfg.HostMemLimit)
		s.staging = append(s.staging, g.Staging)
	}
	return d.NewStreamStaged(g.Context, g.Staging)
}
