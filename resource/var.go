package resource

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"mstream/status"
	"mstream/tensor"
)

// VarKind is TF's type name of a variable (tensorflow::Var), the kind of
// both resource and ref variables here.
const VarKind = "N10tensorflow3VarE"

// LegacyVarKind is TF's type name of a ref variable's resource
// (tensorflow::LegacyVar): a VariableV2 and a VarHandleOp of one name are
// two variables.
const LegacyVarKind = "N10tensorflow9LegacyVarE"

// Var is a variable: an immutable value published by pointer (see the
// package doc's consistency model).
type Var struct {
	// DType is the variable's dtype, fixed when it is made.
	DType tensor.DType
	// Name names it in errors (the handle's or the node's name).
	Name   string
	legacy bool
	// seq orders the locks of UpdateAll.
	seq uint64
	mu  sync.Mutex
	val atomic.Pointer[tensor.Tensor]
	// dev is the value when it lives in a device's memory (val is nil
	// then); onDev says so without the mutex. Both change under mu.
	dev   *DeviceValue
	onDev atomic.Bool
}

// NewVar returns an uninitialised variable.
func NewVar(dt tensor.DType, name string) *Var {
	return &Var{DType: dt, Name: name, seq: varSeq.Add(1)}
}

// varSeq numbers variables as they are made: multi-variable writers lock
// in this order (TF sorts its mutexes by address for the same reason).
var varSeq atomic.Uint64

// NewLegacyVar returns an uninitialised ref variable.
func NewLegacyVar(dt tensor.DType, name string) *Var {
	return &Var{DType: dt, Name: name, legacy: true, seq: varSeq.Add(1)}
}

// Kind implements Resource.
func (v *Var) Kind() string {
	if v.legacy {
		return LegacyVarKind
	}
	return VarKind
}

// Value is the current value in host memory, nil while the variable is
// uninitialised (or when copying a device value out failed: Read says
// why). The caller must not modify it.
func (v *Var) Value() *tensor.Tensor {
	t, _ := v.Read()
	return t
}

// Read is the current value in host memory, nil while the variable is
// uninitialised. A value in device memory is copied out after its last
// write, with the writers excluded meanwhile.
func (v *Var) Read() (*tensor.Tensor, error) {
	if t := v.val.Load(); t != nil || !v.onDev.Load() {
		return t, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.hostLocked()
}

// Initialized reports whether the variable holds a value, wherever it is.
func (v *Var) Initialized() bool { return v.val.Load() != nil || v.onDev.Load() }

// hostLocked is the value in host memory (a copy of a device value).
func (v *Var) hostLocked() (*tensor.Tensor, error) {
	if v.dev == nil {
		return v.val.Load(), nil
	}
	t, err := v.dev.copyOut()
	if err != nil {
		return nil, status.Wrap(err, "variable %s", v.Name)
	}
	return t, nil
}

// publishLocked makes nv (host memory) the value, releasing a device
// value once its uses have completed.
func (v *Var) publishLocked(nv *tensor.Tensor) {
	if v.dev != nil {
		v.dev.release()
		v.dev = nil
		v.onDev.Store(false)
	}
	v.val.Store(nv)
}

// Update runs f on the current value (nil when uninitialised; a device
// value copied to the host) with every other writer excluded and
// publishes what it returns. f must return a new tensor that nobody else
// writes (the value it was given is still being read); returning nil, nil
// leaves the value unchanged.
func (v *Var) Update(f func(old *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, err := v.hostLocked()
	if err != nil {
		return nil, err
	}
	nv, err := f(old)
	if err != nil {
		return nil, err
	}
	if nv == nil {
		return old, nil
	}
	v.publishLocked(nv)
	return nv, nil
}

// Reset makes the variable uninitialised again.
func (v *Var) Reset() {
	v.mu.Lock()
	v.publishLocked(nil)
	v.mu.Unlock()
}

// OnDevice runs f with every other reader and writer excluded on the
// variable's value: cur when it lives in a device's memory, else host
// (nil when uninitialised). f enqueues its work, ordered by cur's
// Before/After methods, and returns the device value to keep: cur itself,
// a new one (cur, if any, is released once its uses have completed), or
// nil to leave the value as it was.
func (v *Var) OnDevice(f func(cur *DeviceValue, host *tensor.Tensor) (*DeviceValue, error)) error {
	return OnDeviceAll([]*Var{v}, func(cur []*DeviceValue, host []*tensor.Tensor) ([]*DeviceValue, error) {
		d, err := f(cur[0], host[0])
		return []*DeviceValue{d}, err
	})
}

// OnDeviceAll is OnDevice over several variables at once (an optimizer's
// variable and accumulators), locked as UpdateAll locks them. A variable
// named twice gets the last of its results. The values f returns are kept
// even when it fails (a value it moved to the device before the failure).
func OnDeviceAll(vs []*Var, f func(cur []*DeviceValue, host []*tensor.Tensor) ([]*DeviceValue, error)) error {
	var buf [8]*Var
	defer unlockAll(lockAll(vs, buf[:0]))
	cur := make([]*DeviceValue, len(vs))
	host := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		cur[i], host[i] = v.dev, v.val.Load()
	}
	nd, err := f(cur, host)
	for i, v := range vs {
		if i >= len(nd) {
			break
		}
		d := nd[i]
		if d == nil || d == v.dev {
			continue
		}
		if v.dev != nil {
			v.dev.release()
		}
		v.dev = d
		v.val.Store(nil)
		v.onDev.Store(true)
	}
	return err
}

// lockAll locks vs in creation order, each once, and returns them so
// (in buf's storage, when it has room) for unlockAll. Every variable
// read and update of a step calls it: it allocates nothing for a few
// variables (sort.Slice and a closure were ~40 us a step of the H100's
// four-lane training step).
func lockAll(vs []*Var, buf []*Var) []*Var {
	order := append(buf[:0], vs...)
	slices.SortFunc(order, func(a, b *Var) int { return cmp.Compare(a.seq, b.seq) })
	order = slices.Compact(order)
	for _, v := range order {
		v.mu.Lock()
	}
	return order
}

func unlockAll(locked []*Var) {
	for _, v := range locked {
		v.mu.Unlock()
	}
}

// UpdateAll is Update over several variables at once, as an optimizer
// writes a variable and its accumulators: f sees every current value (nil
// when uninitialised) with all of them locked, in creation order so that
// two such writers never deadlock, and its results are published together
// before any lock is released. A variable named twice is locked once and
// gets the last of its results; a nil result leaves that value unchanged.
func UpdateAll(vs []*Var, f func(old []*tensor.Tensor) ([]*tensor.Tensor, error)) ([]*tensor.Tensor, error) {
	var buf [8]*Var
	defer unlockAll(lockAll(vs, buf[:0]))
	old := make([]*tensor.Tensor, len(vs))
	for i, v := range vs {
		t, err := v.hostLocked()
		if err != nil {
			return nil, err
		}
		old[i] = t
	}
	nv, err := f(old)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		if nv[i] != nil {
			v.publishLocked(nv[i])
		} else {
			nv[i] = old[i]
		}
	}
	return nv, nil
}
