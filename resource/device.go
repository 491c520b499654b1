package resource

import (
	"mstream/device"
	"mstream/hostmem"
	"mstream/status"
	"mstream/tensor"
)

// DeviceValue is a variable's value in one device's memory (see the
// package doc's consistency model): one buffer that the device's kernels
// read and update in place, each use ordered after the last write, and
// each write after every use since, by events on the streams involved.
// Every field and method is used with the variable's mutex held (the
// callbacks of Var.OnDevice and OnDeviceAll).
type DeviceValue struct {
	// T is the value: a device tensor (its Buf stands for device memory).
	T *tensor.Tensor
	// Owner identifies the memory T lives in (comparable: the device's
	// context); a kernel of another device moves the value first.
	Owner any
	// Free returns T's memory. It is called once every use has completed.
	Free func()

	last   device.Event  // the last write (nil: none pending)
	lastSt device.Stream // the stream it was recorded on
	reads  []device.Event
}

// NewDeviceValue is the value t, written by work already enqueued on st:
// its readers will follow that work.
func NewDeviceValue(t *tensor.Tensor, owner any, free func(), st device.Stream) (*DeviceValue, error) {
	d := &DeviceValue{T: t, Owner: owner, Free: free}
	if err := d.AfterWrite(st); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

// pooled records a pooled event on st; nil when st has no pool, after
// waiting for st instead (its work is then complete).
func pooled(st device.Stream) (device.Event, error) {
	p, ok := st.(device.EventPool)
	if !ok {
		return nil, st.Synchronize()
	}
	e, err := p.PooledEvent()
	if err != nil {
		return nil, err
	}
	if err := st.Record(e); err != nil {
		e.Release()
		return nil, err
	}
	return e, nil
}

func drop(e device.Event) {
	if p, ok := e.(device.PooledEvent); ok {
		p.Release()
	}
}

// BeforeRead orders the work enqueued next on st after the last write.
func (d *DeviceValue) BeforeRead(st device.Stream) error {
	if d.last == nil || d.lastSt == st {
		return nil
	}
	return st.Wait(d.last)
}

// AfterRead notes that work enqueued so far on st reads T: the next
// write waits for it. Reads that have completed are forgotten, so a
// variable only ever read keeps a short list.
func (d *DeviceValue) AfterRead(st device.Stream) error {
	if len(d.reads) >= 8 {
		kept := d.reads[:0]
		for _, e := range d.reads {
			if e.Query() {
				drop(e)
				continue
			}
			kept = append(kept, e)
		}
		clear(d.reads[len(kept):])
		d.reads = kept
	}
	e, err := pooled(st)
	if err != nil || e == nil {
		return err
	}
	d.reads = append(d.reads, e)
	return nil
}

// BeforeWrite orders the work enqueued next on st after the last write
// and every read since.
func (d *DeviceValue) BeforeWrite(st device.Stream) error {
	if err := d.BeforeRead(st); err != nil {
		return err
	}
	for _, e := range d.reads {
		if err := st.Wait(e); err != nil {
			return err
		}
	}
	return nil
}

// AfterWrite notes that work enqueued so far on st writes T: later
// readers and writers follow it.
func (d *DeviceValue) AfterWrite(st device.Stream) error {
	e, err := pooled(st)
	if err != nil {
		return err
	}
	// A wait already enqueued keeps what it waited for: the old events
	// can go back to their pools.
	if d.last != nil {
		drop(d.last)
	}
	for _, r := range d.reads {
		drop(r)
	}
	d.last, d.lastSt, d.reads = e, st, d.reads[:0]
	return nil
}

// settle waits on the host for every use of T enqueued so far.
func (d *DeviceValue) settle() error {
	if d.last != nil {
		if err := d.last.Synchronize(); err != nil {
			return err
		}
	}
	for _, e := range d.reads {
		if err := e.Synchronize(); err != nil {
			return err
		}
	}
	return nil
}

// copyOut is T in a new host tensor, after the last write.
func (d *DeviceValue) copyOut() (*tensor.Tensor, error) {
	if err := d.settle(); err != nil {
		return nil, status.Wrap(err, "waiting for the variable's last write")
	}
	t := tensor.New(d.T.DType, d.T.Shape.Clone()) //mstream:bounded the variable's own size, held on the device already
	if len(t.Buf) == 0 {
		return t, nil
	}
	if err := d.lastSt.CopyD2H(t.Buf, hostmem.DeviceAddr(d.T.Buf)); err != nil {
		return nil, status.Wrap(err, "copying the variable to the host")
	}
	if err := d.lastSt.Synchronize(); err != nil {
		return nil, status.Wrap(err, "copying the variable to the host")
	}
	return t, nil
}

// release frees T once its uses have completed (at once when waiting
// fails: the device is then lost anyway).
func (d *DeviceValue) release() {
	d.settle()
	if d.last != nil {
		drop(d.last)
	}
	for _, r := range d.reads {
		drop(r)
	}
	d.last, d.reads = nil, nil
	if d.Free != nil {
		d.Free()
		d.Free = nil
	}
}

// CopyOut is the value in host memory, after its last write (the host
// side's read of a device value: SaveV2, a host kernel, a move to
// another device).
func (d *DeviceValue) CopyOut() (*tensor.Tensor, error) { return d.copyOut() }
