package kernels

import (
	"mstream/resource"
	"mstream/status"
	"mstream/tensor"
)

// Variables in device memory (resource.DeviceValue): the device-neutral
// half of a device kernel that reads or writes a variable. It moves the
// value into the kernel's device memory when it lives elsewhere (the host,
// after a host kernel wrote it, or another device), orders the kernel's
// work after the value's last write (a read) or after its last write and
// every read since (a write), and notes the kernel's work for the next
// ones. The kernel only enqueues its compute on the value's tensor.

// Persist is memory of a kernel's device that outlives a step.
type Persist interface {
	// Owner identifies the device's memory: equal for every stream group
	// and context of one device.
	Owner() any
	// Keep allocates a tensor from the device's allocator (in its
	// stats) that no step frees; free returns it, once every use
	// enqueued on any stream has completed.
	Keep(dt tensor.DType, shape tensor.Shape) (t *tensor.Tensor, free func(), err error)
}

// DeviceCopier is what the state helpers need of a device kernel besides
// Context.Stream and Context.Persist: copies on its stream (a GPU kernel
// routes them through its own launcher, which a test may stand in for).
type DeviceCopier interface {
	// CopyIn copies host bytes to a device tensor on the kernel's stream.
	CopyIn(dst *tensor.Tensor, src []byte) error
	// Copy copies a device tensor's bytes to another of the same size on
	// the kernel's stream.
	Copy(dst, src *tensor.Tensor) error
}

// VarsOnDevice runs f on the device values of vs (nil for an
// uninitialised variable, which f must report), with every other reader
// and writer of them excluded, ordered as a write when write is set, else
// as a read. f enqueues its work on ctx.Stream and returns; its error is
// returned after the values were kept on the device.
func VarsOnDevice(ctx *Context, cp DeviceCopier, vs []*resource.Var, write bool, f func(vals []*tensor.Tensor) error) error {
	if ctx.Persist == nil || ctx.Stream == nil {
		return ctx.Errorf(status.FailedPrecondition, "device kernel called without device memory that outlives the step")
	}
	st, owner := ctx.Stream, ctx.Persist.Owner()
	var ferr error
	err := resource.OnDeviceAll(vs, func(cur []*resource.DeviceValue, host []*tensor.Tensor) ([]*resource.DeviceValue, error) {
		out := make([]*resource.DeviceValue, len(vs))
		vals := make([]*tensor.Tensor, len(vs))
		seen := map[*resource.Var]*resource.DeviceValue{}
	next:
		for i, v := range vs {
			if d, ok := seen[v]; ok {
				out[i] = d
				if d != nil {
					vals[i] = d.T
				}
				continue next
			}
			d, h := cur[i], host[i]
			if d != nil && d.Owner != owner {
				// Another device's value: through the host.
				t, err := d.CopyOut()
				if err != nil {
					return out, ctx.Errorf(status.CodeOf(err), "%v", err)
				}
				d, h = nil, t
			}
			if d == nil && h != nil {
				nd, err := upload(ctx, cp, h)
				if err != nil {
					return out, err
				}
				d = nd
			}
			seen[v], out[i] = d, d
			if d == nil {
				continue
			}
			vals[i] = d.T
			var err error
			if write {
				err = d.BeforeWrite(st)
			} else {
				err = d.BeforeRead(st)
			}
			if err != nil {
				return out, ctx.Errorf(status.CodeOf(err), "ordering after variable %s: %v", v.Name, err)
			}
		}
		ferr = f(vals)
		done := map[*resource.DeviceValue]bool{}
		for i, d := range out {
			if d == nil || done[d] {
				continue
			}
			done[d] = true
			var err error
			if write {
				err = d.AfterWrite(st)
			} else {
				err = d.AfterRead(st)
			}
			if err != nil {
				return out, ctx.Errorf(status.CodeOf(err), "variable %s: %v", vs[i].Name, err)
			}
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	return ferr
}

// upload is host value h in new device memory.
func upload(ctx *Context, cp DeviceCopier, h *tensor.Tensor) (*resource.DeviceValue, error) {
	t, free, err := ctx.Persist.Keep(h.DType, h.Shape)
	if err != nil {
		return nil, ctx.Errorf(status.CodeOf(err), "variable of %v%v: %v", h.DType, h.Shape, err)
	}
	if len(h.Buf) > 0 {
		if err := cp.CopyIn(t, h.Buf); err != nil {
			free()
			return nil, err
		}
	}
	d, err := resource.NewDeviceValue(t, ctx.Persist.Owner(), free, ctx.Stream)
	if err != nil {
		free()
		return nil, ctx.Errorf(status.CodeOf(err), "%v", err)
	}
	return d, nil
}

// AssignOnDevice makes value (a device tensor of the kernel's step) the
// variable's value: copied in place when the variable already holds a
// value of its shape on this device, else into new device memory (the
// old value is released once its uses have completed). check sees the
// old value's dtype and shape (nil when uninitialised) first.
func AssignOnDevice(ctx *Context, cp DeviceCopier, v *resource.Var, value *tensor.Tensor, check func(old *tensor.Tensor) error) error {
	if ctx.Persist == nil || ctx.Stream == nil {
		return ctx.Errorf(status.FailedPrecondition, "device kernel called without device memory that outlives the step")
	}
	st, owner := ctx.Stream, ctx.Persist.Owner()
	return v.OnDevice(func(cur *resource.DeviceValue, host *tensor.Tensor) (*resource.DeviceValue, error) {
		old := host
		if cur != nil {
			old = cur.T
		}
		if err := check(old); err != nil {
			return nil, err
		}
		if cur != nil && cur.Owner == owner && cur.T.DType == value.DType && cur.T.Shape.Equal(value.Shape) {
			if err := cur.BeforeWrite(st); err != nil {
				return nil, ctx.Errorf(status.CodeOf(err), "ordering after variable %s: %v", v.Name, err)
			}
			if err := cp.Copy(cur.T, value); err != nil {
				return nil, err
			}
			if err := cur.AfterWrite(st); err != nil {
				return nil, ctx.Errorf(status.CodeOf(err), "variable %s: %v", v.Name, err)
			}
			return cur, nil
		}
		t, free, err := ctx.Persist.Keep(value.DType, value.Shape)
		if err != nil {
			return nil, ctx.Errorf(status.CodeOf(err), "variable %s: %v%v: %v", v.Name, value.DType, value.Shape, err)
		}
		if err := cp.Copy(t, value); err != nil {
			free()
			return nil, err
		}
		d, err := resource.NewDeviceValue(t, owner, free, st)
		if err != nil {
			free()
			return nil, ctx.Errorf(status.CodeOf(err), "variable %s: %v", v.Name, err)
		}
		return d, nil
	})
}
